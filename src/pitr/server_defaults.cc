#include "server_defaults.h"

#include "xbak/util/process.h"

namespace xbak::pitr {

Result<std::string> PrintDefaults(const std::string& program, const std::string& defaults_file) {
  return util::RunAndCapture({program, "--defaults-file=" + defaults_file, "--print-defaults"});
}

std::string DefaultsOption(const std::string& printed, const std::string& name, bool first) {
  std::string value;
  const std::string key = "--" + name + "=";
  for (size_t at = printed.find(key); at != std::string::npos; at = printed.find(key, at + 1)) {
    if (at > 0 && printed[at - 1] != ' ' && printed[at - 1] != '\n') continue;
    const size_t from = at + key.size();
    value = printed.substr(from, printed.find_first_of(" \n", from) - from);
    if (first) break;
  }
  return value;
}

}  // namespace xbak::pitr
