// `xbak --prepare --incremental-dir=INC --target-dir=FULL`: applies an
// incremental backup's .delta files onto a prepared full backup, with N
// threads pulling delta files from a queue (mariabackup applies them one after
// another). Everything is validated before the first byte is written.
//
// After the deltas, INC's redo log is installed in FULL, FULL is marked
// `full-backuped` at INC's LSNs (a restartable state: copy-back refuses it),
// and the log is applied as for a full backup (prepare.h), which leaves FULL
// `log-applied` at INC's point. Re-running the same command after a crash in
// the redo step finishes it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "xbak/prepare/prepare_crypt.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

struct IncrementalPrepareOptions {
  std::string target_dir;       // FULL (prepared: backup_type = log-applied)
  std::string incremental_dir;  // INC (backup_type = incremental, from_lsn = FULL's to_lsn)
  int parallel = 1;
  // Deltas bigger than this are cut (at block boundaries) into pieces that
  // different threads apply; tests lower it to exercise the split.
  uint64_t piece_bytes = 32ull << 20;
  uint64_t use_memory = 256ull << 20;  // for the redo step
  std::chrono::milliseconds progress_interval{2000};
  KeyOptions keys;                       // an encrypted backup's key file, over backup-my.cnf
  bool no_server_version_check = false;  // as PrepareOptions'
  // `xbak --restore`: INC's redo log is applied where INC keeps it instead of
  // being copied into target_dir, and the prepared log goes to this path
  // (prepare.h) instead of target_dir/ib_logfile0.
  bool log_from_incremental = false;
  std::string prepared_log;
  bool sync_data = true;              // as PrepareOptions::sync_data, for both steps
  bool ignore_corrupt_pages = false;  // as PrepareOptions', for the redo step
  std::function<Result<PageSetPtr>(const LogDdl&)> superseded;  // as PrepareOptions::superseded
  // INC's log's first pass (CheckRedoLog), when the caller started it already
  // (xbak --restore from streams, beside the step before's redo): waited for
  // where the apply would otherwise make it.
  std::function<Result<CheckedLogPtr>()> checked_log;
  // INC is a staged incremental of `xbak --restore --from-stream`: its
  // NAME.xbapplied records are deltas written as they arrived (ScanIncremental).
  bool applied_records = false;
  // Top-level directories of target_dir that are not the backup's (a restore
  // from streams unpacks them into one there): never taken for a database
  // dropped between the backups.
  std::vector<std::string> foreign_dirs;
};

Status RunIncrementalPrepare(const IncrementalPrepareOptions& opts);

}  // namespace xbak::prepare
