#include "command_line.h"

#include <algorithm>
#include <cstddef>

namespace xbak::cli {

// The command line as boost is to read it: option names with '_' spelled '-'
// (mariabackup's --loose-file_key_management_filename, say).
std::vector<std::string> NormalizedArgs(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace xbak::cli
