// Reader for MySQL/MariaDB option files (my.cnf syntax): [group] headers,
// "key = value" or bare "key" lines, '#'/';' comments, quoted values,
// !include and !includedir. Keys are normalised with '_' -> '-' so that
// "innodb_log_file_size" and "innodb-log-file-size" are the same option.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::util {

// One option as read from a file, remembering where it came from so that an
// error can name "FILE:LINE".
struct OptionValue {
  std::string value;
  std::string origin;
};

using OptionMap = std::map<std::string, OptionValue>;

// Reads `path` and returns the options of the listed groups, later groups and
// later lines overriding earlier ones (as the mysql clients do). A missing file
// is an error only if `must_exist`.
Result<OptionMap> ReadOptionFile(const std::string& path, const std::vector<std::string>& groups,
                                 bool must_exist = true);

// Parses option-file text (for tests and for reading backup-my.cnf).
Result<OptionMap> ParseOptionText(const std::string& text, const std::string& origin,
                                  const std::vector<std::string>& groups);

// The options file a command line asks for, as the mysql clients choose it:
// --defaults-file=F (which must exist), none with --no-defaults, else
// ~/.my.cnf if it exists. `path` is empty when there is none to read.
struct OptionFileChoice {
  std::string path;
  bool must_exist = false;
};
OptionFileChoice ChooseOptionFile(int argc, const char* const* argv);

}  // namespace xbak::util
