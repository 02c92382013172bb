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

// One line of an option file, in file order (what the mysql programs see:
// a later line wins over an earlier one whatever their groups).
struct OrderedOption {
  std::string key;  // normalised: '_' -> '-'
  std::string value;
  bool has_value = false;  // "key = value" (even empty: "password="), not a bare "key"
  std::string origin;      // FILE:LINE
  std::string group;
};
using OrderedOptions = std::vector<OrderedOption>;

// The options of the listed groups of `path` (and of the files it includes),
// in file order. A missing file is an error only if `must_exist`.
Result<OrderedOptions> ReadOptionsInOrder(const std::string& path, const std::vector<std::string>& groups,
                                          bool must_exist = true);

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
