// The replay of a point-in-time restore: a MariaDB server of our own on the
// restored datadir (no network, a private socket, never the production
// server) is handed the archived binary logs as its relay logs and applies
// them with its own replication SQL thread, in parallel (optimistic mode,
// --parallel workers), until the target's GTID position is reached; then
// replication is reset and the server stopped cleanly.
//
// Settings that are safe only because a failed replay is simply run again
// from the backup (the datadir stays marked unfinished until it ends):
// innodb_flush_log_at_trx_commit=0, innodb_doublewrite=0, no binary log, no
// syncing of the relay log info.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "xbak/pitr/relay_logs.h"
#include "xbak/util/status.h"

namespace xbak::pitr {

struct ReplayOptions {
  std::string program;        // mariadbd
  std::string datadir;        // the restored datadir
  std::string log_dir;        // where its ib_logfile0 is during the replay
  std::string relay_dir;      // RelayOptions::dir
  std::string run_dir;        // private: socket, pid, the server's log
  std::string defaults_file;  // the server's own my.cnf ("" none): plugins, key management, InnoDB settings
  std::string first_file;     // the source's name of the first relay log (the backup's binlog file)
  std::string start_gtid;     // the backup's GTID position: gtid_slave_pos when the replay starts
  int parallel = 4;           // replication workers
  uint64_t buffer_pool = uint64_t{1} << 30;
  std::chrono::milliseconds progress_interval{5000};
};

struct ReplayReport {
  std::string gtid_slave_pos;  // after the replay
  double seconds = 0;
};

Result<ReplayReport> Replay(const ReplayOptions& o, const RelayLogs& relay);

// Refuses, before anything is written, a defaults file whose settings the
// replay server would obey and no command line takes back: replication
// filters (replicate-*) and init_file.
Status CheckReplayDefaults(const std::string& program, const std::string& defaults_file);

}  // namespace xbak::pitr
