// `xbak --backup`: a hot, consistent copy of a running MariaDB 10.11 server.
//
// The sequence (see docs/design.md):
//  1. start following the redo log from the current checkpoint;
//  2. BACKUP STAGE START; copy every InnoDB file page by page in parallel
//     while the server keeps writing (the redo log covers the changes);
//  3. BACKUP STAGE FLUSH, BLOCK_DDL: reconcile tables created, renamed or
//     dropped meanwhile; copy the non-InnoDB files;
//  4. BACKUP STAGE BLOCK_COMMIT: record the binlog/GTID position, make the
//     redo copy reach the server's current LSN, stop it;
//  5. BACKUP STAGE END; write the metadata, xtrabackup_checkpoints last.
#pragma once

#include <chrono>
#include <string>

#include "xbak/backupdir/table_filter.h"
#include "xbak/mysql/connection.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/encrypt.h"
#include "xbak/util/status.h"

namespace xbak::backup {

struct BackupOptions {
  mysql::ConnectOptions conn;
  // Ask the server for a log checkpoint before the copy starts (SET GLOBAL
  // innodb_log_checkpoint_now=ON), so that the backup carries and its prepare
  // applies less redo log.
  bool checkpoint_now = false;
  std::string tool_name = "xbak";  // as the info file and --history record it
  // --extended-validation: encrypted pages decrypted with the server's keys
  // and their plain content checked too (tablespace_copy.h's PageKeys).
  bool extended_validation = false;
  // --incremental-basedir, when the base LSN came from a backup directory:
  // its backup-my.cnf is checked against the server (innodb_undo_tablespaces).
  std::string incremental_basedir;
  std::string target_dir;  // destination directory (ignored with --stream)
  std::string stream;      // "" (directory) or "xbstream" (to stdout or FIFOs)
  int fifo_streams = 1;    // >1: N named pipes in fifo_dir instead of stdout
  std::string fifo_dir;
  unsigned fifo_timeout_s = 60;
  bool compress = false;  // data files and the redo log as NAME.zst / NAME.lz4
  sink::CompressOptions compress_options;
  bool encrypt = false;  // every file as NAME.xbenc (after compression: NAME.zst.xbenc)
  sink::EncryptOptions encrypt_options;
  std::string datadir;  // overrides @@datadir
  int parallel = 1;
  // Incremental backup: only pages changed after this LSN (the base's to_lsn,
  // from --incremental-basedir, or --incremental-lsn).
  bool incremental = false;
  uint64_t incremental_lsn = 0;
  bool slave_info = false;
  bool galera_info = false;              // --galera-info
  bool no_server_version_check = false;  // an untested server version is backed up all the same
  bool safe_slave_backup = false;        // --safe-slave-backup
  bool no_lock = false;                  // --no-lock: no BACKUP STAGE; DDL during the backup fails it
  std::chrono::seconds safe_slave_timeout{300};
  int page_retries = 10;
  unsigned lock_wait_timeout_s = 0;  // 0: server default
  unsigned log_wait_timeout_s = 60;  // no redo progress for this long fails the backup
  // The redo log copy never waits for the output: what the output has not
  // taken yet is held in memory up to redo_spool_memory, then in an unnamed
  // file in tmpdir ("" = $TMPDIR or /tmp).
  std::string tmpdir;
  bool history = false;                  // --history[=NAME]: a row in mysql.mariadb_backup_history
  std::string history_name;              // NAME ("" for none)
  std::string incremental_history_name;  // base LSN: the latest backup of this --history series
  std::string incremental_history_uuid;  // base LSN: this backup's row
  std::string extra_lsndir;              // --extra-lsndir: copies of xtrabackup_checkpoints and _info
  size_t redo_spool_memory = size_t{16} << 20;
  uint64_t throttle = 0;  // --throttle: data file reads of 1 MiB per second (0 = unlimited)
  std::chrono::milliseconds log_copy_interval{20};  // longest redo poll interval of an idle server
  backupdir::TableFilterOptions tables;             // partial backups: --databases, --tables, ...
  std::string tool_command;                         // for xtrabackup_info (password removed)
  std::chrono::milliseconds progress_interval{2000};
};

Status RunBackup(const BackupOptions& opts);

}  // namespace xbak::backup
