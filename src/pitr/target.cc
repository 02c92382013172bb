#include "xbak/pitr/target.h"

#include <time.h>

#include <cstdio>

namespace xbak::pitr {

std::string Target::Describe() const {
  switch (kind) {
    case Kind::kLatest:
      return "the latest archived transaction";
    case Kind::kTime:
      return FormatLocalTime(time) + " (local time)";
    case Kind::kGtid:
      return "GTID " + binlog::FormatGtid(gtid);
  }
  return "";
}

Result<int64_t> ParseLocalTime(const std::string& text, const std::string& option) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 option + "='" + text + "': " + why + " (give 'YYYY-MM-DD HH:MM:SS', local time)");
  };
  struct tm tm {};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%d %H:%M:%S", &tm);
  if (end == nullptr || *end != '\0' || text.size() != 19) return bad("not a date and time");
  const struct tm asked = tm;
  tm.tm_isdst = -1;
  const time_t t = ::mktime(&tm);
  if (t == static_cast<time_t>(-1)) return bad("out of range");
  // mktime normalises what does not exist (2026-02-30, a time skipped at a
  // DST change): such a time is refused rather than moved.
  if (tm.tm_year != asked.tm_year || tm.tm_mon != asked.tm_mon || tm.tm_mday != asked.tm_mday ||
      tm.tm_hour != asked.tm_hour || tm.tm_min != asked.tm_min || tm.tm_sec != asked.tm_sec)
    return bad("no such local time");
  // In the hour repeated when the clocks go back, the same wall time is two
  // instants: refused rather than guessed.
  time_t both[2];
  int valid = 0;
  for (int dst = 0; dst < 2; dst++) {
    struct tm x = asked;
    x.tm_isdst = dst;
    both[dst] = ::mktime(&x);
    if (both[dst] != static_cast<time_t>(-1) && x.tm_hour == asked.tm_hour && x.tm_min == asked.tm_min &&
        x.tm_isdst == dst)
      valid++;
  }
  if (valid == 2 && both[0] != both[1])
    return bad("ambiguous: that hour happens twice at the DST change; use TZ=UTC");
  return static_cast<int64_t>(t);
}

std::string FormatLocalTime(int64_t unix_time) {
  const time_t t = static_cast<time_t>(unix_time);
  struct tm tm {};
  ::localtime_r(&t, &tm);
  char buf[32];
  ::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

Verdict Judge(const Target& t, const binlog::Transaction& tx) {
  switch (t.kind) {
    case Target::Kind::kLatest:
      return Verdict::kInclude;
    case Target::Kind::kTime:
      return tx.time > t.time ? Verdict::kStop : Verdict::kInclude;
    case Target::Kind::kGtid:
      return tx.gtid == t.gtid ? Verdict::kIncludeLast : Verdict::kInclude;
  }
  return Verdict::kStop;
}

}  // namespace xbak::pitr
