// One backup directory as --verify sees it: its files (a compressed file under
// its plain name), its metadata, and the files the metadata promises.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "log_checker.h"
#include "problems.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/crypt/stream.h"
#include "xbak/sink/compress.h"
#include "xbak/util/file.h"

namespace xbak::verify {

struct FileEntry {
  std::string rel;   // as stored, e.g. "db/t.ibd.zst.xbenc"
  std::string base;  // without the encryption and compression suffixes
  std::optional<sink::CompressOptions::Algo> algo;
  bool encrypted = false;  // X.xbenc (of X, or of X.zst)
  uint64_t size = 0;
};

struct BackupDir {
  std::string dir;
  bool has_checkpoints = false;
  backupdir::Checkpoints cp;
  uint32_t page_size = 16384;
  std::vector<std::string> system_files{"ibdata1"};
  std::vector<uint32_t> system_first_page{0};  // page number of each one's first page
  uint32_t undo_tablespaces = 0;
  bool binlog_promised = false;
  std::map<std::string, FileEntry> files;  // by base name
  std::vector<std::string> stored;         // every stored name (rel), for lookups
  std::set<std::string> stored_set;
  // Results of the jobs, read after they finished.
  std::unique_ptr<LogChecker> log;
  std::unique_ptr<FileProblems> log_problems;
};

inline bool IsIncremental(const BackupDir& b) {
  return b.has_checkpoints && b.cp.backup_type == "incremental";
}
inline bool IsPrepared(const BackupDir& b) {
  return b.has_checkpoints && (b.cp.backup_type == "log-applied" || b.cp.backup_type == "full-prepared");
}

inline std::string Display(const BackupDir& b, const std::string& rel) { return util::JoinPath(b.dir, rel); }

// Lists `root`/`rel` recursively into b->files; what cannot be a backup's
// (symbolic links, special files, a file stored twice) is a problem.
void ListTree(const std::string& root, const std::string& rel, BackupDir* b, Reporter& r);

// Reads the metadata files of one backup, once ListTree listed it (under the
// names it has: xtrabackup_* or mariadb_backup_*; an encrypted one's with `keys`,
// in memory). Missing or bad ones are problems.
void ReadMetadata(BackupDir* b, const crypt::KeyRing* keys, Reporter& r);

// Files that the metadata says must be there.
void CheckPromised(const BackupDir& b, Reporter& r);

}  // namespace xbak::verify
