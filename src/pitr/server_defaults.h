// What a server's defaults file gives it, as `mariadbd --defaults-file=F
// --print-defaults` prints it: for the replay server and --start-server, which
// run with the operator's my.cnf.
#pragma once

#include <string>

#include "xbak/util/status.h"

namespace xbak::pitr {

// The options F gives `program`, one line ("--a=1 --b=2 ...").
Result<std::string> PrintDefaults(const std::string& program, const std::string& defaults_file);
// The value of --NAME=... in that line ("" none): the last one, as mariadbd
// takes most options, or the first (first = true: user=, which mariadbd takes
// from its first occurrence).
std::string DefaultsOption(const std::string& printed, const std::string& name, bool first = false);

}  // namespace xbak::pitr
