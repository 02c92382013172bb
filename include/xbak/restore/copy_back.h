// `xbak --copy-back` / `--move-back`: puts a prepared backup into an empty
// datadir. Refuses a backup that was not prepared and a non-empty datadir
// (unless forced), so it never overwrites data it was not told to.
#pragma once

#include <string>

#include "xbak/util/status.h"

namespace xbak::restore {

struct CopyBackOptions {
  std::string backup_dir;      // --target-dir
  std::string datadir;         // destination
  std::string log_dir;         // innodb_log_group_home_dir (default: datadir)
  std::string data_home_dir;   // innodb_data_home_dir (default: datadir)
  std::string undo_dir;        // innodb_undo_directory (default: datadir)
  std::string aria_log_dir;    // aria_log_dir_path (default: datadir)
  std::string data_file_path;  // innodb_data_file_path, when given (restore_places.h)
  bool move = false;           // --move-back: rename instead of copy
  bool force_non_empty = false;
  // DATA DIRECTORY tables: into the datadir (without their .isl) instead of
  // back to the directory their .isl names (--remote-tablespaces-to-datadir).
  bool remote_to_datadir = false;
  int parallel = 1;
};

Status RunCopyBack(const CopyBackOptions& opts);

}  // namespace xbak::restore
