#include "xbak/pitr/replay.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "server_defaults.h"
#include "xbak/mysql/private_server.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/process.h"
#include "xbak/util/progress.h"

namespace xbak::pitr {
namespace {

constexpr const char* kReplayUser = "xbak_replay";

// 32 random hex digits (/dev/urandom): the password of our account, for the
// replay's few minutes, in files only we read.
std::string RandomPassword() {
  std::random_device rd;
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) out += kHex[rd() % 16];
  return out;
}

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
               // Every transaction applied as the source committed it.
               "--slave-exec-mode=STRICT",
               "--slave-skip-errors=OFF",
               "--init-slave=",
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
                     const std::string& until, const std::vector<uint64_t>& sizes) {
  util::Progress progress("replaying binary logs", o.progress_interval);
  uint64_t total = 0;
  std::vector<uint64_t> before;  // bytes of the relay logs before each
  for (uint64_t n : sizes) {
    before.push_back(total);
    total += n;
  }
  progress.AddTotal(total - r.first_position, r.names.size());
  uint64_t shown = 0;
  const uint64_t last_size = sizes.back();
  std::optional<std::chrono::steady_clock::time_point> gtid_reached;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(auto reached, c.QueryValue("SELECT MASTER_GTID_WAIT('" + until + "', 1)"));
    XBAK_ASSIGN_OR_RETURN(auto rows, c.QueryNamed("SHOW SLAVE STATUS"));
    // Done when the target's GTIDs are applied and the SQL thread is at the
    // end of the last relay log: not before, whatever gtid_slave_pos said.
    if (reached && *reached == "0" && !rows.empty()) {
      // (Past the last of ours: the server opened a relay log of its own at its
      // start, which the SQL thread goes on to once ours are done.)
      const std::string file = Field(rows.front(), "Relay_Log_File");
      const std::string name = file.substr(file.rfind('/') + 1);
      const bool ours = std::find(r.names.begin(), r.names.end(), name) != r.names.end();
      if ((!ours && name > r.names.back()) ||
          (name == r.names.back() && Field(rows.front(), "Relay_Log_Pos") == std::to_string(last_size)))
        break;
      const auto now = std::chrono::steady_clock::now();
      if (!gtid_reached) gtid_reached = now;
      if (now - *gtid_reached > std::chrono::seconds(60)) {
        progress.Finish(false);
        return Error(ErrorCode::kServer, "the replay reached GTID " + until +
                                             " but its SQL thread stands at " + file + " byte " +
                                             Field(rows.front(), "Relay_Log_Pos") + ", not at the end of " +
                                             r.names.back() + " (" + std::to_string(last_size) + " bytes)");
      }
    }
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

Status CheckReplayDefaults(const std::string& program, const std::string& defaults_file) {
  if (defaults_file.empty()) return Status::Ok();
  XBAK_ASSIGN_OR_RETURN(std::string text, PrintDefaults(program, defaults_file));
  // Settings that would make the replay skip or change transactions, and that
  // a command line cannot take back.
  for (const char* bad : {"--replicate-", "--init-file", "--init_file", "--replicate_"}) {
    const size_t at = text.find(bad);
    if (at != std::string::npos) {
      const std::string opt = text.substr(at, text.find_first_of(" \n", at) - at);
      return Error(
          ErrorCode::kUnsupported,
          "--mysqld-defaults-file " + defaults_file + " sets " + opt +
              ", which the replay server would obey (skipping or changing transactions); give a copy "
              "without it. Nothing was written");
    }
  }
  return Status::Ok();
}

// The replay server's options; its init file (our account) is `init`.
static Result<mysql::PrivateServerOptions> ServerOptions(const ReplayOptions& o, const RelayLogs& r,
                                                         const std::string& init) {
  mysql::PrivateServerOptions so;
  so.what = "the replay server";
  so.program = o.program;
  so.run_dir = o.run_dir;
  so.args = ServerArguments(o, r);
  // The grant tables stay on: the binary logs may hold CREATE USER and
  // GRANT, which a server without them refuses. We connect with an account
  // of our own, created at its start (init_file, in our private directory)
  // and dropped before it stops.
  so.user = kReplayUser;
  so.password = RandomPassword();
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(
      init, "CREATE OR REPLACE USER '" + std::string(kReplayUser) + "'@'localhost' IDENTIFIED BY '" +
                so.password + "';\nGRANT ALL PRIVILEGES ON *.* TO '" + kReplayUser + "'@'localhost';\n"));
  so.args.push_back("--init-file=" + init);
  if (::geteuid() == 0 && !o.defaults_file.empty()) {
    // A defaults file's user= is the one mariadbd obeys: its files become that user's.
    XBAK_ASSIGN_OR_RETURN(std::string printed, PrintDefaults(o.program, o.defaults_file));
    so.run_as = DefaultsOption(printed, "user", true);
    if (!so.run_as.empty()) {
      for (const std::string& d : {o.datadir, o.run_dir}) XBAK_RETURN_IF_ERROR(util::GiveTree(d, so.run_as));
    }
  }
  so.progress = o.progress_interval.count() > 0;
  return so;
}

Result<ReplayReport> Replay(const ReplayOptions& o, const RelayLogs& r) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string init = util::JoinPath(o.run_dir, "init.sql");
  XBAK_ASSIGN_OR_RETURN(mysql::PrivateServerOptions so, ServerOptions(o, r, init));
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
  // From the backup's own GTID position: the one the datadir's
  // mysql.gtid_slave_pos holds may be a replica's old one.
  if (!o.start_gtid.empty())
    XBAK_RETURN_IF_ERROR(c.Execute("SET GLOBAL gtid_slave_pos = " + c.Quote(o.start_gtid)));
  // Their sizes before the SQL thread starts deleting those it has applied.
  std::vector<uint64_t> sizes;
  for (const auto& n : r.names) {
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(util::JoinPath(o.relay_dir, n)));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    sizes.push_back(size);
  }
  XBAK_RETURN_IF_ERROR(c.Execute("START SLAVE SQL_THREAD"));
  Status waited = WaitForTarget(c, o, r, until, sizes);
  if (!waited.ok()) {
    return Status(waited.code(), waited.message() + "; the end of the replay server's log (" + server.log() +
                                     "):\n" + server.Tail());
  }
  XBAK_RETURN_IF_ERROR(c.Execute("STOP SLAVE"));
  XBAK_RETURN_IF_ERROR(c.Execute("RESET SLAVE ALL"));
  (void)::unlink(init.c_str());
  ReplayReport rep;
  XBAK_ASSIGN_OR_RETURN(auto pos_now, c.QueryValue("SELECT @@gtid_slave_pos"));
  rep.gtid_slave_pos = pos_now.value_or("");
  // Every replayed domain exactly at the target's GTID.
  auto applied = binlog::ParseGtidPosition(rep.gtid_slave_pos);
  for (const auto& g : r.replayed) {
    if (!applied.ok() || std::find(applied->begin(), applied->end(), g) == applied->end()) {
      return Error(ErrorCode::kServer, "after the replay gtid_slave_pos is '" + rep.gtid_slave_pos +
                                           "', which does not hold " + binlog::FormatGtid(g) +
                                           "; the end of its log (" + server.log() + "):\n" + server.Tail());
    }
  }
  // (The session keeps its privileges for the SHUTDOWN that follows.)
  XBAK_RETURN_IF_ERROR(c.Execute("DROP USER '" + std::string(kReplayUser) + "'@'localhost'"));
  XBAK_RETURN_IF_ERROR(server.Stop());
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace xbak::pitr
