#include "xbak/backup/replica.h"

#include <cstdlib>
#include <thread>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/util/log.h"

namespace xbak::backup {
namespace {

std::string SlaveCommand(mysql::Connection& c, const char* verb, const std::string& name) {
  return std::string(verb) + " SLAVE " + (name.empty() ? std::string() : c.Quote(name) + " ") + "SQL_THREAD";
}

std::string Named(const std::string& name) {
  return name.empty() ? "the default connection" : "'" + name + "'";
}

Result<uint64_t> OpenTempTables(mysql::Connection& c) {
  XBAK_ASSIGN_OR_RETURN(auto v, c.GlobalStatus("SLAVE_OPEN_TEMP_TABLES"));
  return v ? std::strtoull(v->c_str(), nullptr, 10) : 0;
}

}  // namespace

Result<std::string> SlaveInfo(mysql::Connection& c) {
  XBAK_ASSIGN_OR_RETURN(auto gtid, c.QueryValue("SELECT @@GLOBAL.gtid_slave_pos"));
  XBAK_ASSIGN_OR_RETURN(auto rows, c.QueryNamed("SHOW ALL SLAVES STATUS"));
  if (rows.empty()) {
    // mariabackup's words, which scripts grep for: no xtrabackup_slave_info is written.
    util::LogInfo(
        "Failed to get master binlog coordinates from SHOW SLAVE STATUS.This means that the server is not a "
        "replication slave. Ignoring the --slave-info option");
    return std::string();
  }
  std::string sql;
  std::vector<std::string> said;  // the position in the log line mariabackup writes
  bool any_gtid = false;
  for (auto& r : rows) any_gtid = any_gtid || (r["Using_Gtid"] != "No" && !r["Using_Gtid"].empty());
  std::string slave_pos = gtid.value_or("");
  if (!slave_pos.empty() && any_gtid) {
    sql += "SET GLOBAL gtid_slave_pos = '" + slave_pos + "';\n";
    said.push_back("gtid_slave_pos '" + slave_pos + "'");
  }
  for (auto& r : rows) {
    std::string name = r["Connection_name"];
    std::string prefix = "CHANGE MASTER " + (name.empty() ? std::string() : "'" + name + "' ");
    bool uses_gtid = r["Using_Gtid"] != "No" && !r["Using_Gtid"].empty();
    if (!slave_pos.empty() && uses_gtid) {
      sql += prefix + "TO master_use_gtid = slave_pos;\n";
      said.push_back("master '" + name + "' master_use_gtid = slave_pos");
    } else {
      sql += prefix + "TO MASTER_LOG_FILE='" + r["Relay_Master_Log_File"] +
             "', MASTER_LOG_POS=" + r["Exec_Master_Log_Pos"] + ";\n";
      said.push_back("master '" + name + "' filename '" + r["Relay_Master_Log_File"] + "' position '" +
                     r["Exec_Master_Log_Pos"] + "'");
    }
  }
  std::string line = "MySQL slave binlog position: ";
  for (size_t i = 0; i < said.size(); i++) line += (i ? "; " : "") + said[i];
  util::LogInfo(line);
  return sql;
}

Result<std::string> GaleraInfo(mysql::Connection& c) {
  XBAK_ASSIGN_OR_RETURN(auto on_value, c.QueryValue("SELECT @@GLOBAL.wsrep_on"));
  const std::string on = on_value.value_or("");
  if (on != "1" && on != "ON") {
    util::LogWarning(
        "--galera-info: this server is not a Galera node (wsrep_on is off); no Galera position written");
    return std::string();
  }
  auto status = [&](const char* name) -> Result<std::string> {
    XBAK_ASSIGN_OR_RETURN(auto v, c.GlobalStatus(name));
    if (!v || v->empty()) {
      return Error(ErrorCode::kServer, std::string("--galera-info: the server reports no ") + name +
                                           " (is the Galera provider loaded and the node synced?)");
    }
    return *v;
  };
  XBAK_ASSIGN_OR_RETURN(std::string uuid, status("WSREP_LOCAL_STATE_UUID"));
  XBAK_ASSIGN_OR_RETURN(std::string seqno, status("WSREP_LAST_COMMITTED"));
  XBAK_ASSIGN_OR_RETURN(auto domain, c.QueryValue("SELECT @@GLOBAL.wsrep_gtid_domain_id"));
  return uuid + ":" + seqno + " " + domain.value_or("0") + "\n";
}

Result<std::unique_ptr<SafeSlave>> SafeSlave::Stop(mysql::Connection& c, std::chrono::seconds timeout) {
  XBAK_ASSIGN_OR_RETURN(auto rows, c.QueryNamed("SHOW ALL SLAVES STATUS"));
  std::vector<std::string> running;
  for (auto& r : rows) {
    if (r["Slave_SQL_Running"] == "Yes") running.push_back(r["Connection_name"]);
  }
  if (rows.empty())
    util::LogInfo("--safe-slave-backup: this server is not a replica; nothing to stop");
  else if (running.empty())
    util::LogInfo("--safe-slave-backup: no replication SQL thread is running");
  std::unique_ptr<SafeSlave> s(new SafeSlave(c, std::move(running)));
  if (s->stopped_.empty()) return s;
  const auto t0 = std::chrono::steady_clock::now();
  XBAK_RETURN_IF_ERROR(s->StopAll());
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(uint64_t open, OpenTempTables(c));
    if (open == 0) break;
    const auto waited =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0);
    if (waited >= timeout) {
      // The destructor starts the SQL threads again.
      return Error(ErrorCode::kTimeout,
                   "--safe-slave-backup: the replica still has " + std::to_string(open) +
                       " temporary table(s) open in its SQL thread after " + std::to_string(waited.count()) +
                       " s (--safe-slave-backup-timeout); a backup now would restore a replica that fails on "
                       "them. Retry when the primary's sessions that use temporary tables have ended");
    }
    util::LogInfo("--safe-slave-backup: " + std::to_string(open) +
                  " temporary table(s) open in the replica's SQL thread; letting it run for a second");
    XBAK_RETURN_IF_ERROR(s->StartAll());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    XBAK_RETURN_IF_ERROR(s->StopAll());
  }
  std::string names;
  for (const auto& n : s->stopped_) names += (names.empty() ? "" : ", ") + Named(n);
  util::LogInfo("--safe-slave-backup: replication SQL thread stopped (" + names +
                "), no temporary table open");
  return s;
}

Status SafeSlave::StopAll() {
  // Cleared first: a STOP that fails halfway leaves threads stopped, which
  // Restart (and the destructor) must start again.
  running_again_ = false;
  for (const auto& n : stopped_) XBAK_RETURN_IF_ERROR(c_.Execute(SlaveCommand(c_, "STOP", n)));
  return Status::Ok();
}

Status SafeSlave::StartAll() {
  // Every connection is tried, so one that fails leaves no other stopped.
  Status first;
  for (const auto& n : stopped_) {
    Status st = c_.Execute(SlaveCommand(c_, "START", n));
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok()) return first;
  running_again_ = true;
  return Status::Ok();
}

Status SafeSlave::Restart() {
  if (running_again_ || stopped_.empty()) return Status::Ok();
  XBAK_RETURN_IF_ERROR(StartAll());
  util::LogInfo("--safe-slave-backup: replication SQL thread started again");
  return Status::Ok();
}

SafeSlave::~SafeSlave() {
  Status st = Restart();
  if (!st.ok()) {
    util::LogError("--safe-slave-backup: could not start the replication SQL thread again (" + st.message() +
                   "); run START SLAVE SQL_THREAD on the replica");
  }
}

}  // namespace xbak::backup
