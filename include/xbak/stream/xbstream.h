// The xbstream container, byte-compatible with MariaDB 10.11's mbstream and
// `mariadb-backup --stream=xbstream`.
//
// A stream is a plain concatenation of chunks; chunks of different files may
// interleave, chunks of one file come in offset order. Each chunk:
//
//   magic "XBSTCK01"            8 bytes
//   flags                       1 byte   (0x01 = ignorable if the type is unknown)
//   type                        1 byte   ('P' payload, 'E' end of file)
//   path length                 u32 LE
//   path                        (relative, '/'-separated, no terminator)
//   -- payload chunks only --
//   payload length              u64 LE
//   payload offset in the file  u64 LE
//   CRC-32 of the payload       u32 LE   (zlib/ISO-3309 crc32, as mbstream's)
//   payload
//
// What mbstream 10.11 actually does (checked against the installed binary):
//  * it writes only 'P' and 'E' chunks, flags always 0, offsets contiguous from
//    0; every file ends with an 'E' chunk, and an empty file is a lone 'E'.
//  * on extraction it accepts only 'P' and 'E' (Percona's sparse 'S' chunks are
//    rejected), requires each payload at exactly the file's current end
//    ("out-of-order chunk" otherwise), refuses path lengths >= 512 (FN_REFLEN).
//  * it exits 0 on several failures (a "../" or absolute path, an existing
//    file, a missing 'E' chunk), which is why our Extractor is stricter.
//  * an unknown type with the ignorable flag is parsed with the payload layout
//    (and mbstream then writes it into the file as if it were 'P'); we parse
//    it the same way but skip it, which is what "ignorable" means.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/sparse.h"
#include "xbak/util/status.h"

namespace xbak::stream {

inline constexpr std::string_view kXbstreamMagic = "XBSTCK01";
inline constexpr uint8_t kXbstreamFlagIgnorable = 0x01;
// Fixed part of every header: magic, flags, type, path length.
inline constexpr size_t kXbstreamFixedHeaderLen = 8 + 1 + 1 + 4;
// Payload length, offset, CRC after the path of a payload chunk.
inline constexpr size_t kXbstreamPayloadHeaderLen = 8 + 8 + 4;
// Sanity limits for reading: a stream claiming more is corrupt, and refusing
// it keeps a damaged length field from allocating gigabytes.
inline constexpr size_t kXbstreamMaxPathLen = 4096;
inline constexpr size_t kXbstreamMaxPayloadLen = size_t{256} << 20;
// mbstream rejects a path of FN_REFLEN (512) bytes or more, so we never write
// one: a stream only we could read would defeat the point of the format.
inline constexpr size_t kXbstreamMaxWritePathLen = 511;
// Suffix of a file being extracted; it is renamed away when its 'E' chunk
// arrives, so a name without it always means "complete".
inline constexpr std::string_view kXbstreamPartialSuffix = ".xbpartial";

enum class ChunkType : uint8_t {
  kPayload = 'P',
  kEof = 'E',
  kUnknown = 0,  // an ignorable chunk of a type we do not know (raw byte in Chunk::raw_type)
};

struct Chunk {
  ChunkType type = ChunkType::kUnknown;
  uint8_t raw_type = 0;
  uint8_t flags = 0;
  std::string path;
  uint64_t offset = 0;           // payload position in the file ('P' only)
  uint32_t crc = 0;              // CRC-32 of the payload, verified ('P' only)
  std::vector<uint8_t> payload;  // reused between ChunkReader::Next calls
  uint64_t stream_offset = 0;    // where the chunk's header starts in the stream
};

// The CRC-32 every payload chunk carries (ISO 3309, zlib's crc32: what mbstream
// writes), over any length.
uint32_t XbstreamCrc32(const void* data, size_t n);

// Zeros to send as a payload (a tablespace's preallocated space, which the
// format cannot leave out: mbstream takes a file's chunks in order, each at
// the offset where the last ended) come from util::ZeroBlock; the CRC-32 of
// `n` of them (n <= util::kZeroBlockLen), computed once for a whole block.
uint32_t XbstreamZerosCrc32(size_t n);

// Header bytes of a payload chunk (everything before the payload).
std::string EncodePayloadChunkHeader(std::string_view path, uint64_t payload_len, uint64_t offset,
                                     uint32_t crc);
// A whole 'E' chunk.
std::string EncodeEofChunk(std::string_view path);

// Checks a path taken from a stream (or given to a sink) and returns its
// normal form: relative, '/'-separated, no "..", no empty component, no NUL,
// not ending in the partial suffix. "." components are dropped (mbstream -c
// ./x writes "./x"), so "./a/b" and "a/b" name the same file.
Result<std::string> NormalizeXbstreamPath(std::string_view path);

// Writes chunks onto an fd it does not own (stdout, a FIFO, a file). Thread-
// safe: each chunk (header and payload) goes out in one locked writev loop, so
// chunks from concurrent threads never interleave inside each other. The writer
// keeps no per-file state; the caller supplies offsets.
//
// SIGPIPE: the program is expected to ignore SIGPIPE process-wide (xbak's main
// does). Independently of that, the writer blocks SIGPIPE in the calling
// thread around its own writes and discards a SIGPIPE they raised, so a reader
// that goes away gives an error ("stream reader went away (broken pipe)"),
// never a killed process. After any write error the stream is broken (a chunk
// may be cut in half) and every later call fails with the same error.
class XbstreamWriter {
 public:
  explicit XbstreamWriter(int fd, std::string description = "xbstream");
  XbstreamWriter(const XbstreamWriter&) = delete;
  XbstreamWriter& operator=(const XbstreamWriter&) = delete;

