// Where a point-in-time restore stops (xbcloud restore --to-time, --to-gtid,
// --latest), and the rule that says whether a transaction of the archived
// binary logs is before it.
//
// A restore is a prefix of the binary log: transactions are replayed in the
// order the server wrote them, up to the target, and never one after a
// transaction the target excludes (the data would not be a state the server
// ever had otherwise).
//   --to-time=T   every transaction before the first one committed after T
//                 (its last event's timestamp, whole seconds, > T): the state
//                 at the end of second T. T is read in the local time zone
//                 (TZ), as mariadb-binlog --stop-datetime reads it.
//   --to-gtid=G   up to and including the transaction G.
//   --latest      everything archived.
#pragma once

#include <cstdint>
#include <string>

#include "xbak/binlog/gtid.h"
#include "xbak/binlog/scanner.h"
#include "xbak/util/status.h"

namespace xbak::pitr {

struct Target {
  enum class Kind { kLatest, kTime, kGtid } kind = Kind::kLatest;
  int64_t time = 0;   // kTime: Unix time
  binlog::Gtid gtid;  // kGtid
  std::string text;   // as given, for messages

  // "the latest archived transaction", "2026-11-27 14:31:59", "GTID 0-1-42"
  std::string Describe() const;
};

// "YYYY-MM-DD HH:MM:SS" in the local time zone -> Unix time; kInvalidArgument
// naming `option` otherwise (also for a time the clock skips at a DST change).
Result<int64_t> ParseLocalTime(const std::string& text, const std::string& option);
std::string FormatLocalTime(int64_t unix_time);

enum class Verdict {
  kInclude,      // replay it, and go on
  kIncludeLast,  // replay it: it is the target
  kStop,         // the target is before it: stop here
};
Verdict Judge(const Target& t, const binlog::Transaction& tx);

}  // namespace xbak::pitr
