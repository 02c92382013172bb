// xbcloud restore --start-server: the restored datadir handed to the server
// as the operator runs it (its own my.cnf), left running when xbcloud exits.
#pragma once

#include <chrono>
#include <string>

#include "xbak/util/status.h"

namespace xbak::pitr {

// Starts `program --defaults-file=F --datadir=D` in a session of its own (as
// root: the datadir made its user's first, user= of F or mysql), and waits
// until it answers on its socket (socket= of F, else Debian's
// /run/mysqld/mysqld.sock). A server that exits meanwhile is an error naming
// its status and its log.
Status StartRestoredServer(const std::string& program, const std::string& defaults_file,
                           const std::string& datadir,
                           std::chrono::seconds timeout = std::chrono::seconds(900));

}  // namespace xbak::pitr
