// Where each file of a prepared backup goes when it is restored: the rules
// `--copy-back`, `--move-back` and `--restore` share. The redo log goes to
// innodb_log_group_home_dir, ibdata files to innodb_data_home_dir, undo
// tablespaces to innodb_undo_directory, the Aria logs to aria_log_dir_path, a DATA DIRECTORY table's .ibd to
// the place its .isl names (or, with --remote-tablespaces-to-datadir, into the datadir without its .isl),
// everything else to the same path in the datadir; the backup's own metadata (xtrabackup_*, backup-my.cnf,
// deltas) nowhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::restore {

struct RestoreDirs {
  std::string datadir;
  std::string log_dir;        // default: datadir
  std::string data_home_dir;  // default: datadir
  std::string undo_dir;       // default: datadir
  bool remote_to_datadir = false;
  std::string aria_log_dir;  // aria_log_dir_path: aria_log_control and aria_log.N (default: datadir)
  // innodb_data_file_path, when given for the restore: each file of the
  // system tablespace goes to the path it names (an absolute one as it is, a
  // relative one in data_home_dir), whatever its name.
  std::string data_file_path;
  std::map<std::string, std::string> system_paths;  // Resolved(): file name -> destination

  // The directories, defaults filled in (a relative one is the datadir's).
  RestoreDirs Resolved() const;
  // Every directory a restore writes into (the datadir first).
  std::vector<std::string> All() const { return {datadir, log_dir, data_home_dir, undo_dir, aria_log_dir}; }
};

// Every regular file and directory under `root`, as '/'-separated paths
// relative to it ("db/t.ibd", "db/" for the directory itself) with sizes.
// A backup holds one level of directories; a symbolic link or a deeper
// directory is refused (a restore must not follow links out of the backup).
Status ListBackupTree(const std::string& root, std::vector<std::pair<std::string, uint64_t>>* out);

// A top-level file the backup keeps for itself, never restored.
bool IsBackupMetadataFile(const std::string& name);

// "db/t.ibd" -> the path "db/t.isl" in `dir` names, for every .isl among
// `entries`. A broken .isl is an error naming it.
Result<std::map<std::string, std::string>> RemoteTablespaces(
    const std::string& dir, const std::vector<std::pair<std::string, uint64_t>>& entries);

// Where backup file `rel` goes ("" for none), given the resolved
// directories and RemoteTablespaces(). Directories ("db/") are not asked.
std::string RestoreDestination(const std::string& rel, const RestoreDirs& dirs,
                               const std::map<std::string, std::string>& remote);

// A restore killed while writing its first marker (`marker_name`, written
// as marker_name.tmp and renamed) leaves only that temporary file in the
// datadir: nothing of the backup was written yet. Removes it when it is all
// `datadir` holds, so that the same command run again finds the datadir
// empty.
Status DropLoneMarkerTemp(const std::string& datadir, const std::string& marker_name);

// The last step of a restore: the backup's own files out of the datadir, the
// files that live elsewhere (ibdata, undo, DATA DIRECTORY tables) moved
// there, then (put_log) the prepared log, waiting in the log directory as
// `staged_log`, over the placeholder: only now can the server start on it.
Status PlaceRestoredFiles(const RestoreDirs& dirs, const std::string& staged_log, bool put_log);

}  // namespace xbak::restore