  // Writes n bytes of `path` at `offset` as one chunk, or as several if n is
  // above kXbstreamMaxPayloadLen (readers would refuse a bigger one).
  Status WritePayload(std::string_view path, uint64_t offset, const void* data, size_t n);
  // One chunk whose CRC the caller knows (n <= kXbstreamMaxPayloadLen).
  Status WritePayload(std::string_view path, uint64_t offset, const void* data, size_t n, uint32_t crc);
  Status WriteEof(std::string_view path);

  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  const std::string& description() const { return description_; }
  int fd() const { return fd_; }

 private:
  Status CheckPath(std::string_view path) const;
  Status WriteChunk(const std::string& header, const void* payload, size_t n);

  const int fd_;
  const std::string description_;
  std::mutex mu_;
  Status broken_;  // guarded by mu_: the first write error, sticky
  std::atomic<uint64_t> bytes_written_{0};
};

// Reads chunks from an fd it does not own, tracking the byte offset so every
// error names where the damage is. All errors are kCorrupt (kIo for a failed
// read(2), kCancelled when the cancel flag was raised) and read
//   "corrupt xbstream at byte N (file P): <what>"
// where N is the offset of the chunk's first header byte, and <what> is one of
// "truncated chunk header", "truncated payload", "bad chunk magic",
// "payload checksum mismatch", "unknown chunk type", "path too long",
// "payload too large", followed by details.
class ChunkReader {
 public:
  explicit ChunkReader(int fd, std::string description = "xbstream");
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // While reading, polls the flag every 100 ms so that a reader blocked on a
  // silent FIFO can be stopped (used by ExtractStreams when another stream
  // failed). The flag must outlive the reader.
  void SetCancelFlag(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  // Reads the next chunk into *chunk (its buffers are reused). Returns false
  // at a clean end of stream, i.e. end of file exactly between two chunks.
  Result<bool> Next(Chunk* chunk);

  // Bytes consumed so far.
  uint64_t offset() const { return offset_; }

 private:
  // Copies up to n bytes into dst; short only at end of stream.
  Result<size_t> Read(void* dst, size_t n);
  // One read(2) (after polling, when a cancel flag is set); 0 = end of stream.
  Result<size_t> RawRead(void* dst, size_t cap);
  Status Corrupt(uint64_t at, const std::string& path, const std::string& what) const;
  // The steps of Next in stream order; `start` is the offset of the chunk's
  // first byte, which every error names. ReadFixedHeader returns false at a
  // clean end of stream and gives the path length it checked.
  Result<bool> ReadFixedHeader(uint64_t start, Chunk* chunk, uint32_t* path_len);
  Status ReadPath(uint64_t start, uint32_t path_len, Chunk* chunk);
  Status ReadPayload(uint64_t start, Chunk* chunk);  // 'P' and unknown types

  const int fd_;
  const std::string description_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::vector<uint8_t> buf_;
  size_t buf_pos_ = 0, buf_len_ = 0;
  uint64_t offset_ = 0;
};

// A transform of one file's bytes as it is extracted (--extract --decrypt):
// it gets the file's bytes from the stream in order, and hands its output to
// the writer it was made with.
class ExtractFilter {
 public:
  virtual ~ExtractFilter() = default;
  virtual Status Write(const uint8_t* data, size_t n) = 0;
  // The file's EOF chunk came: all output must have been handed on, or why not.
  virtual Status Finish() = 0;
};
using ExtractWriter = std::function<Status(const uint8_t* data, size_t n)>;
// For a file's (normalised) path in the stream: nullptr to extract it as it
// is, or a filter writing through `write`, its output named *out_rel.
using ExtractFilterFactory = std::function<Result<std::unique_ptr<ExtractFilter>>(
    const std::string& rel, std::string* out_rel, ExtractWriter write)>;

struct ExtractOptions {
  std::string target_dir;       // created if missing
  bool overwrite = false;       // replace files that already exist in the target
  bool fsync = true;            // fdatasync each file before its rename, fsync dirs at the end
  ExtractFilterFactory filter;  // none: every file as it is
  // Files (by path in the target) kept as .xbpartial until Finish() finds
  // every stream ended whole, then renamed: the file whose presence declares
  // a backup complete (its checkpoints), which with several streams one
  // reader may deliver while another is still writing, or is cut.
  std::function<bool(std::string_view rel)> hold_to_end;
};

// Applies chunks to a target directory. Thread-safe: several readers may feed
// one Extractor as long as each file's chunks all come from one of them.
//
// Security: every path goes through NormalizeXbstreamPath, and every component
// is opened relative to a directory fd of the target with O_NOFOLLOW, so a
// symlink planted in the target (or created concurrently) can never redirect a
// write outside it.
//
// Crash safety: a file is written as "<name>.xbpartial" and renamed to <name>
// when its 'E' chunk arrives; anything still partial is never mistaken for a
// complete file, and Finish() reports it.
class Extractor {
 public:
  static Result<std::unique_ptr<Extractor>> Open(const ExtractOptions& options);
  ~Extractor();
  Extractor(const Extractor&) = delete;
  Extractor& operator=(const Extractor&) = delete;

