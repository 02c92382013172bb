#include "xbak/restore/copy_back.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/prepare/export.h"
#include "xbak/restore/restore_places.h"
#include "xbak/util/copy_file.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::restore {
namespace {

struct Item {
  std::string src;
  std::string dest;
  uint64_t size;
};

constexpr const char* kInProgressFile = "xbak_copy_back_in_progress";

// The options and the backup: a prepared backup, and a datadir to restore to.
Status CheckBackup(const CopyBackOptions& o) {
  if (o.backup_dir.empty())
    return Error(ErrorCode::kInvalidArgument, "--target-dir (the backup) is required");
  if (o.datadir.empty()) {
    return Error(ErrorCode::kInvalidArgument,
                 "--datadir is required (or datadir= in the [mysqld] group of --defaults-file)");
  }
  XBAK_ASSIGN_OR_RETURN(backupdir::Checkpoints cp, backupdir::ReadCheckpoints(o.backup_dir));
  if (cp.backup_type != "log-applied" && cp.backup_type != "full-prepared") {
    return Error(ErrorCode::kInvalidArgument,
                 "the backup in " + o.backup_dir + " is not prepared (backup_type = " + cp.backup_type +
                     "); run --prepare first: restoring it as it is would give an inconsistent server");
  }
  return Status::Ok();
}

// One --copy-back or --move-back, a method per step (Run). What they share is
// the state below.
struct CopyBack {
  explicit CopyBack(const CopyBackOptions& opts)
      : o(opts),
        dirs(RestoreDirs{
            opts.datadir,
            opts.log_dir,
            opts.data_home_dir,
            opts.undo_dir,
            opts.remote_to_datadir,
            opts.aria_log_dir,
            opts.data_file_path,
            {}}.Resolved()),
        log_dir(dirs.log_dir),
        home(dirs.data_home_dir),
        undo(dirs.undo_dir),
        marker(util::JoinPath(opts.datadir, kInProgressFile)),
        progress(opts.move ? "move-back" : "copy-back", std::chrono::milliseconds(2000)) {}

  // The destination: empty, or holding an interrupted restore of this backup
  // (its marker file) to resume over its own files.
  Status CheckDestination();
  // Plan everything first and check it, so that a refusal writes nothing.
  Status Plan();
  // The files on --parallel threads, then one sync, then the redo log last.
  Status Place();

