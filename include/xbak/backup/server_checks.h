// Questions a backup asks the server before and while it copies: whether
// the backup user may do what the backup needs, and InnoDB's LSNs.
#pragma once

#include <cstdint>
#include <string>

#include "xbak/mysql/connection.h"
#include "xbak/util/status.h"

namespace xbak::backup {

// Fails naming every missing privilege and what it is for (SUPER covers all).
Status CheckPrivileges(mysql::Connection& c, bool need_binlog, bool need_slave, bool need_slave_admin);

// One of InnoDB's LSN status variables: "INNODB_LSN_CURRENT" (the log's head),
// "INNODB_LSN_FLUSHED" (what the server has finished writing).
Result<uint64_t> StatusLsn(mysql::Connection& c, const std::string& name);

}  // namespace xbak::backup
