#include "xbak/restore/restore.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include "restore_chain.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/table_filter.h"
#include "xbak/crypt/format.h"
#include "xbak/prepare/delta_pages.h"
#include "xbak/prepare/export.h"
#include "xbak/prepare/incremental_prepare.h"
#include "xbak/prepare/prepare.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/util/copy_file.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::restore {
namespace {

// The prepared log, kept beside the placeholder until the whole chain is in.
constexpr const char* kStagedLog = "ib_logfile0.xbak-restore";
// What ib_logfile0 holds until then: too small to be a redo log, so mariadbd
// refuses to start ("File ./ib_logfile0 is too small"), and it says why to
// whoever looks at it.
constexpr size_t kPlaceholderSize = 12288;
constexpr const char* kPlaceholderText =
    "xbak --restore is not finished: this datadir is incomplete and the server must not start on it.\n"
    "Run the same xbak --restore command again to finish it (see xbak_restore_in_progress).\n";

bool IsPlaceholder(const std::string& path) {
  auto f = util::File::OpenRead(path);
  if (!f.ok()) return true;  // no log at all: as unfinished
  const std::string_view text(kPlaceholderText);
  std::string head(text.size(), '\0');
  auto n = f->PRead(head.data(), head.size(), 0);
  return !n.ok() || (*n == head.size() && head == text);
}

std::string Identity(const std::vector<Link>& chain, bool streamed) {
  std::string s = streamed ? std::string(kStreamRestoreJournalHead) : "xbak restore\n";
  for (const Link& l : chain) {
    s += "chain: " + l.real + " " + std::to_string(l.cp.from_lsn) + " " + std::to_string(l.cp.to_lsn) + " " +
         std::to_string(l.cp.last_lsn) + "\n";
  }
  return s;
}

// The restore's record of itself in the datadir: the chain, then a line per
// finished step ("done: copy", "done: 0" for the full backup's log, "done: K"
// for incremental K).
class Journal {
 public:
  Journal(std::string path, std::string identity) : path_(std::move(path)), identity_(std::move(identity)) {}

  // Reads an existing journal: false if there is none; an error if it is of
  // another chain.
  Result<bool> Load(const std::string& datadir) {
    if (!util::PathExists(path_)) return false;
    XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(path_));
    if (text.rfind(identity_, 0) != 0) {
      return Error(ErrorCode::kAlreadyExists,
                   "an interrupted restore of another chain is in " + datadir + " (" + path_ +
                       "): finish it with the command that started it, or empty the datadir");
    }
    std::istringstream in(text.substr(identity_.size()));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("done: ", 0) == 0) done_.insert(line.substr(6));
    }
    return true;
  }
  bool Done(const std::string& step) const { return done_.count(step) > 0; }
  const std::string& path() const { return path_; }
  Status MarkDone(const std::string& step) {
    done_.insert(step);
    return Write();
  }
  Status Write() {
    std::string text = identity_;
    for (const auto& d : done_) text += "done: " + d + "\n";
    XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(path_, text));
    return util::SyncDir(path_.substr(0, path_.rfind('/')));
  }

 private:
  std::string path_, identity_;
  std::set<std::string> done_;
};

