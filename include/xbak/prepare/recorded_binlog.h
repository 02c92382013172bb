// The binary log position InnoDB itself recorded with its last commit
// (innodb/trx_sys.h), read from a backup's files once the redo log is
// applied: what --prepare reports when the backup holds no position taken
// under locks (--no-lock), as mariabackup --prepare always does.
#pragma once

#include <optional>
#include <string>

#include "xbak/innodb/trx_sys.h"
#include "xbak/prepare/space_catalog.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// nullopt for a server without a binary log (no position in any page).
// Encrypted pages are decrypted with the catalog's keys.
Result<std::optional<innodb::RecordedBinlog>> ReadRecordedBinlog(const std::string& dir, Catalog& catalog,
                                                                 uint32_t page_size);

// What an applied backup reports: ReadRecordedBinlog's for a --no-lock
// backup (its info file says backup_locks = none), nothing otherwise (a
// locked backup's position is its xtrabackup_binlog_info); best
// effort (a warning, never an error: the pages are applied already, and a
// damaged rollback segment page must not make a backup impossible to prepare).
std::optional<innodb::RecordedBinlog> RecordedBinlogIfNeeded(const std::string& dir, Catalog& catalog,
                                                             uint32_t page_size);

}  // namespace xbak::prepare