  Status Apply(const Chunk& chunk);
  // Call once after the last chunk: fails (kCorrupt) listing the files whose
  // 'E' chunk never came, which stay as *.xbpartial.
  Status Finish();

  size_t files_completed() const;

 private:
  struct OpenFile;
  Extractor(ExtractOptions options, util::UniqueFd root);
  Result<std::shared_ptr<OpenFile>> CreateFile(const std::string& rel);         // with mu_ held
  Result<std::shared_ptr<util::UniqueFd>> OpenDir(const std::string& rel_dir);  // with mu_ held
  Status Complete(OpenFile& f);
  Status WriteOut(OpenFile& f, const uint8_t* data, size_t n);  // with f.mu held

  const ExtractOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<util::UniqueFd> root_;
  std::map<std::string, std::shared_ptr<util::UniqueFd>> dirs_;  // guarded by mu_
  std::map<std::string, std::shared_ptr<OpenFile>> open_;        // guarded by mu_
  std::set<std::string> done_;                                   // guarded by mu_
  struct Held {
    std::shared_ptr<util::UniqueFd> dir;
    std::string name, shown;
  };
  std::vector<Held> held_;  // guarded by mu_: complete, not renamed yet (hold_to_end)
  Status Rename(int dir, const std::string& name, const std::string& shown);
};

// Extracts one stream (read to its end) into options.target_dir.
Status ExtractStream(int fd, const ExtractOptions& options);
// Extracts N streams concurrently, one reader thread per fd, into one target;
// the union of the streams is the backup and each file lives in exactly one of
// them. The first error stops the other readers (kCancelled) and is returned.
Status ExtractStreams(const std::vector<int>& fds, const ExtractOptions& options);

}  // namespace xbak::stream