// The full backup's files into the datadir, each once, on `parallel`
// threads; its log stays where it is (unless it is already a prepared one).
// The checkpoints file goes last, once everything else is durable.
Status CopyFull(const RestoreOptions& o, const RestoreDirs& dirs, const Link& full, bool move) {
  std::vector<std::pair<std::string, uint64_t>> entries;
  XBAK_RETURN_IF_ERROR(ListBackupTree(full.dir, &entries));
  struct Item {
    std::string rel;
    uint64_t size;
  };
  std::vector<Item> items;
  util::Progress progress("restore: copy of " + full.dir, o.progress_interval);
  for (const auto& [rel, size] : entries) {
    if (rel.ends_with("/")) {
      XBAK_RETURN_IF_ERROR(util::MakeDirs(util::JoinPath(dirs.datadir, rel.substr(0, rel.size() - 1))));
      continue;
    }
    if (backupdir::IsMeta(rel, backupdir::Meta::kCheckpoints)) continue;
    if (rel == "ib_logfile0" && full.cp.backup_type != "log-applied") continue;  // applied from the backup
    items.push_back({rel, size});
    progress.AddTotal(size, 1);
  }
  // In place: the journal marks the copy done only after all of it, and a
  // re-run copies everything again over what it finds.
  std::vector<util::FileToPlace> files;
  files.reserve(items.size());
  for (const Item& it : items) {
    files.push_back({util::JoinPath(full.dir, it.rel),
                     it.rel == "ib_logfile0" ? util::JoinPath(dirs.log_dir, kStagedLog)
                                             : util::JoinPath(dirs.datadir, it.rel),
                     it.size});
  }
  XBAK_RETURN_IF_ERROR(util::PlaceFiles(std::move(files), o.parallel,
                                        {.move = move, .sync = false, .in_place = true, .replace = true},
                                        &progress));
  // One syncfs for the lot, not one fsync per file (thousands of tables).
  // Moved from a stream's staging: synced once with the whole chain, at the
  // end (RestoreChain), since such a restore is started over after a crash.
  if (!move) {
    XBAK_RETURN_IF_ERROR(util::SyncFilesystem(dirs.datadir));
    if (dirs.log_dir != dirs.datadir) XBAK_RETURN_IF_ERROR(util::SyncFilesystem(dirs.log_dir));
  }
  const std::string cp = backupdir::MetaPath(full.dir, backupdir::Meta::kCheckpoints);
  XBAK_RETURN_IF_ERROR(
      util::PlaceFile(cp, util::JoinPath(dirs.datadir, cp.substr(cp.rfind('/') + 1)), {move, true}, nullptr));
  XBAK_RETURN_IF_ERROR(util::SyncDir(dirs.datadir));
  progress.Finish(true);
  return Status::Ok();
}

// The datadir's state says incremental `inc` went in already (killed between
// its last write and the journal's line).
bool AlreadyAt(const std::string& datadir, const Link& prev, const Link& inc) {
  if (prev.cp.to_lsn == inc.cp.to_lsn) return false;  // nothing tells them apart: apply again (idempotent)
  if (util::PathExists(util::JoinPath(datadir, "xbak_incremental_in_progress"))) return false;
  const std::string path = backupdir::MetaPath(datadir, backupdir::Meta::kCheckpoints);
  auto text = util::ReadSmallFile(path);
  if (!text.ok()) return false;
  auto cp = backupdir::ParseCheckpoints(*text, path);
  return cp.ok() && cp->backup_type == "log-applied" && cp->to_lsn == inc.cp.to_lsn &&
         cp->last_lsn == inc.cp.last_lsn;
}

// The backup's binlog_info file, without its line end ("" if none).
std::string BinlogLine(const std::string& dir) {
  auto b = util::ReadSmallFile(backupdir::MetaPath(dir, backupdir::Meta::kBinlogInfo), 64 * 1024);
  if (!b.ok()) return "";
  std::string text = *b;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

Status WritePlaceholderLog(const RestoreDirs& dirs) {
  const std::string log = util::JoinPath(dirs.log_dir, "ib_logfile0");
  if (util::PathExists(log)) return Status::Ok();
  std::string ph(kPlaceholderText);
  ph.resize(kPlaceholderSize, '\0');
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(log, ph));
  return util::SyncDir(dirs.log_dir);
}

Status RunRestore(const RestoreOptions& o) {
  if (!o.streams.empty()) return RunRestoreFromStreams(o);
  std::vector<std::string> chain{o.full_dir};
  chain.insert(chain.end(), o.incremental_dirs.begin(), o.incremental_dirs.end());
  for (const auto& dir : chain) {
    const bool encrypted =
        !backupdir::StoredMetaName(dir, backupdir::Meta::kCheckpoints, crypt::kEncryptedSuffix).empty();
    if (encrypted && backupdir::StoredMetaName(dir, backupdir::Meta::kCheckpoints).empty()) {
      return Error(
          ErrorCode::kUnsupported,
          dir +
              " is an encrypted backup: --restore reads backups in directories as they are and does "
              "not decrypt them; restore from its stream (--from-stream with --encrypt-key-file), or "
              "run xbak --decrypt on it first");
    }
  }
  return RestoreChain(o, /*streamed=*/false);
}

