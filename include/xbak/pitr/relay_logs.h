// The archived binary logs a point-in-time restore replays, written as the
// restored server's relay logs: from the backup's binlog position (its
// xtrabackup_binlog_info) to the target, each event's CRC32 and each
// segment's MD5 checked on the way, the last file cut just after the last
// transaction the target includes.
//
// Why relay logs: the restored server's own replication SQL thread then
// applies them (parallel, optimistic), where `mariadb-binlog | mariadb`
// applies them one statement at a time through one client connection.
//
// The archive is followed in the order its server wrote the files (one
// source server: the one whose archive holds the backup's binlog file and
// agrees with its GTID position); a file missing in between (a gap the
// archiver recorded, or a file never archived) is refused with its name
// unless the target comes before it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xbak/binlog/gtid.h"
#include "xbak/binlog/scanner.h"
#include "xbak/pitr/target.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::pitr {

// Where the backup's data stops in the binary log.
struct ReplayStart {
  std::string file;           // its binlog file
  uint64_t position = 0;      // the offset of the first transaction not in it
  binlog::GtidPosition gtid;  // gtid_current_pos at that point (may be empty)
};

struct RelayOptions {
  std::string prefix;  // PREFIX: the archive is PREFIX/binlogs/
  std::string dir;     // written here: relay-bin.NNNNNN and relay-bin.index
  Target target;
  std::chrono::milliseconds progress_interval{5000};
};

struct RelayLogs {
  std::vector<std::string> names;  // relay-bin.000001, ... in order, in RelayOptions::dir
  uint64_t first_position = 0;     // where replay starts in the first
  uint32_t server_id = 0;          // the source server whose archive was followed
  std::vector<std::string> files;  // its binlog files used, in order
  binlog::GtidPosition end_state;  // the GTID position at the target
  binlog::GtidPosition replayed;   // the last GTID replayed in each domain (empty: nothing to replay)
  std::optional<binlog::Transaction> last;  // the last transaction replayed
  std::string last_file;                    // and its file
  uint64_t transactions = 0;                // replayed
  uint64_t bytes = 0;                       // written (whole files but the last)
  std::vector<uint32_t> server_ids;         // of every event in the files used
};

inline constexpr const char* kRelayBase = "relay-bin";

// Before anything is written: whether the archive reaches the target at all,
// from the state of each server's newest file (a request or two per server):
// a GTID some server archived, a time before the last archived transaction
// or the last complete binlog-push pass. The exact checks come with the
// relay logs. kNotFound saying where the archive ends otherwise.
Status CheckTargetArchived(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& prefix,
                           const Target& target);

Result<RelayLogs> WriteRelayLogs(storage::EventLoop& loop, storage::ObjectStore& store, const RelayOptions& o,
                                 const ReplayStart& start);

}  // namespace xbak::pitr
