#include "xbak/prepare/incremental_prepare.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/server.h"
#include "xbak/backupdir/table_filter.h"
#include "xbak/prepare/delta_apply.h"
#include "xbak/prepare/export.h"
#include "xbak/prepare/prepare.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/parallel.h"
#include "xbak/util/phase_clock.h"
#include "xbak/util/progress.h"

namespace xbak::prepare {
namespace {

// Present while an incremental is being applied. It holds the incremental's
// identity and the base's original xtrabackup_checkpoints (which is removed
// meanwhile, so that nothing can take a half-applied base for a good one).
constexpr const char* kInProgressFile = "xbak_incremental_in_progress";

Status FinishRedo(const IncrementalPrepareOptions& o, CheckedLogPtr checked = nullptr) {
  PrepareOptions po;
  po.target_dir = o.target_dir;
  po.parallel = o.parallel;
  po.use_memory = o.use_memory;
  po.progress_interval = o.progress_interval;
  po.keys = o.keys;
  if (o.log_from_incremental) po.log_dir = o.incremental_dir;
  po.prepared_log = o.prepared_log;
  po.sync_data = o.sync_data;
  po.ignore_corrupt_pages = o.ignore_corrupt_pages;
  po.superseded = o.superseded;
  po.checked = std::move(checked);
  return ApplyLogAndMarkPrepared(po);
}

// One apply of INC into FULL, a method per step, in order (Run). Steps 1 and
// 2 only read; from step 3 on FULL is marked "in progress" until step 7, so
// that a crash anywhere in between makes the next run apply it all again
// (deltas are idempotent). What the steps share is the state below.
struct IncrementalApply {
  explicit IncrementalApply(const IncrementalPrepareOptions& opts)
      : o(opts),
        full(opts.target_dir),
        inc(opts.incremental_dir),
        marker(util::JoinPath(opts.target_dir, kInProgressFile)),
        scheme(backupdir::SchemeOf(opts.target_dir)),
        progress("incremental apply", opts.progress_interval) {}

  Status Run();

  // 1. The chain, before anything is written. `redo_only`: the deltas went
  // in already and only the redo step is left.
  Status CheckChain(bool* redo_only);
  // 2. Every delta validated against the base as it will be after the
  // markers, and what the redo step would refuse, refused now.
  Status ReadBase();
  Status ValidateDeltas();
  Status CheckRedo();
  // 3. From here FULL changes: first make it unmistakably "in progress".
  Status MarkInProgress();
  // 4. DDL markers, in mariabackup's order: .del, .ren, .new; and tables
  // renamed between the backups.
  Status ApplyMarkers();
  // 5. The deltas on `parallel` threads, in pieces of about o.piece_bytes
  // (whole blocks), largest first. Files cut into several pieces are created
  // and sized before any piece runs.
  Status ApplyDeltas();
  // 6. Tables dropped between the backups; non-InnoDB files as of the incremental.
  Status ReplaceOtherFiles();
  // 7. One syncfs for every file written above, instead of one fsync per
  // file (tens of thousands of small tables would make that a storm); only
  // then is FULL a full backup at the incremental's point, with the
  // incremental's log: a restartable state (copy-back refuses it).
  Status Finish();

  std::string CheckpointsPath() const {
    return util::JoinPath(full, backupdir::MetaName(backupdir::Meta::kCheckpoints, scheme));
  }

  const IncrementalPrepareOptions& o;
  const std::string& full;
  const std::string& inc;
  const std::string marker;
  // FULL's metadata names, which it keeps (an interrupted apply removed its
  // checkpoints, but not its info files, which say the same).
  const backupdir::MetaScheme scheme;
  util::PhaseClock clock;
  util::Progress progress;

  backupdir::Checkpoints icp, fcp;
  std::string identity;      // of INC, in the marker
  std::string base_cp_text;  // FULL's checkpoints file before the apply
  bool resuming = false;
  backupdir::BackupCnf fcnf;
  uint32_t fps = 0;  // innodb_page_size