namespace {

// A restore that is not resumed: nothing of what is there may be
// overwritten, and the full backup's log is checked whole (and an encrypted
// backup's keys) before the first byte goes in.
Status CheckNewDestination(const RestoreOptions& o, const RestoreDirs& dirs,
                           const std::map<std::string, std::string>& remote, const Link& full, bool streamed,
                           prepare::CheckedLogPtr* checked) {
  if (!streamed) XBAK_RETURN_IF_ERROR(DropLoneMarkerTemp(dirs.datadir, kRestoreMarkerFile));
  // Nothing of what is there may be overwritten: every directory the
  // restore writes into must be empty (or not exist yet).
  std::set<std::string> targets;
  if (!streamed) {
    const auto all = dirs.All();
    targets.insert(all.begin(), all.end());
  }
  for (const auto& [rel, path] : remote) targets.insert(path.substr(0, path.rfind('/')));
  for (const std::string& t : targets) {
    XBAK_ASSIGN_OR_RETURN(bool empty, util::IsEmptyOrMissingDir(t));
    if (!empty) {
      return Error(ErrorCode::kAlreadyExists,
                   t + " is not empty; --restore writes only into empty directories (nothing was written)");
    }
  }
  for (const auto& [rel, path] : remote) {
    if (util::PathExists(path))
      return Error(ErrorCode::kAlreadyExists, path + " exists already (nothing was written)");
  }
  // The full backup's log is checked whole (and an encrypted backup's keys)
  // before the first byte goes in.
  if (full.cp.backup_type == "full-backuped") {
    XBAK_RETURN_IF_ERROR(prepare::CheckRedoApplicable(full.dir, full.dir,
                                                      std::max(full.cp.to_lsn, full.cp.last_lsn), o.keys,
                                                      o.parallel, {}, nullptr, checked));
  }
  return Status::Ok();
}

// What a step's redo apply leaves out (RedoApplyOptions::superseded): the
// pages the next incremental's deltas hold, which the next step writes whole
// right after it. The records of those pages would be applied only to be
// overwritten; whatever else the log does (FILE_ records, freed pages, file
// sizes) is done as in the two-step path, so the files come out the same
// bytes (t_restore compares them). From streams, the next one is waited for
// (whole, and checked) first.
using Superseded = std::function<Result<prepare::PageSetPtr>(const prepare::LogDdl&)>;

// Step 0: the full backup's redo log applied to its copy in the datadir (a
// prepared full backup has none to apply).
Status ApplyFullLog(const RestoreOptions& o, const RestoreDirs& dirs, const Link& full,
                    const std::string& staged, bool streamed, Superseded superseded,
                    prepare::CheckedLogPtr checked) {
  if (full.cp.backup_type != "full-backuped") return Status::Ok();
  prepare::PrepareOptions po;
  po.target_dir = dirs.datadir;
  po.log_dir = full.dir;
  po.prepared_log = staged;
  po.parallel = o.parallel;
  po.use_memory = o.use_memory;
  po.progress_interval = o.progress_interval;
  po.keys = o.keys;
  po.sync_data = !streamed;
  po.superseded = std::move(superseded);
  po.checked = std::move(checked);
  return prepare::RunPrepare(po).With("applying the redo log of " + full.dir);
}

// Step k: incremental `inc`'s deltas and redo log into the datadir.
Status ApplyIncremental(const RestoreOptions& o, const RestoreDirs& dirs, const Link& inc,
                        const std::string& staged, bool streamed, Superseded superseded,
                        std::function<Result<prepare::CheckedLogPtr>()> checked_log) {
  prepare::IncrementalPrepareOptions ip;
  ip.target_dir = dirs.datadir;
  ip.incremental_dir = inc.dir;
  ip.log_from_incremental = true;
  ip.prepared_log = staged;
  ip.parallel = o.parallel;
  ip.use_memory = o.use_memory;
  ip.progress_interval = o.progress_interval;
  ip.keys = o.keys;
  ip.sync_data = !streamed;
  ip.superseded = std::move(superseded);
  ip.checked_log = std::move(checked_log);
  ip.applied_records = streamed;
  // The restore's own directories inside the datadir: never a database.
  ip.foreign_dirs = {kStagingDir};
  for (const std::string& d : dirs.All()) {
    if (d.size() > dirs.datadir.size() + 1 && d.starts_with(dirs.datadir + "/"))
      ip.foreign_dirs.push_back(d.substr(dirs.datadir.size() + 1));
  }
  return prepare::RunIncrementalPrepare(ip).With("applying " + inc.dir);
}

// The last step: the staging of streams removed and everything synced
// (streamed), the prepared log put in place of the placeholder, the journal
// removed; then what the operator needs to know.
Status Finish(const RestoreDirs& dirs, const std::vector<Link>& chain, bool streamed,
              const std::string& journal_path, bool hold) {
  const size_t steps = chain.size();
  const std::string log = util::JoinPath(dirs.log_dir, "ib_logfile0");
  const std::string staged = util::JoinPath(dirs.log_dir, kStagedLog);
  // The binary log position of the last backup, read while it is there: a
  // staged stream goes below, and a full backup's staged files were moved
  // into the datadir (whose backup files Place removes).
  const std::string binlog_dir = streamed && steps == 1 ? dirs.datadir : chain.back().dir;
  const std::string binlog = BinlogLine(binlog_dir);
  const std::string binlog_path = backupdir::MetaPath(binlog_dir, backupdir::Meta::kBinlogInfo);
  if (streamed) {
    // The staging goes first, so that the one syncfs below does not write out
    // the last stream's files. From streams, no step synced what it wrote (a
    // crash starts the restore over): all of it is made durable here, before
    // the prepared log replaces the placeholder.
    XBAK_RETURN_IF_ERROR(util::RemoveTree(util::JoinPath(dirs.datadir, kStagingDir)));
    XBAK_RETURN_IF_ERROR(util::SyncFilesystems(dirs.All()));
  }
  if (!util::PathExists(staged)) {
    // Fine only if an earlier run put it in place already.
    if (IsPlaceholder(log)) {
      return Error(ErrorCode::kInternal, "no prepared redo log at " + staged + " after the last step");
    }
  }
  XBAK_RETURN_IF_ERROR(PlaceRestoredFiles(dirs, kStagedLog, !hold));
  if (hold) {
    util::LogInfo("restored the chain into " + dirs.datadir + " (LSN " +
                  std::to_string(chain.back().cp.to_lsn) + "); held unfinished: the prepared log is " +
                  staged);
    return Status::Ok();
  }
  if (::unlink(journal_path.c_str()) != 0) return ErrnoError("remove", journal_path, errno);
  XBAK_RETURN_IF_ERROR(util::SyncDir(dirs.datadir));
  util::LogInfo("restored " +
                (streamed ? "the chain of " + std::to_string(steps) + " stream(s)" : chain.back().dir) +
                " (LSN " + std::to_string(chain.back().cp.to_lsn) + ") into " + dirs.datadir +
                "; make it owned by the server's user (e.g. chown -R mysql:mysql) before starting it");
  if (!binlog.empty()) {
    util::LogInfo("binary log position of the restored data (" +
                  binlog_path.substr(binlog_path.rfind('/') + 1) + "): " + binlog);
  }
  return Status::Ok();
}
// The steps of a restore after the full backup's copy, in order: its redo
// log, then each incremental's deltas and log. From streams, each
// incremental is waited for (whole, and checked) when the step before needs
// it, and the first pass over its log starts then, beside that step's redo.
struct Steps {
  const RestoreOptions& o;
  const RestoreDirs& dirs;
  const bool streamed;
  const std::map<std::string, std::string>& remote;
  ChainFacts& facts;
  std::vector<Link>& chain;
  Journal& journal;
  const std::string staged = util::JoinPath(dirs.log_dir, kStagedLog);
  const size_t count = o.incremental_dirs.size() + 1;
  std::vector<std::shared_future<Result<prepare::CheckedLogPtr>>> log_checks =
      std::vector<std::shared_future<Result<prepare::CheckedLogPtr>>>(count);

