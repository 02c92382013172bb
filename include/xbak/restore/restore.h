// `xbak --restore --target-dir=FULL [--incremental-dir=INC ...] --datadir=D`:
// a chain (a full backup and its incrementals, in order) straight into an
// empty datadir, in one pass, without changing the backups.
//
// The full backup's files are written into D once; its redo log is applied
// where the backup keeps it; each incremental's deltas are applied onto D and
// its log after them (the same engine as --prepare, pointed at D). A step's
// log leaves out the records of the pages the next incremental's deltas hold
// (prepare/delta_pages.h): they are written whole right after. Nothing is
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
//
// From streams (RestoreOptions::streams), e.g. `xbcloud get` into named pipes:
// see restore_streams.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xbak/crypt/stream.h"
#include "xbak/prepare/prepare_crypt.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/restore/restore_places.h"
#include "xbak/util/status.h"

namespace xbak::restore {

struct RestoreOptions {
  std::string full_dir;                       // --target-dir
  std::vector<std::string> incremental_dirs;  // --incremental-dir, repeated, in order
  RestoreDirs dirs;                           // --datadir and where the log, ibdata, undo go
  int parallel = 1;
  uint64_t use_memory = 256ull << 20;  // for each redo step
  std::chrono::milliseconds progress_interval{2000};
  prepare::KeyOptions keys;
  bool no_server_version_check = false;  // backups of an untested server version restored all the same
  // --from-stream, instead of directories: xbstreams (files, named pipes, or
  // "-" for stdin), the full backup's first, then each incremental's, each
  // read once to its end, two at a time. Each is unpacked into D/xbak-restore-staging (on the
  // datadir's filesystem: the full backup's files are then renamed into
  // place, not copied; .zst/.lz4 files decompressed there), and the chain is
  // restored as above; an incremental's staged files are removed once it is
  // applied. A restore from streams that failed is started over by the same
  // command (streams cannot be read twice): what it had written is removed
  // first, as its journal proves the directories were empty before it.
  std::vector<std::string> streams;
  // --encrypt-key-file with --from-stream: an encrypted stream's X.xbenc files
  // are decrypted as they are unpacked into the staging directory. (Backups
  // in directories are read as they are, so an encrypted one is refused: it
  // would have to be decrypted where it is.)
  const crypt::KeyRing* stream_keys = nullptr;
  // Internal to the restore from streams: incremental_dirs are the staging
  // directories the streams are being unpacked into, and this returns once
  // incremental K (1-based) is whole, so that step K-1's deltas are applied
  // while stream K arrives (its redo step waits for it: it skips K's pages).
  std::function<Status(size_t)> await_incremental;
  // And this is called once incremental K's staged copy is removed (applied).
  std::function<void(size_t)> released_incremental;
  // And this once step K-1's deltas and DDL markers are in the datadir, as
  // its redo step begins (its log does `ddl`): incremental K's deltas may be
  // written as its stream arrives (direct_delta.h).
  std::function<void(size_t k, uint32_t page_size, const prepare::LogDdl& ddl)> open_deltas;
  // For a caller that goes on writing into the datadir (xbcloud restore
  // replays binary logs on it): everything is done but the last rename, so
  // the datadir stays marked unfinished (placeholder ib_logfile0, journal);
  // the prepared log is left at StagedLogPath(dirs). A re-run of a restore
  // from streams still starts over.
  bool hold = false;
};
// Where the prepared redo log waits until the restore is finished.
std::string StagedLogPath(const RestoreDirs& dirs);

inline constexpr const char* kRestoreMarkerFile = "xbak_restore_in_progress";
// Where a restore from streams unpacks them, inside the datadir.
inline constexpr const char* kStagingDir = "xbak-restore-staging";
// The first line of the journal of a restore from streams.
inline constexpr const char* kStreamRestoreJournalHead = "xbak restore from streams\n";

Status RunRestore(const RestoreOptions& o);

// The parts: the chain of directories (o.full_dir, o.incremental_dirs) into
// the datadir; `streamed` when they were staged in it by
// RunRestoreFromStreams (the full backup's files are then moved, not copied,
// and each staged incremental removed once applied).
Status RestoreChain(const RestoreOptions& o, bool streamed);
Status RunRestoreFromStreams(const RestoreOptions& o);
// The ib_logfile0 an unfinished restore leaves in dirs.log_dir (if there is
// none yet): too small to be a redo log, so mariadbd refuses to start.
Status WritePlaceholderLog(const RestoreDirs& dirs);

}  // namespace xbak::restore
