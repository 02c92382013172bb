#include "xbak/backup/server_checks.h"

#include <cstdlib>
#include <set>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"

namespace xbak::backup {

namespace {

// SHOW GRANTS names the user's password hash (PASSWORD '...') or
// authentication string (USING '...'): the lines go to the log with them
// hidden. (A loop, not std::regex: GCC 12 warns inside <regex> under ASan.)
std::string HideAuthentication(std::string grant) {
  for (const std::string key : {"PASSWORD '", "USING '"}) {
    for (size_t at = grant.find(key); at != std::string::npos; at = grant.find(key, at)) {
      const size_t start = at + key.size();
      const size_t end = grant.find('\'', start);
      if (end == std::string::npos) break;
      grant.replace(start, end - start, "<hidden>");
      at = start + 9;  // past "<hidden>'"
    }
  }
  return grant;
}

}  // namespace

Status CheckPrivileges(mysql::Connection& c, const PrivilegeNeeds& needs) {
  auto rows = c.Query(
      "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = "
      "CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
      "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')");
  if (!rows.ok()) return rows.status();
  std::set<std::string> have;
  for (auto& r : rows.value()) {
    if (!r.empty() && r[0]) have.insert(*r[0]);
  }
  std::vector<std::pair<std::string, std::string>> need;  // privilege, what for
  if (needs.locks) {
    need.emplace_back("RELOAD", "for BACKUP STAGE and FLUSH ENGINE LOGS");
    need.emplace_back("PROCESS", "mariabackup asks for it too");
  }
  if (needs.binlog) need.emplace_back("BINLOG MONITOR", "for SHOW MASTER STATUS");
  if (needs.slave) need.emplace_back("SLAVE MONITOR", "for --slave-info");
  if (needs.slave_admin) need.emplace_back("REPLICATION SLAVE ADMIN", "for --safe-slave-backup");
  // One line per privilege, in mariabackup's words (scripts grep for them).
  std::string missing;
  for (auto& [p, why] : need) {
    if (have.count(p) || have.count("SUPER")) continue;
    missing += "\n  missing required privilege " + p + " on *.* (" + why + ")";
  }
  if (missing.empty()) return Status::Ok();
  std::string grants;
  if (auto g = c.Query("SHOW GRANTS"); g.ok()) {
    for (auto& r : g.value()) {
      if (!r.empty() && r[0]) grants += "\n  " + HideAuthentication(*r[0]);
    }
  }
  if (!grants.empty()) grants = "\n  current privileges, as reported by SHOW GRANTS:" + grants;
  return Error(ErrorCode::kServer, "the backup user lacks privileges:" + missing + grants);
}

Result<uint64_t> StatusLsn(mysql::Connection& c, const std::string& name) {
  XBAK_ASSIGN_OR_RETURN(auto v, c.GlobalStatus(name));
  if (!v || v->empty()) return Error(ErrorCode::kServer, "the server has no status variable " + name);
  return static_cast<uint64_t>(std::strtoull(v->c_str(), nullptr, 10));
}

Status CheckServerHasInnodb(const std::map<std::string, std::string>& vars, const std::string& where) {
  if (vars.count("innodb_page_size")) return Status::Ok();
  return Error(ErrorCode::kUnsupported,
               "the server at " + where +
                   " runs without InnoDB (skip-innodb): xbak backs up servers with InnoDB "
                   "only; copy the files of a stopped server, or use mariadb-dump; "
                   "nothing was written");
}

Result<std::set<std::string>> FreeAriaLogs(mysql::Connection& c) {
  std::set<std::string> out;
  auto rows = c.Query("SHOW ENGINE aria LOGS");
  if (!rows.ok()) return out;  // no Aria: every log file found is copied
  for (const auto& r : *rows) {
    if (r.size() < 3 || !r[1] || r[2].value_or("") != "free") continue;
    std::string name = *r[1];
    if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    out.insert(name);
  }
  return out;
}

Status CheckUndoOfBase(const std::string& basedir, uint32_t undo_tablespaces) {
  if (basedir.empty() || !util::PathExists(util::JoinPath(basedir, backupdir::kBackupCnfFile)))
    return Status::Ok();
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf base, backupdir::ReadBackupCnf(basedir));
  if (!base.undo_tablespaces || *base.undo_tablespaces == undo_tablespaces) return Status::Ok();
  return Error(ErrorCode::kUnsupported,
               "--incremental backup is impossible if the server had been restarted with different "
               "innodb_undo_tablespaces: " +
                   basedir + " was taken with " + std::to_string(*base.undo_tablespaces) +
                   ", the server now has " + std::to_string(undo_tablespaces) + "; take a full backup");
}

}  // namespace xbak::backup
