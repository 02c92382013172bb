// Binary logs archived into object storage as they are written (xbcloud
// binlog-push): the object layout, the sources binlogs are read from, and one
// archiving pass (the command runs passes every --max-lag seconds).
//
// Under PREFIX/binlogs/<server id>/<file name>/ (a file of each source server
// under its own id, so that a new primary's mysql-bin.000001 never meets the
// old one's):
//   <offset, 20 digits>.seg      the file's bytes from that offset, always a
//                                run of whole transactions (the first segment
//                                starts with the magic and format description);
//                                concatenated in offset order they are the file
//                                as the server leaves it when it closes it (the
//                                format description's in-use flag clear)
//   <offset, 20 digits>.seg.md5  its MD5, as md5sum prints it
//   state                        written after each segment (JSON): the
//                                segments so far with their sizes and MD5s,
//                                and what the file holds (GTID state at its
//                                start, first and last GTID and time, server
//                                ids); "complete": true once the file is
//                                closed and all of it is stored, written last.
//                                A pass that is killed and started again goes
//                                on from it, with no gap and no duplicate.
// PREFIX/binlogs/<server id>/gap-<first>-<last>: binlog files the server
//   purged before they were archived (a restore into them is refused).
// PREFIX/binlogs/<server id>/pass: written at the end of each pass that
//   stored everything (JSON): the time the pass began and the file and
//   offset it reached. Everything the server committed before that time is
//   archived, so a restore to a time up to it is exact; past it, the archive
//   cannot tell whether the server wrote more.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xbak/binlog/gtid.h"
#include "xbak/binlog/scanner.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/object_store.h"

namespace xbak::cloud {

// Where binlog files are read: their names in order (oldest first) and their
// bytes. The last file may still be growing.
class BinlogSource {
 public:
  virtual ~BinlogSource() = default;
  virtual Result<std::vector<std::string>> Files() = 0;
  // Up to `max` bytes of `file` from `offset` (fewer at its current end).
  virtual Result<std::string> Read(const std::string& file, uint64_t offset, size_t max) = 0;
};
// The server's binlog directory, through its index file (log_bin_index,
// e.g. /var/lib/mysql/mysql-bin.index): its lines name the files, relative
// to the index's directory or absolute.
Result<std::unique_ptr<BinlogSource>> LocalBinlogs(const std::string& index_file);

// One segment of a file in the archive.
struct BinlogSegment {
  uint64_t offset = 0, size = 0;
  storage::Md5Digest md5{};
};

// What the archive holds of one file (its `state` object).
struct ArchivedBinlog {
  std::string file;
  uint32_t server_id = 0;
  bool complete = false;
  bool truncated = false;  // closed torn by a crash: complete up to its last whole transaction
  std::vector<BinlogSegment> segments;
  binlog::FileSummary summary;  // up to the end of the last segment
  // The MD5 of the file's first head_bytes (its format description, GTID
  // list, and the time the server created it): a file of the same name that
  // the server wrote anew (RESET MASTER) is told from the archived one.
  uint64_t head_bytes = 0;
  storage::Md5Digest head_md5{};
  uint64_t end() const { return segments.empty() ? 0 : segments.back().offset + segments.back().size; }
};
std::string EncodeBinlogState(const ArchivedBinlog& a);
Result<ArchivedBinlog> ParseBinlogState(const std::string& json, const std::string& origin);

// PREFIX/binlogs/ (binlogs/ without a prefix), and a server's level under it.
std::string BinlogRoot(const std::string& prefix);
std::string BinlogDir(const std::string& prefix, uint32_t server_id);
std::string BinlogStateKey(const std::string& prefix, uint32_t server_id, const std::string& file);
std::string BinlogSegmentKey(const std::string& prefix, uint32_t server_id, const std::string& file,
                             uint64_t offset);

struct BinlogPushOptions {
  std::string prefix;
  uint32_t server_id = 0;  // the source server's @@server_id
  // A segment ends at the first transaction end found once it holds this
  // much (looked for every eighth of it); a larger transaction is one
  // segment of its own, held in memory whole while it is stored.
  uint64_t segment_bytes = uint64_t{16} << 20;
  // Asked between reads: true ends the pass early (what is stored is in
  // its state; the next pass goes on from there).
  std::function<bool()> stop;
  // The states of complete files, kept by the caller between passes (a
  // service): a complete file's state never changes, so a pass reads from the
  // store only those of files still open. nullptr: read every one.
  std::map<std::string, ArchivedBinlog>* complete = nullptr;
};

struct BinlogPushReport {
  uint64_t segments = 0, bytes = 0;       // stored by this pass
  std::vector<std::string> completed;     // files whose last segment this pass stored
  std::optional<binlog::Gtid> last_gtid;  // of the last transaction archived
  std::vector<std::string> warnings;      // a gap seen before, a file torn by a crash
};

// One pass: every file of the source, oldest first, stored from where the
// archive stands to its last complete transaction (all of it, and then
// marked complete, when a later file exists, i.e. the server closed it).
// Files the source no longer has but the archive never completed are a gap:
// recorded in the archive and reported (kNotFound naming them) after
// everything that could be stored was. A file whose bytes fail their checks
// (CRC32, lengths) stops the pass there, naming file and offset; nothing past
// the last good transaction is stored.
//
// A pass that stored everything (no gap, not stopped) writes the pass marker.
Result<BinlogPushReport> PushBinlogs(storage::EventLoop& loop, storage::ObjectStore& store,
                                     BinlogSource& source, const BinlogPushOptions& options);

// The pass marker.
struct BinlogPass {
  int64_t time = 0;  // Unix time the pass began
  std::string file;  // the last file it read, archived up to `offset`
  uint64_t offset = 0;
};
std::string EncodeBinlogPass(const BinlogPass& p);
Result<BinlogPass> ParseBinlogPass(const std::string& json, const std::string& origin);

// The archive's read side (xbcloud restore).
// The server ids with binlogs under PREFIX/binlogs/.
Result<std::vector<uint32_t>> ListBinlogServers(storage::EventLoop& loop, storage::ObjectStore& store,
                                                const std::string& prefix);
struct ServerArchive {
  uint32_t server_id = 0;
  std::vector<std::string> files;  // in the server's order (by number within a base name)
  std::vector<std::string> gaps;   // "gap-<first>-<last>"
  std::optional<BinlogPass> pass;
};
Result<ServerArchive> ReadServerArchive(storage::EventLoop& loop, storage::ObjectStore& store,
                                        const std::string& prefix, uint32_t server_id);
// A file's state (nullopt: the archive has no state for it yet).
Result<std::optional<ArchivedBinlog>> ReadBinlogState(storage::EventLoop& loop, storage::ObjectStore& store,
                                                      const std::string& prefix, uint32_t server_id,
                                                      const std::string& file);
// One segment's bytes, checked against the size and MD5 its state records
// (kCorrupt naming the object otherwise).
Result<std::string> FetchBinlogSegment(storage::EventLoop& loop, storage::ObjectStore& store,
                                       const std::string& prefix, const ArchivedBinlog& file,
                                       const BinlogSegment& segment);
// The file's number: the digits after its last '.' ("mysql-bin.000042" -> 42).
std::optional<uint64_t> BinlogFileNumber(const std::string& name);

}  // namespace xbak::cloud
