// What a backup records of the server at its consistent point, besides the
// data: the binary log position and GTID (xtrabackup_binlog_info), with
// --slave-info the replica's position, with --galera-info the cluster's.
#pragma once

#include "xbak/backupdir/meta_names.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/mysql/connection.h"
#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::backup {

struct PositionsWanted {
  bool binlog = true;        // the server writes a binary log (@@log_bin)
  bool slave_info = false;   // --slave-info
  bool galera_info = false;  // --galera-info
};

// Asked while nothing commits (BACKUP STAGE BLOCK_COMMIT); each file is
// written to `meta` under the server's own tool's name. Returns the binary
// log position (empty file name when the server writes no binary log).
Result<backupdir::BinlogPosition> RecordPositions(mysql::Connection& c, sink::Sink& meta,
                                                  backupdir::MetaScheme scheme,
                                                  const PositionsWanted& wanted);

}  // namespace xbak::backup
