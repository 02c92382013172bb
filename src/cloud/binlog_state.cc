// The `state` object of an archived binlog file (binlog_archive.h), as JSON
// (nlohmann::json, parsing untrusted bytes without exceptions).
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "xbak/cloud/binlog_archive.h"

namespace xbak::cloud {
namespace {

using nlohmann::json;

json GtidOrNull(const std::optional<binlog::Gtid>& g) {
  return g ? json(binlog::FormatGtid(*g)) : json(nullptr);
}

// Reads a field of the expected kind; false (and *bad set) if it is absent or another kind.
template <typename T>
bool Field(const json& j, const char* name, T* out, std::string* bad) {
  if (!j.contains(name)) {
    *bad = name;
    return false;
  }
  const json& v = j[name];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return *bad = name, false;
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<T>::max())
      return *bad = name, false;
  } else {
    if (!v.is_string()) return *bad = name, false;
  }
  *out = v.get<T>();
  return true;
}

}  // namespace

std::string EncodeBinlogState(const ArchivedBinlog& a) {
  const binlog::FileSummary& s = a.summary;
  json segments = json::array();
  for (const auto& seg : a.segments)
    segments.push_back({{"offset", seg.offset}, {"size", seg.size}, {"md5", storage::Md5Hex(seg.md5)}});
  json j = {{"version", 1},
            {"file", a.file},
            {"server_id", a.server_id},
            {"complete", a.complete},
            {"truncated", a.truncated},
            {"head_bytes", a.head_bytes},
            {"head_md5", storage::Md5Hex(a.head_md5)},
            {"segments", segments},
            {"server_version", s.server_version},
            {"checksum", s.checksum == binlog::Checksum::kCrc32 ? "crc32" : "none"},
            {"start_state", binlog::FormatGtidPosition(s.start_state)},
            {"end_state", binlog::FormatGtidPosition(s.end_state)},
            {"first_gtid", GtidOrNull(s.first_gtid)},
            {"last_gtid", GtidOrNull(s.last_gtid)},
            {"first_time", s.first_time},
            {"last_time", s.last_time},
            {"server_ids", s.server_ids},
            {"events", s.transaction_end_events},
            {"transactions", s.transactions},
            {"end", s.transaction_end},
            {"rotate_to", s.rotate_to},
            {"stopped", s.stopped}};
  // (replace: a name or version that is not UTF-8 must not end the pass; none of ours is.)
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<ArchivedBinlog> ParseBinlogState(const std::string& text, const std::string& origin) {
  const json j = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& what) {
    return Error(ErrorCode::kCorrupt, origin + ": " + what + " (a binlog archive state object)");
  };
  if (!j.is_object()) return bad("not a JSON object");
  ArchivedBinlog a;
  binlog::FileSummary& s = a.summary;
  std::string missing, head_md5, checksum, start_state, version_text;
  uint64_t version = 0;
  if (!Field(j, "version", &version, &missing) || version != 1) return bad("version is not 1");
  if (!Field(j, "file", &a.file, &missing) || !Field(j, "server_id", &a.server_id, &missing) ||
      !Field(j, "complete", &a.complete, &missing) || !Field(j, "head_bytes", &a.head_bytes, &missing) ||
      !Field(j, "head_md5", &head_md5, &missing) ||
      !Field(j, "server_version", &s.server_version, &missing) ||
      !Field(j, "checksum", &checksum, &missing) || !Field(j, "start_state", &start_state, &missing) ||
      !Field(j, "first_time", &s.first_time, &missing) || !Field(j, "last_time", &s.last_time, &missing) ||
      !Field(j, "events", &s.transaction_end_events, &missing) ||
      !Field(j, "transactions", &s.transactions, &missing) ||
      !Field(j, "end", &s.transaction_end, &missing) || !Field(j, "rotate_to", &s.rotate_to, &missing) ||
      !Field(j, "stopped", &s.stopped, &missing)) {
    return bad("\"" + missing + "\" missing or of the wrong kind");
  }
  auto md5 = storage::Md5FromHex(head_md5);
  if (!md5) return bad("head_md5 is not 32 hex digits");
  a.head_md5 = *md5;
  if (checksum != "crc32" && checksum != "none") return bad("checksum is '" + checksum + "'");
  s.checksum = checksum == "crc32" ? binlog::Checksum::kCrc32 : binlog::Checksum::kNone;
  auto state = binlog::ParseGtidPosition(start_state);
  if (!state.ok()) return bad(state.status().message());
  s.start_state = *state;
  // (States written before end_state was kept: the start advanced by the last GTID.)
  s.end_state = s.start_state;
  if (j.contains("end_state") && j["end_state"].is_string()) {
    auto end = binlog::ParseGtidPosition(j["end_state"].get<std::string>());
    if (!end.ok()) return bad(end.status().message());
    s.end_state = *end;
  }
  for (const char* name : {"first_gtid", "last_gtid"}) {
    if (!j.contains(name) || j[name].is_null()) continue;
    if (!j[name].is_string()) return bad(std::string(name) + " is not a GTID");
    auto g = binlog::ParseGtid(j[name].get<std::string>());
    if (!g.ok()) return bad(g.status().message());
    (std::string(name) == "first_gtid" ? s.first_gtid : s.last_gtid) = *g;
  }
  if (!j.contains("end_state") && s.last_gtid) binlog::Advance(&s.end_state, *s.last_gtid);
  if (!j.contains("server_ids") || !j["server_ids"].is_array()) return bad("server_ids is not a list");
  for (const auto& id : j["server_ids"]) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
      return bad("a server id is not a number");
    s.server_ids.push_back(id.get<uint32_t>());
  }
  if (!j.contains("segments") || !j["segments"].is_array()) return bad("segments is not a list");
  uint64_t end = 0;
  for (const auto& seg : j["segments"]) {
    BinlogSegment b;
    std::string hex;
    if (!seg.is_object() || !Field(seg, "offset", &b.offset, &missing) ||
        !Field(seg, "size", &b.size, &missing) || !Field(seg, "md5", &hex, &missing) ||
        !storage::Md5FromHex(hex) || b.offset != end || b.size == 0 || b.size > (uint64_t{1} << 40)) {
      return bad("segment " + std::to_string(a.segments.size()) + " is not contiguous or malformed");
    }
    b.md5 = *storage::Md5FromHex(hex);
    end = b.offset + b.size;
    a.segments.push_back(b);
  }
  if (end != s.transaction_end) return bad("its segments end at " + std::to_string(end) + ", not at \"end\"");
  if (!a.segments.empty() && (a.head_bytes == 0 || a.head_bytes > std::min<uint64_t>(512, end)))
    return bad("head_bytes " + std::to_string(a.head_bytes) + " is not within its first segment");
  if (j.contains("truncated") && j["truncated"].is_boolean()) a.truncated = j["truncated"].get<bool>();
  s.complete_bytes = s.transaction_end;
  s.events = s.transaction_end_events;
  s.in_use = !a.complete;
  return a;
}

std::string EncodeBinlogPass(const BinlogPass& p) {
  const json j = {{"version", 1}, {"time", p.time}, {"file", p.file}, {"offset", p.offset}};
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<BinlogPass> ParseBinlogPass(const std::string& text, const std::string& origin) {
  const json j = json::parse(text, nullptr, false);
  BinlogPass p;
  std::string missing;
  uint64_t version = 0, time = 0;
  if (!j.is_object() || !Field(j, "version", &version, &missing) || version != 1 ||
      !Field(j, "time", &time, &missing) || !Field(j, "file", &p.file, &missing) ||
      !Field(j, "offset", &p.offset, &missing) || time > (uint64_t{1} << 40)) {
    return Error(ErrorCode::kCorrupt, origin + ": not a binlog archive pass marker" +
                                          (missing.empty() ? std::string() : " (\"" + missing + "\")"));
  }
  p.time = static_cast<int64_t>(time);
  return p;
}

}  // namespace xbak::cloud
