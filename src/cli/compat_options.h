// Options of mariabackup's that scripts, operators and option files pass and
// that xbak takes without acting on them: server settings the embedded
// InnoDB of mariabackup needed (xbak reads the files itself), knobs of its
// FLUSH TABLES WITH READ LOCK (xbak uses BACKUP STAGE), debug switches. Each
// is listed with why it has no effect, and shown in --help as such. Their
// values are still checked as the server checks them, so that a bad one
// fails as it would with mariabackup.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "getopt.h"

namespace xbak::cli {

// Adds them to `desc`.
void DescribeCompatOptions(boost::program_options::options_description* desc);

// The server settings among them whose value the server would refuse
// (innodb-flush-method=blablabla): the error, naming the option and value.
// `exit_code` is what mariabackup exits with for it (13 when its option
// parser refuses the value, 1 when its InnoDB start-up does).
struct CompatError {
  int exit_code;
  std::string message;
};
std::optional<CompatError> CheckCompatOptions(const boost::program_options::variables_map& vm);

}  // namespace xbak::cli
