// `xbcloud restore PREFIX --datadir=D (--to-time=T | --to-gtid=G | --latest)`:
// a point-in-time restore from what a store holds under PREFIX, in one
// command:
//   1. picks the newest backup (full or incremental, `xbcloud put
//      PREFIX/NAME`) whose binlog position comes before the target, and its
//      chain back to the full backup (or the chain of --backup=NAME);
//   2. restores the chain into D in one pass (restore/restore.h), each
//      backup's stream downloaded once (cloud/get.h) and fed to it through a
//      pipe: nothing staged but what the restore from streams stages;
//   3. writes the archived binary logs (PREFIX/binlogs/, xbcloud
//      binlog-push) from the last backup's binlog position to the target as
//      relay logs in D/xbak-replay (relay_logs.h);
//   4. replays them through a server of its own on D (replay.h);
//   5. finishes: the redo log put in place, the journal removed. Only then can
//      a server start on D; with start_server, it is started (start_server.h).
// Until step 5, D stays marked unfinished (restore.h: the placeholder
// ib_logfile0 and the journal): killed at any point, the same command run
// again starts over; a server started on D meanwhile refuses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "xbak/cloud/get.h"
#include "xbak/pitr/target.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::pitr {

struct PointRestoreOptions {
  std::string prefix;  // the backups are PREFIX/NAME, the binary logs PREFIX/binlogs/
  Target target;
  std::string backup;  // --backup=NAME: the chain of this backup ("" picks one)
  std::string datadir;
  int parallel = 4;                         // restore threads, GETs in flight, replication workers
  uint64_t use_memory = uint64_t{1} << 30;  // each redo step, and the replay server's buffer pool
  std::string mariadbd;                     // "" mariadbd from PATH, /usr/sbin, /usr/bin
  std::string defaults_file;                // the server's my.cnf, for the replay server ("" none)
  bool dry_run = false;                     // say what would be restored, write nothing
  bool start_server = false;                // then start the server on it (needs defaults_file)
  bool no_server_version_check = false;     // backups of an untested server version restored all the same
  cloud::GetOptions get;                    // how each backup is downloaded (name set here)
  std::chrono::milliseconds progress_interval{5000};
};

Status RestoreToPoint(storage::EventLoop& loop, storage::ObjectStore& store, const PointRestoreOptions& o);

}  // namespace xbak::pitr
