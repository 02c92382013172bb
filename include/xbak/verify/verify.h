// `xbak --verify --target-dir=DIR [--incremental-dir=INC ...]`: checks that a
// backup directory (or a chain: a full backup and its incrementals, in order)
// is sound, without a server and without changing anything:
//
//  * xtrabackup_checkpoints parses, has a known backup_type and ordered LSNs;
//    a chain is continuous: each incremental's from_lsn is the previous
//    backup's to_lsn, and only the first one is a full backup;
//  * every file the metadata promises is there: backup-my.cnf, xtrabackup_info,
//    ib_logfile0, the system tablespace files of innodb_data_file_path, the
//    innodb_undo_tablespaces undo tablespaces (as .delta/.meta in an
//    incremental), xtrabackup_binlog_info when xtrabackup_info names a binlog
//    position;
//  * every InnoDB data file (ibdata*, undo*, *.ibd, *.new) has a whole number of
//    pages, a consistent page-0 space header, and every page passes the
//    server's checksum validation (all-zero pages are fine; the doublewrite area
//    of the system tablespace is skipped, as the copier skips it); pages carry
//    the space id of their file;
//  * every .delta has a valid .meta and well-formed blocks whose pages pass
//    their checksum;
//  * ib_logfile0's header and checkpoint parse, and its mini-transactions are
//    walkable from the checkpoint to the end of the file without a CRC error;
//    its end LSN is the checkpoints' last_lsn.
//
// Compressed backups (.zst/.lz4 files) are decompressed on the fly (frames
// and their content checksums are verified on the way). Files are checked in
// parallel on a fixed pool of threads; each byte is read once.
//
// Every problem is one line naming the file and the page or byte offset;
// VerifyBackup fails only for bad arguments: everything found in the backup
// is a problem in the result.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xbak/crypt/stream.h"
#include "xbak/util/status.h"

namespace xbak::verify {

struct VerifyOptions {
  std::string target_dir;                     // the full backup (or any one backup)
  std::vector<std::string> incremental_dirs;  // incrementals on top of it, in order
  int parallel = 1;                           // files checked at once
  // An encrypted backup's keys (--encrypt-key-file): its X.xbenc files are
  // decrypted as they are read (never on disk) and checked like X. Without
  // them an encrypted file's pages are not checked: a problem says so.
  const crypt::KeyRing* keys = nullptr;
  // Per file, the most page/block problems reported line by line; the rest
  // are counted in one summary line for that file.
  size_t max_problems_per_file = 20;
  // Receives each problem line as it is found (from any thread, serialized).
  // Default: nothing (the lines are also in VerifyResult::problems).
  std::function<void(const std::string& line)> on_problem;
};

struct VerifyResult {
  uint64_t files = 0;  // files checked
  uint64_t pages = 0;  // InnoDB pages checked (data files and deltas)
  uint64_t bytes = 0;  // bytes read (compressed files: their decompressed size)
  uint64_t problem_count = 0;
  std::vector<std::string> problems;  // the reported lines, sorted
  bool sound() const { return problem_count == 0; }
  // "verify: N files, M pages, K problems"
  std::string Summary() const;
};

Result<VerifyResult> VerifyBackup(const VerifyOptions& options);

}  // namespace xbak::verify
