// The metadata files of a backup directory, in mariabackup's exact text
// formats so that either tool can read what the other wrote (their names,
// xtrabackup_* or mariadb_backup_*, in meta_names.h):
//   checkpoints    (backup type and LSNs; written LAST, so its presence means
//                   the backup is complete)
//   info           (who/when/what, for humans and tooling)
//   binlog_info    (binlog file, position and GTID at the copy point)
//   backup-my.cnf  (server settings needed by --prepare)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xbak/backupdir/meta_names.h"
#include "xbak/util/status.h"

namespace xbak::backupdir {

inline constexpr const char* kBackupCnfFile = "backup-my.cnf";

struct Checkpoints {
  std::string backup_type;  // "full-backuped", "incremental" or "log-applied"
  uint64_t from_lsn = 0;
  uint64_t to_lsn = 0;
  uint64_t last_lsn = 0;
  bool recover_binlog_info = false;
};

std::string FormatCheckpoints(const Checkpoints& c);
// `origin` names the file in error messages.
Result<Checkpoints> ParseCheckpoints(const std::string& text, const std::string& origin);
// The checkpoints of the backup in `dir` (either name); a directory without a
// readable one "is not a complete backup" (a backup that did not finish
// writes it last). ReadCheckpointsText: the file as it is.
Result<Checkpoints> ReadCheckpoints(const std::string& dir);
Result<std::string> ReadCheckpointsText(const std::string& dir);

// The rule of a backup chain: incremental `next` (in next_dir) continues the
// backup `prev` (in prev_dir) when it starts at the LSN where prev ends.
// Otherwise an error that says which way it is broken: a gap (an incremental
// missing in between) or the wrong order (already applied, older, or given
// twice).
// The to_lsn of the backup in `basedir` (--incremental-basedir), where an
// incremental of it starts; refused, naming the directory, when it holds no
// complete backup.
Result<uint64_t> IncrementalBaseLsn(const std::string& basedir);

Status CheckChainLink(const Checkpoints& prev, const std::string& prev_dir, const Checkpoints& next,
                      const std::string& next_dir);

struct BinlogPosition {
  std::string file;  // empty when the server has no binary log
  uint64_t position = 0;
  std::string gtid;  // gtid_current_pos
};

std::string FormatBinlogInfo(const BinlogPosition& b);
// xtrabackup_binlog_info's text ("FILE\tPOSITION\tGTID\n"; mariabackup's and
// ours); `origin` names it in errors. A file without a binlog line is an
// empty position.
Result<BinlogPosition> ParseBinlogInfo(std::string_view text, const std::string& origin);

struct BackupInfo {
  std::string uuid;
  std::string name;                // --history=NAME
  std::string tool_name = "xbak";  // the name it was run as ("mariabackup" through such a link)
  std::string tool_command;
  std::string tool_version;
  std::string server_version;
  std::string start_time;  // "YYYY-MM-DD HH:MM:SS"
  std::string end_time;
  uint64_t lock_time_s = 0;
  BinlogPosition binlog;
  uint64_t from_lsn = 0;
  uint64_t to_lsn = 0;
  bool incremental = false;
  bool partial = false;         // --databases/--tables...: not every table
  std::string format = "file";  // "file" or "xbstream"
  bool compressed = false;
  // --no-lock: written as "backup_locks = none" (xbak's line; other readers
  // skip it), which tells --prepare that no binary log position was taken
  // under locks and InnoDB's own record is the one to give.
  bool no_lock = false;
};

std::string FormatInfo(const BackupInfo& i);
// The value of one "field = value" line of xtrabackup_info's text (the
// last, as mariabackup appends); "" when there is none.
std::string InfoField(std::string_view info, std::string_view field);
// server_version of DIR's info file, either name ("10.11.19-MariaDB-0+deb12u1-log"),
// "" when the file or the line is missing.
std::string InfoServerVersion(const std::string& dir);
// "filename 'F', position 'P', GTID of the last change 'G'" ("" without a binlog),
// as xtrabackup_info and the history table give it.
std::string FormatBinlogPos(const BinlogPosition& b);

struct ServerSettings {
  std::string checksum_algorithm;
  std::string data_file_path;
  uint64_t log_file_size = 0;
  uint32_t page_size = 16384;
  uint32_t undo_tablespaces = 0;
  std::string compression_level = "6";
  // The server's active page compression providers (provider_lz4 ...), so
  // that mariabackup --prepare loads them as it does for its own backups:
  // plugin_dir="DIR" and plugin_load=name=library;... ("" for none).
  std::string plugin_dir;
  std::string plugin_load;
  // Further server settings written after them, in order: the encryption
  // plugin's (file_key_management_filename=...) and innodb_encrypt_*.
  std::vector<std::pair<std::string, std::string>> plugin_options;
};

std::string FormatBackupCnf(const ServerSettings& s);
// What prepare needs from DIR/backup-my.cnf, with the server's defaults for
// what it does not say. Bad values are kCorrupt, naming the file.
struct BackupCnf {
  uint32_t page_size = 16384;  // innodb_page_size: a power of two in 4096..65536
  // The system tablespace's file names in page order (innodb_data_file_path).
  std::vector<std::string> system_files = {"ibdata1"};
  // The page number of each one's first page: the sizes innodb_data_file_path
  // gives the files before it (only the last may autoextend).
  std::vector<uint32_t> system_first_page = {0};
  // innodb_compression_level (0..9): the level PAGE_COMPRESSED pages are
  // written back with, as the server's recovery would.
  int compression_level = 6;
  // innodb_undo_tablespaces when the backup was taken (none if not recorded).
  std::optional<uint32_t> undo_tablespaces;
};
Result<BackupCnf> ReadBackupCnf(const std::string& dir);
// ReadBackupCnf(dir)->page_size.
Result<uint32_t> BackupPageSize(const std::string& dir);

// --extra-lsndir: the directory made and tried before a backup starts (so
// that one the next incremental could not read is refused up front), then,
// once the backup is complete, copies of its checkpoints and info files.
Status PrepareExtraLsnDir(const std::string& dir);
// `scheme`: the names the backup itself has.
Status WriteExtraLsnDir(const std::string& dir, MetaScheme scheme, const std::string& checkpoints,
                        const std::string& info);

// A random RFC 4122 version 4 UUID (from /dev/urandom via OpenSSL-free code).
std::string NewUuid();
// Local time as "YYYY-MM-DD HH:MM:SS".
std::string NowString();

}  // namespace xbak::backupdir
