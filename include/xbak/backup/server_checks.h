// Questions a backup asks the server before and while it copies: whether
// the backup user may do what the backup needs, and InnoDB's LSNs.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "xbak/mysql/connection.h"
#include "xbak/util/status.h"

namespace xbak::backup {

// What a backup's options need of its user.
struct PrivilegeNeeds {
  bool locks = true;         // RELOAD and PROCESS: BACKUP STAGE, FLUSH (not with --no-lock)
  bool binlog = false;       // BINLOG MONITOR: the binary log position
  bool slave = false;        // SLAVE MONITOR: --slave-info, --safe-slave-backup
  bool slave_admin = false;  // REPLICATION SLAVE ADMIN: --safe-slave-backup
};

// Fails naming every missing privilege, a line each in mariabackup's words
// ("missing required privilege RELOAD on *.*"), and the user's SHOW GRANTS
// with passwords hidden. SUPER covers all.
Status CheckPrivileges(mysql::Connection& c, const PrivilegeNeeds& needs);

// One of InnoDB's LSN status variables: "INNODB_LSN_CURRENT" (the log's head),
// "INNODB_LSN_FLUSHED" (what the server has finished writing).
Result<uint64_t> StatusLsn(mysql::Connection& c, const std::string& name);

// A server running without InnoDB (skip-innodb; `vars`: SHOW GLOBAL
// VARIABLES) is refused by name, before anything is written.
Status CheckServerHasInnodb(const std::map<std::string, std::string>& vars, const std::string& where);

// The Aria logs the server no longer needs for recovery ("free" in SHOW
// ENGINE aria LOGS; kept when aria_log_purge_type=external until removed by
// hand): file names ("aria_log.00000001"), which a backup leaves out, as
// mariabackup does. Empty for a server without Aria.
Result<std::set<std::string>> FreeAriaLogs(mysql::Connection& c);

// An incremental from `basedir` (a backup directory; nothing to check for
// another base) of a server that now has `undo_tablespaces`: refused when
// the base recorded another innodb_undo_tablespaces. A server restarted with
// another count made its undo tablespaces anew (other space ids, other
// files): the base's cannot be brought forward by deltas. mariabackup
// refuses it too, in these words.
Status CheckUndoOfBase(const std::string& basedir, uint32_t undo_tablespaces);

}  // namespace xbak::backup