  // Incremental k in the chain (from streams: once it is whole and checked).
  Status Have(size_t k) {
    if (!o.await_incremental || chain.size() > k) return Status::Ok();
    XBAK_RETURN_IF_ERROR(AwaitIncremental(o, k, remote, &facts, &chain));
    const Link& inc = chain[k];
    log_checks[k] =
        std::async(std::launch::async, [dir = inc.dir, datadir = dirs.datadir,
                                        lsn = std::max(inc.cp.to_lsn, inc.cp.last_lsn), keys = o.keys] {
          return prepare::CheckRedoLog(dir, datadir, lsn, keys);
        }).share();
    return Status::Ok();
  }
  Superseded NextDeltas(size_t k) {
    if (k >= count) return nullptr;
    return [this, k](const prepare::LogDdl& ddl) -> Result<prepare::PageSetPtr> {
      // Step k-1's deltas and markers are in: incremental k's may go in as
      // its stream arrives, before this log (direct_delta.h).
      if (o.open_deltas) o.open_deltas(k, facts.page_size, ddl);
      XBAK_RETURN_IF_ERROR(Have(k));
      return prepare::DeltaPages(chain[k].dir, o.parallel, streamed);
    };
  }
  // A step whose redo did not open the next stream's gate (a prepared full
  // backup has no log to apply): it is whole now, so the next deltas may go in.
  void Done(size_t k) {
    if (o.open_deltas) o.open_deltas(k + 1, facts.page_size, prepare::LogDdl{});
  }
  Status Run(prepare::CheckedLogPtr full_log) {
    if (!journal.Done("0")) {
      XBAK_RETURN_IF_ERROR(
          ApplyFullLog(o, dirs, chain[0], staged, streamed, NextDeltas(1), std::move(full_log)));
      XBAK_RETURN_IF_ERROR(journal.MarkDone("0"));
    }
    Done(0);
    for (size_t k = 1; k < count; k++) {
      XBAK_RETURN_IF_ERROR(Have(k));
      const std::string step = std::to_string(k);
      if (journal.Done(step)) continue;
      if (!AlreadyAt(dirs.datadir, chain[k - 1], chain[k])) {
        std::function<Result<prepare::CheckedLogPtr>()> checked;
        if (log_checks[k].valid()) checked = [f = log_checks[k]] { return f.get(); };
        XBAK_RETURN_IF_ERROR(
            ApplyIncremental(o, dirs, chain[k], staged, streamed, NextDeltas(k + 1), checked));
      }
      XBAK_RETURN_IF_ERROR(journal.MarkDone(step));
      Done(k);
      if (streamed && k + 1 < count) {
        // Applied: its staged copy goes, and with it the stream two after it may
        // be read (the disk the staging needs is two incrementals, not the
        // chain). The last one goes with the staging below.
        XBAK_RETURN_IF_ERROR(util::RemoveTree(chain[k].dir));
        if (o.released_incremental) o.released_incremental(k);
      }
    }
    return Status::Ok();
  }
};

}  // namespace

