// A delta that `xbak --restore --from-stream` wrote into the datadir as its
// stream arrived (restore/direct_delta.h) is staged as NAME.xbapplied instead
// of NAME.delta: the tablespace's id and the numbers of the pages written.
// The incremental's apply then counts the delta as applied (for the DDL
// markers and the sweep of files no delta names) without writing it again,
// and the redo step before it leaves those pages out (delta_pages.h).
//
// An empty NAME.xbapplied stands for nothing: that delta was staged as
// NAME.delta after all (its table was re-created between the backups).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::prepare {

inline constexpr std::string_view kAppliedDeltaSuffix = ".xbapplied";

struct AppliedDelta {
  uint32_t space_id = 0;
  std::vector<uint32_t> pages;  // in the order written
};

std::string FormatAppliedDelta(const AppliedDelta& d);
// The same record a piece at a time, as the pages go in (a huge delta's list
// is never held whole): the head, then each page number appended.
std::string AppliedDeltaHead(uint32_t space_id);
void AppendAppliedPage(std::string* out, uint32_t page_no);
// `origin` names the file in errors.
Result<AppliedDelta> ParseAppliedDelta(std::string_view bytes, const std::string& origin);
// The space id of the record at `path`, from its head alone.
Result<uint32_t> ReadAppliedDeltaSpace(const std::string& path);

}  // namespace xbak::prepare
