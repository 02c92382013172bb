// MySQL's redo log since 8.0.30 (format 6, the one 8.4 and 9.7 write), as far
// as a backup needs it: the #innodb_redo/#ib_redoN files, each with its own
// 2048-byte header (a header block, two checkpoint slots, an encryption
// block) and 512-byte data blocks that carry their number and a CRC-32C. The
// files do not wrap: the server creates the next one when a file is full and
// renames consumed ones to #ib_redoN_tmp spares for reuse, so the set of
// files, and what a file name holds, changes under a reader.
//
// Pure functions over bytes (no I/O, no state) except ListRedoFiles. Fields
// are big-endian. MariaDB's format (one circular ib_logfile0) is redo_log.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::innodb::mysql_redo {

inline constexpr uint32_t kFormat8030 = 6;  // 8.0.30 .. 9.7: the only format read here
inline constexpr size_t kBlockSize = 512;
inline constexpr size_t kFileHeaderSize = 2048;  // header, checkpoint 1, encryption, checkpoint 2
inline constexpr size_t kCheckpoint1 = 512;
inline constexpr size_t kEncryptionHeader = 1024;
inline constexpr size_t kCheckpoint2 = 1536;
inline constexpr size_t kBlockHeaderSize = 12;  // hdr_no, data_len, first_rec_group, epoch_no
inline constexpr size_t kBlockTrailerSize = 4;  // CRC-32C of [0, 508)
inline constexpr size_t kBlockDataSize = kBlockSize - kBlockHeaderSize - kBlockTrailerSize;
inline constexpr uint64_t kStartLsn = 8192;          // LSN of an instance's first block
inline constexpr uint32_t kNoChecksum = 0xDEADBEEF;  // innodb_log_checksums=OFF
inline constexpr const char* kDirName = "#innodb_redo";
inline constexpr const char* kFilePrefix = "#ib_redo";

// The header block of a redo file (offset 0).
struct FileHeader {
  uint32_t format = 0;
  uint32_t log_uuid = 0;   // the same in every file of one server's set
  uint64_t start_lsn = 0;  // LSN of file offset kFileHeaderSize; a multiple of 512
  std::string creator;     // "MySQL 9.7.4", "MySQL Clone", ...
  uint32_t flags = 0;
  bool redo_disabled() const { return (flags & 0x1) != 0; }  // ALTER INSTANCE DISABLE INNODB REDO_LOG
  bool crash_unsafe() const { return (flags & 0x2) != 0; }
  bool not_initialized() const { return (flags & 0x4) != 0; }
  bool full() const { return (flags & 0x8) != 0; }  // a newer file exists
};

// Parses a file's first block (kBlockSize bytes at `block`). `origin` names the
// file in errors: kCorrupt for a bad CRC or impossible values, kUnsupported
// for another format (named).
Result<FileHeader> ParseFileHeader(const uint8_t* block, const std::string& origin);
std::array<uint8_t, kBlockSize> EncodeFileHeader(const FileHeader& h);

// A checkpoint slot (offset kCheckpoint1 or kCheckpoint2): the LSN recovery
// starts from, or nullopt for a slot never written (zero) or torn (bad CRC).
std::optional<uint64_t> ParseCheckpoint(const uint8_t* slot);
std::array<uint8_t, kBlockSize> EncodeCheckpoint(uint64_t lsn);

// The number and epoch a block starting at `block_lsn` (a multiple of 512) carries.
uint32_t BlockNo(uint64_t block_lsn);
uint32_t BlockEpoch(uint64_t block_lsn);

struct BlockHeader {
  uint32_t no = 0;               // flush bit masked off
  uint16_t data_len = 0;         // bytes used, header included; 512: full
  bool encrypted = false;        // innodb_redo_log_encrypt
  uint16_t first_rec_group = 0;  // where the first mtr starting here starts; 0: none
  uint32_t epoch = 0;
};
BlockHeader ParseBlockHeader(const uint8_t* block);

// What a block read at `block_lsn` is. kOk: written for that LSN. kTorn: its
// CRC does not match (being written now, or damaged). kOlder: a block of an
// earlier pass over the space (the end of what was written). kNewer: a block
// of a later LSN, with a good CRC: the file was recycled under the reader, and
// what it held for this LSN is gone.
enum class BlockState { kOk, kTorn, kOlder, kNewer };
BlockState CheckBlock(const uint8_t* block, uint64_t block_lsn);
// Sets a block's number, epoch and CRC for `block_lsn` (tests; a backup's own log).
void StampBlock(uint8_t* block, uint64_t block_lsn);

// A file of the set as listed: #ib_redoN (never a #ib_redoN_tmp spare, which
// may hold an old file's stale header and blocks).
struct RedoFile {
  uint64_t id = 0;
  std::string path;
  uint64_t size = 0;
  FileHeader header;
  std::array<std::optional<uint64_t>, 2> checkpoints;  // its two slots, as ParseCheckpoint reads them
  uint64_t end_lsn() const { return header.start_lsn + (size - kFileHeaderSize); }
};

// The files in `dir` (innodb_log_group_home_dir/#innodb_redo), by id, each with
// its header; kCorrupt when two disagree on log_uuid or their LSN ranges do
// not follow each other, kNotFound when there are none.
Result<std::vector<RedoFile>> ListRedoFiles(const std::string& dir);

// The newest checkpoint of the set (both slots of every file: the server
// writes a checkpoint into the file that holds its LSN, alternating slots; a
// slot's LSN outside its own file's range does not count): kCorrupt naming
// the files when none does.
Result<uint64_t> FindCheckpoint(const std::vector<RedoFile>& files);

}  // namespace xbak::innodb::mysql_redo
