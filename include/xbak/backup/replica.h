// What a backup of a replica or cluster node records and does: --slave-info
// (the replication position, as SQL, in xtrabackup_slave_info), --galera-info
// (the Galera position) and --safe-slave-backup (the replica's SQL threads
// stopped while the server is held, once no temporary table is open in them).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "xbak/mysql/connection.h"
#include "xbak/util/status.h"

namespace xbak::backup {

// The content of xtrabackup_slave_info in mariabackup's form; "" (with a
// warning) when the server is not a replica.
Result<std::string> SlaveInfo(mysql::Connection& c);

// --galera-info: the content of xtrabackup_galera_info (the node's cluster
// state UUID, its last committed seqno, the wsrep GTID domain), read under
// BACKUP STAGE BLOCK_COMMIT so that the seqno is the backup's; "" (with a
// warning) when the server is not a Galera node.
Result<std::string> GaleraInfo(mysql::Connection& c);

// --safe-slave-backup. A temporary table a replicated statement created lives
// only in the SQL thread's session: a backup taken while one is open restores
// a replica that fails on the statements that use it. So, as xtrabackup does,
// the SQL threads are stopped, and started again for a moment while any is
// still open, until none is (or the timeout passes); they are started again
// by Restart, or by the destructor on a failure path. Only the connections
// whose SQL thread was running are touched.
class SafeSlave {
 public:
  // Does nothing (with a note) on a server that is not a replica.
  static Result<std::unique_ptr<SafeSlave>> Stop(mysql::Connection& c, std::chrono::seconds timeout);
  ~SafeSlave();
  SafeSlave(const SafeSlave&) = delete;
  SafeSlave& operator=(const SafeSlave&) = delete;

  // START SLAVE ... SQL_THREAD for each connection stopped. Idempotent.
  Status Restart();

 private:
  SafeSlave(mysql::Connection& c, std::vector<std::string> stopped) : c_(c), stopped_(std::move(stopped)) {}
  Status StopAll();
  Status StartAll();

  mysql::Connection& c_;
  std::vector<std::string> stopped_;  // connection names ("" is the default one)
  bool running_again_ = false;
};

}  // namespace xbak::backup
