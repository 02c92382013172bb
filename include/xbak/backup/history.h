// --history: a row per backup in mysql.mariadb_backup_history, the table
// mariabackup writes (same definition), so that both tools' backups of a
// server are listed together; and --incremental-history-name/-uuid, which
// take an incremental's base LSN from that table instead of a directory.
#pragma once

#include <cstdint>
#include <string>

#include "xbak/backupdir/metadata.h"
#include "xbak/mysql/connection.h"
#include "xbak/util/status.h"

namespace xbak::backup {

inline constexpr const char* kHistoryTable = "mysql.mariadb_backup_history";

// CREATE TABLE IF NOT EXISTS, before the backup starts: a user who may not
// write it learns so before anything is copied.
Status EnsureHistoryTable(mysql::Connection& c);

// The row of a completed backup (info.name is the series name, may be "").
Status AddHistoryRow(mysql::Connection& c, const backupdir::BackupInfo& info);

// innodb_to_lsn of the latest backup of series `name` (by end_time), or of the
// backup `uuid`: the base of the next incremental. Exactly one is non-empty.
Result<uint64_t> HistoryBaseLsn(mysql::Connection& c, const std::string& name, const std::string& uuid);

}  // namespace xbak::backup
