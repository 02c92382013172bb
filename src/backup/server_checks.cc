#include "xbak/backup/server_checks.h"

#include <cstdlib>
#include <set>
#include <vector>

namespace xbak::backup {

Status CheckPrivileges(mysql::Connection& c, bool need_binlog, bool need_slave, bool need_slave_admin) {
  auto rows = c.Query(
      "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = "
      "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
      "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')");
  if (!rows.ok()) return rows.status();
  std::set<std::string> have;
  for (auto& r : rows.value()) {
    if (!r.empty() && r[0]) have.insert(*r[0]);
  }
  std::vector<std::string> need = {"RELOAD", "PROCESS"};
  if (need_binlog) need.push_back("BINLOG MONITOR");
  if (need_slave) need.push_back("SLAVE MONITOR");
  if (need_slave_admin) need.push_back("REPLICATION SLAVE ADMIN");
  std::string missing;
  for (auto& p : need) {
    if (have.count(p) == 0 && have.count("SUPER") == 0) missing += (missing.empty() ? "" : ", ") + p;
  }
  if (!missing.empty()) {
    return Error(
        ErrorCode::kServer,
        "the backup user lacks privileges: " + missing +
            " (RELOAD for BACKUP STAGE and FLUSH, PROCESS as mariabackup asks, "
            "BINLOG MONITOR for SHOW MASTER STATUS, SLAVE MONITOR for --slave-info, REPLICATION SLAVE "
            "ADMIN for --safe-slave-backup)");
  }
  return Status::Ok();
}

Result<uint64_t> StatusLsn(mysql::Connection& c, const std::string& name) {
  XBAK_ASSIGN_OR_RETURN(auto v, c.GlobalStatus(name));
  if (!v || v->empty()) return Error(ErrorCode::kServer, "the server has no status variable " + name);
  return static_cast<uint64_t>(std::strtoull(v->c_str(), nullptr, 10));
}

}  // namespace xbak::backup
