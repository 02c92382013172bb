// my_getopt's grammar (the one the server, the clients and mariabackup share)
// over options that boost describes. Boost's own parser is stricter than the
// scripts and option files written for mariabackup: it refuses `password=`
// (an empty value), --skip-X, --loose-X and ON/OFF for a switch, and it
// cannot tell an unknown option from a bad value, which my_getopt answers
// with different exit codes. So the tokens are read here, as my_getopt reads
// them, and boost only stores and converts the values.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "xbak/util/options_file.h"

namespace xbak::cli {

// my_getopt's exit codes (the server's include/my_getopt.h), which
// mariabackup exits with when its options are wrong. Scripts test them.
enum class GetoptCode {
  kUnknownOption = 2,      // --name (no value) that no option has
  kAmbiguous = 3,          // a prefix of several options
  kNoArgumentAllowed = 4,  // --switch=value that is no ON/OFF
  kArgumentRequired = 5,   // --name without its value
  kUnknownVariable = 7,    // --name=value that no option has
  kArgumentInvalid = 13,   // a value of the wrong kind or out of range
};

struct GetoptError {
  GetoptCode code;
  std::string message;  // names the option and where it was given
};

// GivenOption::origin of the options of the command line (a file's are FILE:LINE).
inline constexpr const char* kCommandLineOrigin = "command line";

// One option as given, under its long name.
struct GivenOption {
  std::string name;
  std::optional<std::string> value;  // none: a switch, or an optional value left out
  std::string origin;                // "command line" or FILE:LINE
  bool off = false;                  // --skip-X, --disable-X, X=OFF: unset the switch
};

struct GivenOptions {
  std::vector<GivenOption> options;  // in the order given: the last of a name wins
  std::vector<std::string> positional;
  std::vector<std::string> warnings;  // --loose-X that no option has, ...
};

// Reads a command line (argv[1..]): --name[=value], --name value, -Xvalue,
// -X value, -? (help), '_' and '-' alike in names, a unique prefix of a name
// if `prefixes` (mariabackup turns my_getopt's prefix matching off),
// --loose-X (ignored with a warning when unknown), --skip-X/--disable-X/
// --enable-X and X=ON|OFF|TRUE|FALSE|1|0 for switches, -- ends the options.
// Everything after `stop_at` (mariabackup's --mysqld-args: options for the
// server) is ignored. Appends to *out.
std::optional<GetoptError> ReadCommandLine(const boost::program_options::options_description& desc,
                                           std::span<const std::string> args, GivenOptions* out,
                                           const std::string& stop_at = "", bool prefixes = true);

// Takes the options of an option file. `strict`: an option no xbak option
// has is an error (the groups that belong to xbak); otherwise it is skipped
// (groups shared with the server and other clients). Appends to *out.
std::optional<GetoptError> ReadFileOptions(const boost::program_options::options_description& desc,
                                           const util::OrderedOptions& options, bool strict, bool prefixes,
                                           GivenOptions* out);

// Stores the options into *vm through boost (which converts and checks the
// values): the last value of an option wins, every value of a repeatable one
// (a vector) is kept, in order, and an `off` switch removes it.
std::optional<GetoptError> StoreGiven(const boost::program_options::options_description& desc,
                                      const GivenOptions& given, boost::program_options::variables_map* vm);

}  // namespace xbak::cli
