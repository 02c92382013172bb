#include "xbak/util/log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace xbak::util {

void Log(LogLevel level, std::string_view message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
  const char* tag = level == LogLevel::kError ? " ERROR: " : level == LogLevel::kWarning ? " WARNING: " : " ";
  std::string line;
  line.reserve(message.size() + 48);
  // "[00] " as mariabackup's lines begin (its thread number; xbak's lines are the main thread's):
  // scripts and log collectors that parse mariabackup's output read xbak's the same way.
  line += "[00] ";
  line += ts;
  line += tag;
  line += message;
  line += '\n';
  // One write(2) per line: lines from different threads never interleave.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, left);
    if (w <= 0) break;
    p += w;
    left -= static_cast<size_t>(w);
  }
}

}  // namespace xbak::util
