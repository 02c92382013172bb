#include "xbak/innodb/isl.h"

#include <algorithm>

namespace xbak::innodb {

Result<std::string> ParseIsl(const std::string& content, const std::string& origin) {
  std::string p = content;
  while (!p.empty() && static_cast<unsigned char>(p.back()) <= 0x20) p.pop_back();
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kCorrupt, origin + ": not a usable DATA DIRECTORY link (" + why + ")");
  };
  if (p.empty()) return bad("it is empty");
  if (p.find('\0') != std::string::npos) return bad("it holds a NUL byte");
  if (p[0] != '/') return bad("'" + p + "' is not an absolute path");
  if (std::count(p.begin(), p.end(), '/') < 2) return bad("'" + p + "' has no directory part");
  if (!p.ends_with(".ibd")) return bad("'" + p + "' does not name an .ibd file");
  for (size_t at = 0; (at = p.find("/..", at)) != std::string::npos; at += 3) {
    if (at + 3 == p.size() || p[at + 3] == '/') return bad("'" + p + "' contains '..'");
  }
  return p;
}

std::string FormatIsl(const std::string& ibd_path) { return ibd_path; }

}  // namespace xbak::innodb
