// A backup without locks (--no-lock) cannot stop DDL; it can only see it.
// DdlWatch sees it two ways: a file-per-table tablespace created, renamed or
// dropped in the redo log at or after the LSN it was armed at, and a table
// definition file (.frm, .par, .TRG, .TRN, db.opt) added, removed or changed
// between the listing at Arm and the one at Check (an instant ALTER TABLE
// changes the .frm only). Either fails the backup: its table definitions
// might not match its data. (With BACKUP STAGE BLOCK_DDL none of this can
// happen, which is why a locked backup needs no watch.)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/table_filter.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/status.h"

namespace xbak::backup {

class DdlWatch {
 public:
  // From the redo copier's thread: every file operation it reads.
  void OnFileOp(const innodb::FileOp& op, uint64_t lsn);

  // Starts watching: operations at or after `lsn` count, and the definition
  // files of `layout`'s datadir (as `filter` takes them) are stamped now.
  Status Arm(uint64_t lsn, const backupdir::ServerLayout& layout, const backupdir::TableFilter& filter);

  // After the redo copy stopped: fails naming the first DDL seen.
  Status Check(const backupdir::ServerLayout& layout, const backupdir::TableFilter& filter) const;

  struct Stamp {
    ino_t ino = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };

 private:
  using Stamps = std::map<std::string, Stamp>;  // rel path -> stamp
  static Result<Stamps> StampDefinitions(const backupdir::ServerLayout& layout,
                                         const backupdir::TableFilter& filter);

  mutable std::mutex mu_;
  bool armed_ = false;
  uint64_t from_lsn_ = 0;
  std::vector<std::pair<uint64_t, innodb::FileOp>> ops_;  // DDL on db/t.ibd files, as read
  Stamps before_;
};

}  // namespace xbak::backup