  IncScan scan;
  std::map<std::string, std::string> renamed_from;  // new rel -> old rel
  std::map<std::string, std::string> renamed_to;    // old rel -> new rel
  std::set<std::string> deleted, newfiles;          // rels (.ibd)
  // The base's file-per-table tablespaces by space id: a table renamed between
  // the two backups has its delta under the new name (as in mariabackup, the
  // space id, not the name, says which file a delta belongs to).
  std::map<uint32_t, std::string> base_by_id;
  std::map<std::string, innodb::SpaceHeader> base_page0;  // rel in the base -> its page 0
  std::set<std::string> base_special;                     // what CheckRedoApplicable must open again
  std::map<std::string, std::string> moves;  // base rel -> new rel, for renames between the backups
  uint64_t system_last_size = 0;
  size_t deltas_applied = 0;
  size_t deltas_arrived = 0;  // of those, written as their stream arrived (DeltaJob::applied)
  CheckedLogPtr checked_log;  // CheckRedo's pass over INC's log, for the redo step
  // The base's page 0s and the deltas' first pages, asked of the disk ahead of the threads that
  // read them (util/prefetch.h); stopped when the apply ends.
  std::optional<util::Prefetcher> ahead;

  // `dst` holds the tablespace the incremental copied as `from` (its delta's space id).
  bool DstHoldsCopiedSpace(const std::string& from, const std::string& dst) const {
    for (const auto& j : scan.deltas) {
      if (j.rel != from) continue;
      auto h = ReadPage0(dst, fps);
      return h.ok() && h->space_id == j.meta.space_id;
    }
    return false;
  }
  std::vector<std::string> top;  // FULL's entries after step 6
  // A top-level directory of FULL that is not a database of the backup's.
  bool IsForeignDir(const std::string& db) const;
};

Status IncrementalApply::Run() {
  bool redo_only = false;
  XBAK_RETURN_IF_ERROR(CheckChain(&redo_only));
  if (redo_only) return FinishRedo(o);
  // The first pass over INC's log reads nothing else: it runs while the
  // base's first pages and the deltas are read (CheckRedo takes it).
  std::future<Result<CheckedLogPtr>> log_pass;
  if (!resuming && o.checked_log) {
    log_pass = std::async(std::launch::deferred, o.checked_log);
  } else if (!resuming) {
    log_pass = std::async(std::launch::async, [this] {
      return CheckRedoLog(inc, full, std::max(icp.to_lsn, icp.last_lsn), o.keys);
    });
  }
  XBAK_RETURN_IF_ERROR(ReadBase());
  XBAK_RETURN_IF_ERROR(ValidateDeltas());
  if (log_pass.valid()) {
    XBAK_ASSIGN_OR_RETURN(checked_log, log_pass.get());
  }
  XBAK_RETURN_IF_ERROR(CheckRedo());
  clock.Mark("redo check");
  XBAK_RETURN_IF_ERROR(MarkInProgress());
  XBAK_RETURN_IF_ERROR(ApplyMarkers());
  XBAK_RETURN_IF_ERROR(ApplyDeltas());
  clock.Mark("deltas");
  XBAK_RETURN_IF_ERROR(ReplaceOtherFiles());
  clock.Mark("other files");
  XBAK_RETURN_IF_ERROR(Finish());
  progress.Finish(true);
  clock.Mark("sync");
  const double delta_step = clock.Total();
  util::LogInfo("applied " + std::to_string(deltas_applied) + " deltas (" + std::to_string(deltas_arrived) +
                " as their stream arrived) and " + std::to_string(newfiles.size()) + " new tables of " + inc +
                " with " + std::to_string(o.parallel) + " threads (" + clock.Summary() + ")");
  XBAK_RETURN_IF_ERROR(FinishRedo(o, std::move(checked_log)));
  char b[128];
  std::snprintf(b, sizeof b, "incremental prepare done in %.2f s: delta step %.2f s, redo step %.2f s",
                clock.Total(), delta_step, clock.Total() - delta_step);
  util::LogInfo(b);
  return Status::Ok();
}

Status IncrementalApply::CheckChain(bool* redo_only) {
  XBAK_ASSIGN_OR_RETURN(icp, backupdir::ReadCheckpoints(inc));
  if (icp.backup_type != "incremental") {
    return Error(ErrorCode::kInvalidArgument,
                 inc + " is not an incremental backup (backup_type = " + icp.backup_type + ")");
  }
  XBAK_RETURN_IF_ERROR(backupdir::CheckBackupServerVersion(inc, o.no_server_version_check));
  if (util::PathExists(util::JoinPath(full, kExportedFile))) {
    // The export server wrote into the base (rollback, purge) past its
    // to_lsn: pages an incremental holds would land on pages it changed.
    return Error(ErrorCode::kUnsupported,
                 full +
                     " was exported (xbak --prepare --export started a server on it): "
                     "it can no longer take incrementals; apply them to another copy of "
                     "the base, then export");
  }
  {
    // A table in one and not the other would be half a table after the apply.
    XBAK_ASSIGN_OR_RETURN(backupdir::TableFilter ifilter, backupdir::ReadTableFilter(inc));
    XBAK_ASSIGN_OR_RETURN(backupdir::TableFilter ffilter, backupdir::ReadTableFilter(full));
    if (ifilter.Serialize() != ffilter.Serialize()) {
      return Error(ErrorCode::kUnsupported,
                   inc + " was taken with other --databases/--tables options than " + full +
                       " (compare their " + backupdir::kTableFilterFile +
                       " files): an incremental applies only to a base of the same tables");
    }
  }
  identity = "incremental " + inc + " from_lsn " + std::to_string(icp.from_lsn) + " to_lsn " +
             std::to_string(icp.to_lsn) + "\n";
  if (util::PathExists(marker)) {
    XBAK_ASSIGN_OR_RETURN(std::string m, util::ReadSmallFile(marker));
    if (m.rfind(identity, 0) != 0) {
      return Error(ErrorCode::kInvalidArgument,
                   "an earlier apply of another incremental into " + full + " was interrupted (" + marker +
                       " says: " + m.substr(0, m.find('\n')) +
                       "); finish it by re-running that one, or restore the base");
    }
    base_cp_text = m.substr(identity.size());
    resuming = true;
    util::LogWarning(
        "an earlier apply of this incremental was interrupted; applying it again (deltas are idempotent)");
  } else {
    // Its text, kept in the marker while the apply runs.
    XBAK_ASSIGN_OR_RETURN(base_cp_text, backupdir::ReadCheckpointsText(full));
  }
  XBAK_ASSIGN_OR_RETURN(fcp, backupdir::ParseCheckpoints(base_cp_text, CheckpointsPath()));
  if (!resuming && fcp.backup_type == "full-backuped" && fcp.to_lsn == icp.to_lsn &&
      fcp.last_lsn == icp.last_lsn) {
    // The deltas went in, the redo step was interrupted: finish it.
    util::LogInfo("the deltas of " + inc + " are already in " + full + "; applying its redo log");
    *redo_only = true;
    return Status::Ok();
  }
  if (fcp.backup_type != "log-applied") {
    return Error(ErrorCode::kInvalidArgument, "the full backup in " + full +
                                                  " is not prepared (backup_type = " + fcp.backup_type +
                                                  "); run xbak --prepare --target-dir=" + full + " first");
  }
  XBAK_RETURN_IF_ERROR(backupdir::CheckChainLink(fcp, full, icp, inc));
  XBAK_ASSIGN_OR_RETURN(fcnf, backupdir::ReadBackupCnf(full));
  fps = fcnf.page_size;
  XBAK_ASSIGN_OR_RETURN(uint32_t ips, backupdir::BackupPageSize(inc));
  if (fps != ips) {
    return Error(ErrorCode::kInvalidArgument, "innodb_page_size differs: " + std::to_string(fps) + " in " +
                                                  full + ", " + std::to_string(ips) + " in " + inc);
  }
  return Status::Ok();
}

Status IncrementalApply::ReadBase() {
  XBAK_ASSIGN_OR_RETURN(scan, ScanIncremental(inc, o.parallel, o.applied_records));
  clock.Mark("listing");
  for (auto& [from, to] : scan.rens) {
    renamed_from[to + ".ibd"] = from + ".ibd";
    renamed_to[from + ".ibd"] = to + ".ibd";
  }
  for (auto& d : scan.dels) deleted.insert(d + ".ibd");
  for (auto& n : scan.news) newfiles.insert(n + ".ibd");
  std::vector<std::string> base_ibds;
  XBAK_ASSIGN_OR_RETURN(auto base_top, util::ListDir(full));
  for (const auto& db : base_top) {
    if (!util::IsDirectory(util::JoinPath(full, db))) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(util::JoinPath(full, db)));
    for (const auto& f : files) {
      std::string rel = db + "/" + f;
      // NAME.ibd.xbmove: a rename of step 4 that an interrupted run left
      // half done; it is found by its space id and finished like the others.
      if (!(f.ends_with(".ibd") || f.ends_with(".ibd.xbmove")) || deleted.count(rel)) continue;
      base_ibds.push_back(rel);
    }
  }
  {
    // Thousands of small tables: their first pages are read on all threads, and, with the
    // deltas' first pages that ValidateDeltas reads next, asked of the disk ahead of them.
    ahead.emplace(FirstPagesAhead(full, base_ibds, fps, scan.deltas));
    std::vector<std::optional<innodb::SpaceHeader>> heads(base_ibds.size());
    std::vector<char> special(base_ibds.size(), 0);
    std::atomic<bool> cancel{false};
    XBAK_RETURN_IF_ERROR(util::RunParallel(
        base_ibds.size(), o.parallel,
        [&](size_t i) {
          bool s = true;
          auto h = ReadPage0(util::JoinPath(full, base_ibds[i]), fps, &s);
          if (h.ok()) heads[i] = *h;
          special[i] = s;  // unreadable: the redo step's check looks at it too
          return Status::Ok();
        },
        &cancel));
    for (size_t i = 0; i < base_ibds.size(); i++) {
      if (special[i]) base_special.insert(base_ibds[i]);
      if (!heads[i]) continue;
      base_by_id[heads[i]->space_id] = base_ibds[i];
      base_page0.emplace(base_ibds[i], *heads[i]);
    }
  }
  clock.Mark("base page 0s");
  return Status::Ok();
}

Status IncrementalApply::ValidateDeltas() {
  struct Validation {
    DeltaJob* job;
    std::string base_path;
    bool base_exists;
    const innodb::SpaceHeader* base_page0;  // read in the loop above, or null
  };
  std::vector<Validation> to_validate;
  DeltaJob* system_head = nullptr;  // ibdata1's delta, when the system tablespace has several files
  for (auto& j : scan.deltas) {
    if (auto first = backupdir::LaterSystemFileFirstPage(fcnf.system_files, fcnf.system_first_page, j.rel)) {
      j.first_page = *first;
      auto h = ReadPage0(util::JoinPath(full, fcnf.system_files[0]), fps);
      if (!h.ok()) return h.status().With("the system tablespace's first file in " + full);
      j.system_flags = h->flags;
    }
    if (fcnf.system_files.size() > 1 && j.rel == fcnf.system_files[0]) system_head = &j;
  }
  for (auto& j : scan.deltas) {
    if (j.is_void) continue;
    std::string base_rel = renamed_from.count(j.rel) ? renamed_from[j.rel] : j.rel;
    bool per_table = j.rel.find('/') != std::string::npos;
    if (per_table) {
      auto it = base_by_id.find(j.meta.space_id);
      if (it != base_by_id.end()) {
        // Where the file is now (an interrupted run may have carried out
        // the markers already), and where ApplyMarkers' .ren renames put it.
        base_rel = it->second;
        auto ren = renamed_to.find(base_rel);
        const std::string after = ren != renamed_to.end() ? ren->second : base_rel;
        if (after != j.target) moves[after] = j.target;
      }
    }
    // One applied as its stream arrived was checked page by page as it went
    // in; its file is moved like the others' (a rename during the
    // incremental: .ren, then back under the delta's name for the log).
    if (j.applied) continue;
    std::string base_path = util::JoinPath(full, base_rel);
    // Read above (and not renamed since): it exists, and its page 0 is known.
    auto known = renamed_from.count(j.rel) ? base_page0.end() : base_page0.find(base_rel);
    if (known != base_page0.end()) {
      to_validate.push_back({&j, base_path, true, &known->second});
      continue;
    }
    bool exists = !deleted.count(base_rel) && util::PathExists(base_path);
    to_validate.push_back({&j, base_path, exists, nullptr});
  }
  {
    std::atomic<bool> cancel{false};
    XBAK_RETURN_IF_ERROR(util::RunParallel(
        to_validate.size(), o.parallel,
        [&](size_t i) {
          const auto& v = to_validate[i];
          XBAK_RETURN_IF_ERROR(ValidateDelta(*v.job, v.base_path, v.base_exists, v.base_page0));
          progress.AddTotal(v.job->size, 1);
          return Status::Ok();
        },
        &cancel));
  }
  util::LogInfo("validated " + std::to_string(to_validate.size()) + " delta files of " + inc);
  clock.Mark("validation");
  // Page 0's FSP_SIZE is the size of the whole system tablespace: only its
  // last file grows (the others have the sizes innodb_data_file_path gives).
  if (system_head && system_head->has_page0) {
    const uint64_t pages = system_head->want_size / fps;
    const uint64_t before = fcnf.system_first_page.back();
    system_last_size = pages > before ? (pages - before) * fps : 0;
    system_head->want_size = 0;
  }
  return Status::Ok();
}

Status IncrementalApply::CheckRedo() {
  // What the redo step after the deltas would refuse (an encrypted log or
  // tablespace, an algorithm this build lacks) is refused now, before the
  // first delta goes in.
  if (!resuming) {
    std::vector<std::pair<std::string, innodb::CryptData>> incoming;
    for (const auto& j : scan.deltas) {
      if (j.crypt) incoming.emplace_back(j.delta, *j.crypt);
    }
    XBAK_RETURN_IF_ERROR(CheckRedoApplicable(inc, full, std::max(icp.to_lsn, icp.last_lsn), o.keys,
                                             o.parallel, incoming, &base_special, &checked_log));
  }
  return Status::Ok();
}

Status IncrementalApply::MarkInProgress() {
  if (!resuming) {
    XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(marker, identity + base_cp_text));
    if (::unlink(CheckpointsPath().c_str()) != 0) return ErrnoError("remove", CheckpointsPath(), errno);
    XBAK_RETURN_IF_ERROR(util::SyncDir(full));
  }
  return Status::Ok();
}

