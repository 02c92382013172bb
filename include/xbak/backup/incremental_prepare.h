// `xbak --prepare --incremental-dir=INC --target-dir=FULL`: applies an
// incremental backup's .delta files onto a prepared full backup, with N
// threads pulling delta files from a queue (mariabackup applies them one after
// another). Everything is validated before the first byte is written.
//
// xbak cannot apply redo yet: after the deltas, INC's redo log is installed
// in FULL and FULL is marked `full-backuped` at INC's LSNs, so that
// `mariabackup --prepare --target-dir=FULL` finishes the step (it replays that
// log, skipping by page LSN, as its own incremental prepare does). Until then
// copy-back refuses FULL.
#pragma once

#include <chrono>
#include <string>

#include "xbak/util/status.h"

namespace xbak {

struct IncrementalPrepareOptions {
  std::string target_dir;       // FULL (prepared: backup_type = log-applied)
  std::string incremental_dir;  // INC (backup_type = incremental, from_lsn = FULL's to_lsn)
  int parallel = 1;
  // Deltas bigger than this are cut (at block boundaries) into pieces that
  // different threads apply; tests lower it to exercise the split.
  uint64_t piece_bytes = 32ull << 20;
  std::chrono::milliseconds progress_interval{2000};
};

Status RunIncrementalPrepare(const IncrementalPrepareOptions& opts);

}  // namespace xbak
