// MariaDB global transaction ids: "DOMAIN-SERVER-SEQ" (0-1-42), and a GTID
// position, one GTID per replication domain ("0-1-42,5-7-1"), as
// gtid_current_pos, xtrabackup_binlog_info and GTID_LIST events hold them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::binlog {

struct Gtid {
  uint32_t domain = 0;
  uint32_t server = 0;
  uint64_t seq = 0;
  bool operator==(const Gtid&) const = default;
};

// "D-S-N", decimal, each in range; kInvalidArgument naming the text otherwise.
Result<Gtid> ParseGtid(std::string_view text);
std::string FormatGtid(const Gtid& g);

// A position: at most one GTID per domain, kept sorted by domain.
using GtidPosition = std::vector<Gtid>;
// "D-S-N,D-S-N" (white space around commas allowed; "" is the empty
// position); a domain given twice is an error.
Result<GtidPosition> ParseGtidPosition(std::string_view text);
std::string FormatGtidPosition(const GtidPosition& p);
// The position after `g`: its domain's entry replaced (or added).
void Advance(GtidPosition* p, const Gtid& g);

}  // namespace xbak::binlog
