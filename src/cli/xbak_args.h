// xbak's command line: the options of every mode as parsed from the option
// files and argv (as mariabackup finds them, option_sources.h), and the
// checks every mode shares.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xbak/prepare/prepare.h"

namespace xbak::cli {

// What main() parsed and checked, for the function of the mode.
struct Args {
  boost::program_options::variables_map vm;
  prepare::KeyOptions keys;
  int parallel = 1;
  int fifo_streams = 1;
  std::chrono::seconds fifo_timeout{60};
  std::string tool_command;  // the command line with its secrets wiped (for --history)
  std::string tool_name;     // the name xbak was run as (for --history)
  // --datadir given on the command line (not only by an option file): a
  // backup takes the running server's datadir over an option file's, which
  // may be another server's (/etc/mysql/my.cnf's [mysqld]), as mariabackup does.
  bool datadir_on_command_line = false;
  // Where --innodb-force-recovery's value came from: "command line" or FILE:LINE (getopt.h).
  std::string force_recovery_origin;

  std::string Str(const char* k) const {
    if (!vm.count(k)) return std::string();
    // --incremental-dir may repeat (--verify, --restore); other modes take one.
    if (auto* v = boost::any_cast<std::vector<std::string>>(&vm[k].value())) return v->back();
    return vm[k].as<std::string>();
  }
};

// Parses the option files and the command line into a->vm; an exit status
// when there is nothing more to do (a parse error, --help, --version). Under
// mariabackup's name (a link named mariabackup or mariadb-backup), a bad
// option exits with my_getopt's codes (getopt.h), as scripts test.
std::optional<int> Parse(int argc, char** argv, Args* a);

// What no mode accepts, and the settings every mode shares (into *a); an
// exit status when the command line is refused.
std::optional<int> CheckCommon(Args* a);

}  // namespace xbak::cli
