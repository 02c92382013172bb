#include "xbak/util/utc_time.h"

#include <ctime>

namespace xbak::util {

std::string FormatUtc(int64_t unix_time, const char* format) {
  time_t t = static_cast<time_t>(unix_time);
  struct tm tm;
  if (gmtime_r(&t, &tm) == nullptr) return "?";  // beyond what gmtime can express
  char out[64];
  size_t n = std::strftime(out, sizeof out, format, &tm);
  return std::string(out, n);
}

}  // namespace xbak::util
