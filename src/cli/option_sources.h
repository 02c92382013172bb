// Where xbak's options come from, found as mariabackup finds them, so that
// the option files and command lines written for it work unchanged: the
// option files of the mysql programs' chain (or --defaults-file,
// --defaults-extra-file, --no-defaults), their groups (with the twins
// --defaults-group-suffix names), then the command line, which wins.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "getopt.h"

namespace xbak::cli {

// The groups of an option file xbak reads, by what it takes from them.
struct OptionGroups {
  // Its own: every option, and one xbak does not have is an error (a typo
  // there would otherwise be silently ignored).
  std::vector<std::string> tool;
  // The clients' ([client]): the connection only.
  std::vector<std::string> client;
  // The server's ([mysqld], ...): where the server keeps its files, and the
  // server options xbak checks (innodb-flush-method, ...); the rest is the
  // server's business and skipped.
  std::vector<std::string> server;
};

// xbak's groups, those mariabackup 10.11 reads: [xtrabackup], [mariabackup],
// [mariadb-backup] and [xbak]; [client], [client-server], [client-mariadb];
// [mysqld], [server], [mariadb], [mariadbd], their -10.11 and -11.8 twins
// (the tested series), [client-server], [galera]. Not
// [mariadb-client] (which mariabackup ignores too: MDEV-22894).
OptionGroups XbakGroups();

// The option files to read: `defaults_file` alone if given (it must exist),
// else the chain /etc/my.cnf, /etc/mysql/my.cnf, `extra_file`, ~/.my.cnf
// (each read if it exists); none with `no_defaults`.
struct OptionFile {
  std::string path;
  bool must_exist = false;
};
std::vector<OptionFile> OptionFileChain(bool no_defaults, const std::string& defaults_file,
                                        const std::string& extra_file, const char* home);

// The command line `args` (argv[1..]) and the option files it chooses, as one
// list for StoreGiven: the files' options first, in file order, then the
// command line's. Options after --mysqld-args are the server's, ignored.
// `prefixes`: a unique prefix of an option's name stands for it.
// --defaults-group-suffix=S (or $MYSQL_GROUP_SUFFIX) also reads each group
// G as G + S.
std::optional<GetoptError> GatherOptions(const boost::program_options::options_description& desc,
                                         std::span<const std::string> args, const OptionGroups& groups,
                                         std::span<const std::string_view> client_keys,
                                         std::span<const std::string_view> server_keys, bool prefixes,
                                         GivenOptions* out);

}  // namespace xbak::cli
