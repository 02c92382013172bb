#include "xbak/pitr/replay.h"

#include <algorithm>
#include <map>
#include <thread>

#include "xbak/mysql/private_server.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::pitr {
namespace {

// A server id none of the replayed events carries: the SQL thread skips
// events of its own server id.
uint32_t ReplayServerId(const RelayLogs& r) {
  uint32_t id = 4294967295u;
  while (std::find(r.server_ids.begin(), r.server_ids.end(), id) != r.server_ids.end()) id--;
  return id;
}

std::vector<std::string> ServerArguments(const ReplayOptions& o, const RelayLogs& r) {
  const std::string relay = util::JoinPath(o.relay_dir, kRelayBase);
  std::vector<std::string> a;
  // The server's own settings first (a defaults file must come first), for
  // what the datadir needs to open: page size, undo and data files, key
  // management and page compression plugins. What follows overrides them.
  a.push_back(o.defaults_file.empty() ? "--no-defaults" : "--defaults-file=" + o.defaults_file);
  a.insert(a.end(),
           {
               "--datadir=" + o.datadir,
               "--innodb-log-group-home-dir=" + o.log_dir,
               "--tmpdir=" + o.run_dir,
               "--skip-grant-tables",
               "--skip-log-bin",
               "--skip-slave-start",
               "--loose-wsrep-on=OFF",
               "--loose-event-scheduler=OFF",
               "--performance-schema=OFF",
               "--server-id=" + std::to_string(ReplayServerId(r)),
               "--relay-log=" + relay,
               "--relay-log-index=" + relay + ".index",
               "--relay-log-info-file=" + util::JoinPath(o.relay_dir, "relay-log.info"),
               "--master-info-file=" + util::JoinPath(o.relay_dir, "master.info"),
               "--relay-log-recovery=OFF",  // ON would throw the relay logs away
               "--relay-log-purge=ON",      // each one applied is deleted: the disk holds what is left to do
               "--slave-parallel-threads=" + std::to_string(std::max(1, o.parallel)),
               "--slave-parallel-mode=optimistic",
               "--slave-parallel-max-queued=" + std::to_string(4 << 20),
               "--slave-domain-parallel-threads=" + std::to_string(std::max(1, o.parallel)),
               "--innodb-flush-log-at-trx-commit=0",
               "--innodb-doublewrite=0",
               "--sync-master-info=0",
               "--sync-relay-log-info=0",
               "--sync-relay-log=0",
               "--innodb-buffer-pool-size=" + std::to_string(o.buffer_pool),
               "--innodb-buffer-pool-load-at-startup=OFF",
               "--innodb-buffer-pool-dump-at-shutdown=OFF",
           });
  return a;
}

std::string Field(const std::map<std::string, std::string>& row, const char* name) {
  auto it = row.find(name);
  return it == row.end() ? "" : it->second;
}

// Waits for the SQL thread to reach the target, reporting progress; an SQL
// thread that stops on an error ends the wait with that error.
Status WaitForTarget(mysql::Connection& c, const ReplayOptions& o, const RelayLogs& r,
                     const std::string& until) {
  util::Progress progress("replaying binary logs", o.progress_interval);
  uint64_t total = 0;
  std::vector<uint64_t> before;  // bytes of the relay logs before each
  for (const auto& n : r.names) {
    before.push_back(total);
    auto f = util::File::OpenRead(util::JoinPath(o.relay_dir, n));
    if (f.ok()) {
      auto size = f->Size();
      if (size.ok()) total += *size;
    }
  }
  progress.AddTotal(total - r.first_position, r.names.size());
  uint64_t shown = 0;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(auto reached, c.QueryValue("SELECT MASTER_GTID_WAIT('" + until + "', 1)"));
    if (reached && *reached == "0") break;
    XBAK_ASSIGN_OR_RETURN(auto rows, c.QueryNamed("SHOW SLAVE STATUS"));
    if (rows.empty()) return Error(ErrorCode::kServer, "the replay server has no replication set up");
    const auto& s = rows.front();
    if (Field(s, "Slave_SQL_Running") != "Yes") {
      progress.Finish(false);
      return Error(ErrorCode::kServer, "the replay stopped: " + Field(s, "Last_SQL_Error") + " (in " +
                                           Field(s, "Relay_Master_Log_File") + " at byte " +
                                           Field(s, "Exec_Master_Log_Pos") + ")");
    }
    const std::string file = Field(s, "Relay_Log_File");
    const std::string name = file.substr(file.rfind('/') + 1);
    auto it = std::find(r.names.begin(), r.names.end(), name);
    if (it != r.names.end()) {
      uint64_t at = before[it - r.names.begin()] + std::stoull("0" + Field(s, "Relay_Log_Pos"));
      at = at > r.first_position ? at - r.first_position : 0;
      if (at > shown) progress.AddDone(at - shown), shown = at;
    }
    progress.SetNote("at " + Field(s, "Relay_Master_Log_File") + ":" + Field(s, "Exec_Master_Log_Pos"));
  }
  progress.AddDone(total - r.first_position - std::min(shown, total - r.first_position));
  progress.Finish(true);
  return Status::Ok();
}

}  // namespace

Result<ReplayReport> Replay(const ReplayOptions& o, const RelayLogs& r) {
  const auto t0 = std::chrono::steady_clock::now();
  mysql::PrivateServerOptions so;
  so.what = "the replay server";
  so.program = o.program;
  so.run_dir = o.run_dir;
  so.args = ServerArguments(o, r);
  so.progress = o.progress_interval.count() > 0;
  mysql::PrivateServer server(std::move(so));
  XBAK_RETURN_IF_ERROR(server.Start());
  mysql::Connection& c = server.conn();
  const std::string until = binlog::FormatGtidPosition(r.replayed);
  const std::string pos = std::to_string(r.first_position);
  XBAK_RETURN_IF_ERROR(
      c.Execute("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=1, MASTER_USER='xbak-replay', "
                "MASTER_USE_GTID=no, RELAY_LOG_FILE=" +
                c.Quote(r.names.front()) + ", RELAY_LOG_POS=" + pos +
                ", MASTER_LOG_FILE=" + c.Quote(o.first_file) + ", MASTER_LOG_POS=" + pos));
  util::LogInfo("replaying " + std::to_string(r.transactions) + " transactions (" +
                util::HumanBytes(r.bytes) + " of binary logs) up to GTID " + until + " with " +
                std::to_string(std::max(1, o.parallel)) + " replication workers");
  XBAK_RETURN_IF_ERROR(c.Execute("START SLAVE SQL_THREAD"));
  Status waited = WaitForTarget(c, o, r, until);
  if (!waited.ok())
    return waited.With("the end of the replay server's log (" + server.log() + "):\n" + server.Tail());
  XBAK_RETURN_IF_ERROR(c.Execute("STOP SLAVE"));
  XBAK_RETURN_IF_ERROR(c.Execute("RESET SLAVE ALL"));
  ReplayReport rep;
  XBAK_ASSIGN_OR_RETURN(auto pos_now, c.QueryValue("SELECT @@gtid_slave_pos"));
  rep.gtid_slave_pos = pos_now.value_or("");
  XBAK_RETURN_IF_ERROR(server.Stop());
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace xbak::pitr
