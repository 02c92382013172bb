// `xbak --prepare --target-dir=DIR`: turns a fuzzy hot backup into a
// consistent copy, without mariabackup: the DDL markers the backup wrote
// (.del, .ren, .new) are carried out, the redo log copied during the backup is
// applied (redo_apply.h), and the backup is left as mariabackup leaves it: a
// fresh 12304-byte ib_logfile0 whose checkpoint is the end of the applied log,
// and xtrabackup_checkpoints saying `log-applied`.
//
// Restartable: until the very last step the backup still says
// `full-backuped`, so copy-back refuses it and running --prepare again redoes
// what is missing (the apply skips pages by LSN; markers are consumed one by
// one).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "xbak/prepare/prepare_crypt.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

struct PrepareOptions {
  std::string target_dir;
  int parallel = 1;
  uint64_t use_memory = 256ull << 20;
  std::chrono::milliseconds progress_interval{2000};
  KeyOptions keys;  // an encrypted backup's key file, over backup-my.cnf
  // The backup's server version outside the tested ones is prepared all the
  // same (backupdir::CheckBackupServerVersion).
  bool no_server_version_check = false;
  // Where the redo log to apply is read (default: target_dir), and where the
  // fresh ib_logfile0 of the prepared state is written (default:
  // target_dir/ib_logfile0). `xbak --restore` reads each backup's log where
  // it is and keeps the new one aside until the whole chain is in.
  std::string log_dir;
  std::string prepared_log;
  // false: the pages written are not synced before the prepared state is
  // declared; the caller makes everything durable at once later (xbak
  // --restore from streams, which starts over after a crash anyway: a syncfs
  // per step would also write out the next stream's staged files, which are
  // deleted soon after).
  bool sync_data = true;
  // `xbak --restore`, when an incremental follows: the records of the pages
  // it returns are not applied (RedoApplyOptions::superseded).
  std::function<Result<PageSetPtr>(const LogDdl&)> superseded;
  // The log's first pass, when the caller made it (RedoApplyOptions::checked).
  CheckedLogPtr checked;
  bool ignore_corrupt_pages = false;  // --innodb-force-recovery (RedoApplyOptions::ignore_corrupt_pages)
};

Status RunPrepare(const PrepareOptions& o);

// The redo step alone, on a directory whose checkpoints file says
// `full-backuped` (a full backup, or a full backup onto which an
// incremental's deltas and log were just installed).
// `before_write` runs after the log was checked and before anything is written.
Status ApplyLogAndMarkPrepared(const PrepareOptions& o, std::function<Status()> before_write = nullptr);

}  // namespace xbak::prepare