std::string StagedLogPath(const RestoreDirs& dirs) {
  return util::JoinPath(dirs.Resolved().log_dir, kStagedLog);
}

Status RestoreChain(const RestoreOptions& o, bool streamed) {
  if (o.full_dir.empty())
    return Error(ErrorCode::kInvalidArgument, "--restore needs --target-dir (the full backup)");
  if (o.dirs.datadir.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "--restore needs --datadir (or datadir= in the [mysqld] group of --defaults-file)");
  }
  const RestoreDirs dirs = o.dirs.Resolved();
  std::map<std::string, std::string> remote;
  ChainFacts facts;
  XBAK_ASSIGN_OR_RETURN(std::vector<Link> chain, ReadChain(o, &remote, &facts));
  chain.reserve(o.incremental_dirs.size() + 1);  // `full` stays valid as it grows
  const Link& full = chain[0];
  const size_t steps = o.incremental_dirs.size() + 1;

  Journal journal(util::JoinPath(dirs.datadir, kRestoreMarkerFile), Identity(chain, streamed));
  // Streamed: the caller checked the directories, marked the datadir and
  // staged the chain in it; a failed run is started over, never resumed.
  bool resuming = false;
  if (!streamed) {
    XBAK_ASSIGN_OR_RETURN(resuming, journal.Load(dirs.datadir));
  }
  prepare::CheckedLogPtr full_log;  // the full backup's log, checked before anything is written
  if (resuming) {
    util::LogWarning("resuming the interrupted restore into " + dirs.datadir);
  } else {
    XBAK_RETURN_IF_ERROR(CheckNewDestination(o, dirs, remote, full, streamed, &full_log));
  }
  // From here the datadir is ours, and marked unfinished first.
  for (const std::string& t : dirs.All()) XBAK_RETURN_IF_ERROR(util::MakeDirs(t));
  if (!resuming) XBAK_RETURN_IF_ERROR(journal.Write());  // (streamed: over the caller's)
  XBAK_RETURN_IF_ERROR(WritePlaceholderLog(dirs));
  util::LogInfo("restoring " + full.dir +
                (steps > 1 ? " and " + std::to_string(steps - 1) + " incremental(s)" : "") + " into " +
                dirs.datadir + (streamed ? "" : " (the backups are only read)"));

  if (!journal.Done("copy")) {
    XBAK_RETURN_IF_ERROR(CopyFull(o, dirs, full, /*move=*/streamed));
    XBAK_RETURN_IF_ERROR(journal.MarkDone("copy"));
  }
  Steps run{o, dirs, streamed, remote, facts, chain, journal};
  XBAK_RETURN_IF_ERROR(run.Run(std::move(full_log)));
  return Finish(dirs, chain, streamed, journal.path(), o.hold);
}

}  // namespace xbak::restore
