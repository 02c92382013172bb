#include "xbak/backup/history.h"

#include <cstdlib>

namespace xbak::backup {

Status EnsureHistoryTable(mysql::Connection& c) {
  // mariabackup 10.11's definition, column for column.
  Status st =
      c.Execute(std::string("CREATE TABLE IF NOT EXISTS ") + kHistoryTable +
                " ("
                "uuid VARCHAR(40) NOT NULL PRIMARY KEY, name VARCHAR(255) DEFAULT NULL, "
                "tool_name VARCHAR(255) DEFAULT NULL, tool_command TEXT DEFAULT NULL, "
                "tool_version VARCHAR(255) DEFAULT NULL, ibbackup_version VARCHAR(255) DEFAULT NULL, "
                "server_version VARCHAR(255) DEFAULT NULL, start_time TIMESTAMP NULL DEFAULT NULL, "
                "end_time TIMESTAMP NULL DEFAULT NULL, lock_time BIGINT UNSIGNED DEFAULT NULL, "
                "binlog_pos VARCHAR(128) DEFAULT NULL, innodb_from_lsn BIGINT UNSIGNED DEFAULT NULL, "
                "innodb_to_lsn BIGINT UNSIGNED DEFAULT NULL, partial ENUM('Y','N') DEFAULT NULL, "
                "incremental ENUM('Y','N') DEFAULT NULL, format ENUM('file','tar','mbstream') DEFAULT NULL, "
                "compressed ENUM('Y','N') DEFAULT NULL"
                ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb3");
  if (!st.ok()) {
    return st.With(std::string("--history: cannot create ") + kHistoryTable +
                   " (the backup user needs CREATE and INSERT on it)");
  }
  return Status::Ok();
}

Status AddHistoryRow(mysql::Connection& c, const backupdir::BackupInfo& i) {
  auto q = [&](const std::string& s) { return c.Quote(s); };
  auto yn = [](bool b) { return std::string(b ? "'Y'" : "'N'"); };
  const std::string sql =
      std::string("INSERT INTO ") + kHistoryTable +
      " (uuid, name, tool_name, tool_command, tool_version, ibbackup_version, server_version, start_time, "
      "end_time, lock_time, binlog_pos, innodb_from_lsn, innodb_to_lsn, partial, incremental, format, "
      "compressed) VALUES (" +
      q(i.uuid) + ", " + q(i.name) + ", " + q(i.tool_name) + ", " + q(i.tool_command) + ", " +
      q(i.tool_version) + ", " + q(i.tool_version) + ", " + q(i.server_version) + ", " + q(i.start_time) +
      ", " + q(i.end_time) + ", " + std::to_string(i.lock_time_s) + ", " +
      q(backupdir::FormatBinlogPos(i.binlog)) + ", " + std::to_string(i.from_lsn) + ", " +
      std::to_string(i.to_lsn) + ", " + yn(i.partial) + ", " + yn(i.incremental) + ", " +
      q(i.format == "file" ? "file" : "mbstream") + ", " + yn(i.compressed) + ")";
  Status st = c.Execute(sql);
  if (!st.ok()) return st.With(std::string("--history: writing the backup's row into ") + kHistoryTable);
  return Status::Ok();
}

Result<uint64_t> HistoryBaseLsn(mysql::Connection& c, const std::string& name, const std::string& uuid) {
  const std::string where = !uuid.empty() ? "uuid = " + c.Quote(uuid) : "name = " + c.Quote(name);
  auto v = c.QueryValue(std::string("SELECT innodb_to_lsn FROM ") + kHistoryTable + " WHERE " + where +
                        " AND innodb_to_lsn IS NOT NULL ORDER BY end_time DESC LIMIT 1");
  if (!v.ok()) return v.status().With(std::string("reading ") + kHistoryTable);
  const std::string what = !uuid.empty() ? "backup " + uuid : "backup series '" + name + "'";
  if (!v.value() || v.value()->empty()) {
    return Error(ErrorCode::kNotFound, std::string(kHistoryTable) + " has no " + what +
                                           " (--incremental-history-" + (uuid.empty() ? "name" : "uuid") +
                                           "): take a full backup with --history first");
  }
  return static_cast<uint64_t>(std::strtoull(v.value()->c_str(), nullptr, 10));
}

}  // namespace xbak::backup