Status IncrementalApply::ApplyMarkers() {
  for (auto& d : deleted) {
    if (::unlink(util::JoinPath(full, d).c_str()) != 0 && errno != ENOENT)
      return ErrnoError("remove", util::JoinPath(full, d), errno);
  }
  for (auto& [to, from] : renamed_from) {
    std::string src = util::JoinPath(full, from), dst = util::JoinPath(full, to);
    // Done by an interrupted run; or a table newer than the base, renamed
    // during the incremental: its delta (under the old name) creates it and
    // the redo log's FILE_RENAME moves it.
    if (!util::PathExists(src)) continue;
    if (util::PathExists(dst)) {
      // Done by an interrupted run (the old name since given the .new
      // copy): dst is the tablespace copied under the old name. Anything
      // else there (a table dropped between the backups) is refused.
      if (newfiles.count(from) && DstHoldsCopiedSpace(from, dst)) continue;
      return Error(ErrorCode::kUnsupported, "rename of " + from + " to " + to + ": " + dst +
                                                " exists already (circular renames are not supported yet)");
    }
    XBAK_RETURN_IF_ERROR(util::MakeDirs(dst.substr(0, dst.rfind('/'))));
    if (::rename(src.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + src + " to", dst, errno);
  }
  // Renames between the backups: via temporary names, so that swaps work.
  for (auto& [from, to] : moves) {
    std::string src = util::JoinPath(full, from), tmp = util::JoinPath(full, to) + ".xbmove";
    if (src == tmp) continue;  // moved there by an interrupted run
    XBAK_RETURN_IF_ERROR(util::MakeDirs(tmp.substr(0, tmp.rfind('/'))));
    if (::rename(src.c_str(), tmp.c_str()) != 0) return ErrnoError("rename " + src + " to", tmp, errno);
  }
  for (auto& [from, to] : moves) {
    std::string tmp = util::JoinPath(full, to) + ".xbmove", dst = util::JoinPath(full, to);
    if (::rename(tmp.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + tmp + " to", dst, errno);
  }
  for (auto& n : newfiles) {
    XBAK_RETURN_IF_ERROR(
        CopyReplace(util::JoinPath(inc, n.substr(0, n.size() - 4) + ".new"), util::JoinPath(full, n)));
  }
  return Status::Ok();
}

Status IncrementalApply::ApplyDeltas() {
  std::vector<const DeltaJob*> jobs;
  for (auto& j : scan.deltas) {
    if (j.applied) deltas_arrived++;
    if (!j.is_void && !j.applied) jobs.push_back(&j);
  }
  std::vector<Piece> pieces;
  std::vector<const DeltaJob*> split;
  for (const DeltaJob* j : jobs) {
    size_t first = 0, n = j->blocks.size();
    const size_t before = pieces.size();
    for (size_t b = 0; b < n; b++) {
      uint64_t end = b + 1 < n ? j->blocks[b + 1] : j->size;
      if (end - j->blocks[first] >= o.piece_bytes || b + 1 == n) {
        pieces.push_back(Piece{j, first, b + 1, end - j->blocks[first], false});
        first = b + 1;
      }
    }
    if (pieces.size() - before == 1) {
      pieces.back().whole_file = true;
    } else {
      split.push_back(j);
    }
  }
  for (const DeltaJob* j : split) XBAK_RETURN_IF_ERROR(PrepareTarget(*j, util::JoinPath(full, j->target)));
  if (system_last_size > 0) {
    const std::string last = util::JoinPath(full, fcnf.system_files.back());
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(last));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    if (system_last_size > size) XBAK_RETURN_IF_ERROR(f.Truncate(system_last_size));
    XBAK_RETURN_IF_ERROR(f.Close());
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(util::RunParallel(
      pieces.size(), o.parallel,
      [&](size_t i) {
        const Piece& p = pieces[i];
        XBAK_RETURN_IF_ERROR(
            ApplyPiece(p, util::JoinPath(full, p.job->target), progress).With("applying " + p.job->delta));
        if (p.end_block == p.job->blocks.size()) progress.FileDone();
        return Status::Ok();
      },
      &cancel));
  deltas_applied = jobs.size() + deltas_arrived;
  return Status::Ok();
}

bool IncrementalApply::IsForeignDir(const std::string& db) const {
  if (db == "lost+found" || db.starts_with(".") || db.starts_with("#")) return true;
  if (util::JoinPath(full, db) == inc) return true;  // an incremental kept inside its base
  return std::find(o.foreign_dirs.begin(), o.foreign_dirs.end(), db) != o.foreign_dirs.end();
}

// The directory of a dropped database, once its table files are gone: its
// db.opt and the directory removed; anything else there (a file or directory
// no table of the server's) keeps it, with a warning.
Status DropDatabaseDir(const std::string& dbdir) {
  XBAK_ASSIGN_OR_RETURN(auto left, util::ListDir(dbdir));
  for (const auto& f : left) {
    if (f != "db.opt" || util::IsDirectory(util::JoinPath(dbdir, f))) {
      util::LogWarning(dbdir + ": a database dropped between the backups, kept for " + f +
                       ", which is no table's; remove it by hand");
      return Status::Ok();
    }
  }
  if (!left.empty() && ::unlink(util::JoinPath(dbdir, "db.opt").c_str()) != 0)
    return ErrnoError("remove", util::JoinPath(dbdir, "db.opt"), errno);
  if (::rmdir(dbdir.c_str()) != 0) return ErrnoError("remove directory", dbdir, errno);
  util::LogInfo("removed " + dbdir + ": a database dropped between the backups");
  return Status::Ok();
}

Status IncrementalApply::ReplaceOtherFiles() {
  std::set<std::string> known(newfiles.begin(), newfiles.end());
  // Not a void delta's name: a file there now is one the markers moved
  // there, of a table the incremental does not have under that name.
  for (auto& j : scan.deltas) {
    if (!j.is_void) known.insert(j.target);
  }
  std::set<std::string> others(scan.others.begin(), scan.others.end());
  XBAK_ASSIGN_OR_RETURN(top, util::ListDir(full));
  for (const auto& db : top) {
    std::string dbdir = util::JoinPath(full, db);
    if (!util::IsDirectory(dbdir) || IsForeignDir(db)) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(dbdir));
    for (const auto& f : files) {
      std::string rel = db + "/" + f;
      bool drop = (f.ends_with(".ibd") && !known.count(rel)) || (IsOtherTableFile(f) && !others.count(rel));
      if (drop && ::unlink(util::JoinPath(full, rel).c_str()) != 0)
        return ErrnoError("remove", util::JoinPath(full, rel), errno);
    }
    // A database dropped between the backups: the incremental has no
    // directory for it, and its tables went above; its directory goes too,
    // or the restored server would show it. Only one that held files and is
    // left with none of anything else (an empty one may be in a streamed
    // incremental, which carries no empty directory, and stays).
    if (!files.empty() && !util::IsDirectory(util::JoinPath(inc, db)))
      XBAK_RETURN_IF_ERROR(DropDatabaseDir(dbdir));
  }
  // A database created between the backups, even one with nothing in it.
  XBAK_ASSIGN_OR_RETURN(auto inc_top, util::ListDir(inc));
  for (const auto& db : inc_top) {
    if (util::IsDirectory(util::JoinPath(inc, db)) && !IsForeignDir(db))
      XBAK_RETURN_IF_ERROR(util::MakeDirs(util::JoinPath(full, db)));
  }
  // Small files (.frm, Aria and MyISAM tables), each compared with the base's copy: both asked of
  // the disk ahead of the threads.
  util::Prefetcher others_ahead(OtherFilesAhead(inc, full, scan.others));
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(util::RunParallel(
      scan.others.size(), o.parallel,
      [&](size_t i) {
        return CopyReplace(util::JoinPath(inc, scan.others[i]), util::JoinPath(full, scan.others[i]));
      },
      &cancel));
  // backup-my.cnf stays the full's, as mariabackup keeps it (the settings pages are written back
  // with). INC's info and binlog position go under FULL's names; an incremental without a position
  // (--no-lock, no binary log) leaves none: the base's would name an older point.
  for (backupdir::Meta m : {backupdir::Meta::kBinlogInfo, backupdir::Meta::kInfo}) {
    const std::string from = backupdir::MetaPath(inc, m), to = backupdir::MetaPath(full, m);
    if (util::PathExists(from)) {
      XBAK_RETURN_IF_ERROR(CopyReplace(from, util::JoinPath(full, backupdir::MetaName(m, scheme))));
    } else if (m == backupdir::Meta::kBinlogInfo && ::unlink(to.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("remove", to, errno);
    }
  }
  if (!o.log_from_incremental && util::PathExists(util::JoinPath(inc, "ib_logfile0")))
    XBAK_RETURN_IF_ERROR(
        CopyReplace(util::JoinPath(inc, "ib_logfile0"), util::JoinPath(full, "ib_logfile0")));
  return Status::Ok();
}

Status IncrementalApply::Finish() {
  if (o.sync_data) XBAK_RETURN_IF_ERROR(util::SyncFilesystem(full));
  for (const auto& db : top) {
    if (util::IsDirectory(util::JoinPath(full, db)))
      XBAK_RETURN_IF_ERROR(util::SyncDir(util::JoinPath(full, db)));
  }
  // Then Run applies the log as for a full backup.
  backupdir::Checkpoints out{"full-backuped", 0, icp.to_lsn, icp.last_lsn, false};
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(CheckpointsPath(), backupdir::FormatCheckpoints(out)));
  if (::unlink(marker.c_str()) != 0) return ErrnoError("remove", marker, errno);
  XBAK_RETURN_IF_ERROR(util::SyncDir(full));
  return Status::Ok();
}

}  // namespace

Status RunIncrementalPrepare(const IncrementalPrepareOptions& o) {
  IncrementalApply apply(o);
  return apply.Run();
}

}  // namespace xbak::prepare