  const CopyBackOptions& o;
  const RestoreDirs dirs;
  const std::string &log_dir, &home, &undo;
  // A restore that was interrupted left this marker: everything in the
  // datadir came from it, so it may be resumed over its own files.
  const std::string marker;
  util::Progress progress;
  std::string identity;
  bool resuming = false;
  std::map<std::string, std::string> remote;  // .ibd rel -> its DATA DIRECTORY
  std::vector<Item> items;
  std::vector<std::string> subdirs;  // database directories, made even if empty
  std::set<std::string> remote_dirs;
  std::optional<Item> log_item;
};

Status CopyBack::CheckDestination() {
  identity = "copy-back of " + o.backup_dir + "\n";
  // Killed while writing its marker, a copy-back wrote nothing else.
  XBAK_RETURN_IF_ERROR(DropLoneMarkerTemp(o.datadir, kInProgressFile));
  if (util::PathExists(marker)) {
    XBAK_ASSIGN_OR_RETURN(std::string m, util::ReadSmallFile(marker));
    if (m != identity || o.move) {
      return Error(ErrorCode::kAlreadyExists,
                   "an interrupted restore is in " + o.datadir + " (" + marker +
                       " says: " + m.substr(0, m.find('\n')) + "); " +
                       (o.move ? "a --move-back cannot be resumed: empty the datadir and restore again"
                               : "resume it with the same --target-dir, or empty the datadir"));
    }
    resuming = true;
    util::LogWarning("resuming the interrupted restore into " + o.datadir);
  }
  // Plan everything first and check it, so that a refusal writes nothing.
  for (const std::string& d : dirs.All()) {
    XBAK_ASSIGN_OR_RETURN(bool empty, util::IsEmptyOrMissingDir(d));
    if (!empty && !o.force_non_empty && !resuming) {
      return Error(ErrorCode::kAlreadyExists, "destination " + d +
                                                  " is not empty; refusing to restore over existing files "
                                                  "(use --force-non-empty-directories to add to it; existing "
                                                  "files are never overwritten)");
    }
  }
  return Status::Ok();
}

Status CopyBack::Plan() {
  std::vector<std::pair<std::string, uint64_t>> entries;
  XBAK_RETURN_IF_ERROR(ListBackupTree(o.backup_dir, &entries));
  for (const auto& [rel, size] : entries) {
    if (rel.ends_with(prepare::kHiddenIslSuffix)) {
      return Error(ErrorCode::kInvalidArgument,
                   util::JoinPath(o.backup_dir, rel) +
                       ": an interrupted xbak --prepare --export set this DATA DIRECTORY link aside; run "
                       "xbak --prepare --export --target-dir=" +
                       o.backup_dir + " again to finish it (nothing was restored)");
    }
  }
  // With --remote-tablespaces-to-datadir the .isl files are left out: what
  // they say (even a broken one) does not matter.
  if (!o.remote_to_datadir) {
    XBAK_ASSIGN_OR_RETURN(remote, RemoteTablespaces(o.backup_dir, entries));
  }
  for (auto& [rel, size] : entries) {
    if (rel.ends_with("/")) {
      subdirs.push_back(util::JoinPath(o.datadir, rel.substr(0, rel.size() - 1)));
      continue;
    }
    Item it{util::JoinPath(o.backup_dir, rel), RestoreDestination(rel, dirs, remote), size};
    if (it.dest.empty()) continue;
    auto r = remote.find(rel);
    if (r != remote.end() && !o.remote_to_datadir) {
      // Back to its DATA DIRECTORY, as the .isl (restored beside the table
      // definition) says; the place must not hold anything yet.
      const std::string dir = it.dest.substr(0, it.dest.rfind('/'));
      XBAK_ASSIGN_OR_RETURN(bool empty, util::IsEmptyOrMissingDir(dir));
      if (!empty && !o.force_non_empty && !resuming && remote_dirs.count(dir) == 0) {
        return Error(ErrorCode::kAlreadyExists,
                     "table " + rel.substr(0, rel.size() - 4) +
                         " was created with DATA DIRECTORY and belongs in " + dir +
                         ", which is not empty; refusing to restore over it (empty it, or use "
                         "--remote-tablespaces-to-datadir to put such tables in the datadir)");
      }
      remote_dirs.insert(dir);
    }
    if (rel.find('/') == std::string::npos && dirs.system_paths.count(rel)) {
      // A system tablespace file where --innodb-data-file-path puts it: its
      // directory may hold other things, the file itself must not exist.
      if (!resuming && util::PathExists(it.dest)) {
        return Error(ErrorCode::kAlreadyExists,
                     it.dest + " exists already; existing files are never overwritten");
      }
      remote_dirs.insert(it.dest.substr(0, it.dest.rfind('/')));
    }
    // Without --force-non-empty-directories every destination directory was found empty or
    // absent (CheckDestination, and above for DATA DIRECTORYs): nothing to look for, and
    // 100,000 tables would be 100,000 failing stats.
    if (o.force_non_empty && !resuming && util::PathExists(it.dest)) {
      return Error(ErrorCode::kAlreadyExists,
                   it.dest + " exists already; existing files are never overwritten");
    }
    if (rel == "ib_logfile0") {
      log_item = it;  // last: the server refuses a datadir without it
    } else {
      items.push_back(it);
    }
    progress.AddTotal(size, 1);
  }
  return Status::Ok();
}

Status CopyBack::Place() {
  for (const std::string& d : dirs.All()) XBAK_RETURN_IF_ERROR(util::MakeDirs(d));
  if (!resuming) {
    XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(marker, identity));
    XBAK_RETURN_IF_ERROR(util::SyncDir(o.datadir));
  }
  for (const auto& d : subdirs) XBAK_RETURN_IF_ERROR(util::MakeDirs(d));
  for (const auto& d : remote_dirs) XBAK_RETURN_IF_ERROR(util::MakeDirs(d));
  // Not fsync'ed one by one (20,000 tables would be 20,000 fsyncs, most of
  // the copy's time): one syncfs per filesystem below. In place: until the
  // log goes in last, the server refuses the datadir, and a re-run
  // (resuming) rewrites every file.
  std::vector<util::FileToPlace> files;
  files.reserve(items.size());
  for (const Item& it : items) files.push_back({it.src, it.dest, it.size});
  XBAK_RETURN_IF_ERROR(
      util::PlaceFiles(std::move(files), o.parallel,
                       {.move = o.move, .sync = false, .in_place = true, .replace = resuming}, &progress));
  // Make the files and the new directory entries durable.
  std::vector<std::string> written = dirs.All();
  for (auto& it : items) written.push_back(it.dest.substr(0, it.dest.rfind('/')));
  std::sort(written.begin(), written.end());
  written.erase(std::unique(written.begin(), written.end()), written.end());
  XBAK_RETURN_IF_ERROR(util::SyncFilesystems(written));
  for (auto& d : written) XBAK_RETURN_IF_ERROR(util::SyncDir(d));
  // Only now the redo log: until it is there, mariadbd refuses to start on
  // the datadir, so a restore killed earlier can never be mistaken for a
  // complete one. Then the marker goes.
  if (log_item) {
    XBAK_RETURN_IF_ERROR(util::PlaceFile(log_item->src, log_item->dest, {o.move, true}, &progress));
    XBAK_RETURN_IF_ERROR(util::SyncDir(log_item->dest.substr(0, log_item->dest.rfind('/'))));
  }
  if (::unlink(marker.c_str()) != 0) return ErrnoError("remove", marker, errno);
  XBAK_RETURN_IF_ERROR(util::SyncDir(o.datadir));
  return Status::Ok();
}

}  // namespace

Status RunCopyBack(const CopyBackOptions& o) {
  XBAK_RETURN_IF_ERROR(CheckBackup(o));
  CopyBack c(o);
  XBAK_RETURN_IF_ERROR(c.CheckDestination());
  XBAK_RETURN_IF_ERROR(c.Plan());
  XBAK_RETURN_IF_ERROR(c.Place());
  c.progress.Finish(true);
  std::string where = o.datadir;
  for (const auto& d : c.remote_dirs) where += ", " + d;
  util::LogInfo("restored " + std::to_string(c.items.size()) + " files into " + where +
                "; make them owned by the server's user (e.g. chown -R mysql:mysql) before starting it");
  return Status::Ok();
}

}  // namespace xbak::restore
