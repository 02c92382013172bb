// `xbak --prepare --export`: a .cfg file beside every InnoDB table's .ibd in
// a prepared backup, so that one table can be put into a running server with
// ALTER TABLE ... DISCARD TABLESPACE / IMPORT TABLESPACE (docs/export.md).
//
// The .cfg format and what it must say (column types, index fields, the
// instant ADD/DROP COLUMN state that IMPORT reads back) belong to the server:
// like mariabackup, xbak has the server write them. A MariaDB server of the
// backup's version is started on the prepared backup, with no network, no
// grant tables, no binary log and no replication, and is asked FLUSH TABLES
// ... FOR EXPORT table by table; each .cfg is kept (the server deletes it at
// UNLOCK TABLES), and the server is shut down slowly (innodb_fast_shutdown=0),
// which also rolls back the transactions that were open at the backup's end.
//
// Tables created with DATA DIRECTORY: their .isl files point at the source
// server's files, which the export server must never open; they are set aside
// while it runs (db/t.isl.xbak-export) and put back after, so it opens the
// copy in the backup.
//
// The server changes the backup's files (its redo log, the undo logs it
// rolls back and purges): the backup is marked exported (kExportedFile) and
// can no longer take incrementals; it still restores with --copy-back.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "xbak/prepare/prepare_crypt.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

inline constexpr const char* kExportedFile = "xbak_exported";
// db/t.isl while the export server runs (left so by a killed xbak: the next
// --export puts it back; --copy-back refuses the backup until then).
inline constexpr const char* kHiddenIslSuffix = ".isl.xbak-export";

struct ExportOptions {
  std::string dir;       // a prepared backup (xtrabackup_checkpoints: log-applied)
  std::string mariadbd;  // the server program ("": mariadbd in PATH, /usr/sbin, /usr/bin)
  uint64_t buffer_pool = 256ull << 20;
  std::string tmpdir;  // for the server's socket and log ("": $TMPDIR or /tmp)
  std::chrono::seconds start_timeout{1800};
  std::chrono::milliseconds progress_interval{2000};
  // An encrypted backup's key file where it is on this host (as for the
  // prepare): given to the server, over what backup-my.cnf says.
  KeyOptions keys;
};

struct ExportResult {
  size_t exported = 0;      // tables with a .cfg (a partitioned table counts once)
  size_t not_exported = 0;  // named in warnings, with the server's reason
};

Result<ExportResult> ExportTables(const ExportOptions& o);

}  // namespace xbak::prepare
