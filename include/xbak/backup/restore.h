// `xbak --restore --target-dir=FULL [--incremental-dir=INC ...] --datadir=D`:
// a chain (a full backup and its incrementals, in order) straight into an
// empty datadir, in one pass, without changing the backups.
//
// The full backup's files are written into D once; its redo log is applied
// where the backup keeps it; each incremental's deltas are applied onto D and
// its log after them (the same engine as --prepare, pointed at D). Nothing is
// staged but the small prepared ib_logfile0, kept aside in the log directory
// until the last step. The backups are only read: unlike --prepare, which
// rewrites a backup in place, a chain can be restored any number of times.
//
// Before anything is written, the chain is checked (each incremental must
// start where the one before ends: a missing, reordered or repeated one is
// refused), and so is the full backup's log (keys of an encrypted one).
//
// Until the very end the datadir is marked unfinished: its ib_logfile0 is a
// placeholder the server refuses to start on, and xbak_restore_in_progress
// records the chain and the steps done. Running the same command again after
// a crash or kill resumes after the last finished step (each step is itself
// restartable); another chain is refused.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "xbak/backup/prepare_crypt.h"
#include "xbak/backup/restore_places.h"
#include "xbak/util/status.h"

namespace xbak {

struct RestoreOptions {
  std::string full_dir;                       // --target-dir
  std::vector<std::string> incremental_dirs;  // --incremental-dir, repeated, in order
  RestoreDirs dirs;                           // --datadir and where the log, ibdata, undo go
  int parallel = 1;
  uint64_t use_memory = 256ull << 20;  // for each redo step
  std::chrono::milliseconds progress_interval{2000};
  KeyOptions keys;
};

inline constexpr const char* kRestoreMarkerFile = "xbak_restore_in_progress";

Status RunRestore(const RestoreOptions& o);

}  // namespace xbak
