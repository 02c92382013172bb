#include "xbak/binlog/event.h"

#include <algorithm>
#include <cstring>

#include "xbak/util/crc32.h"

namespace xbak::binlog {
namespace {

template <typename T>
T Le(std::string_view b, size_t at) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); i++) v |= static_cast<T>(static_cast<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

Status Short(const char* what, size_t have, size_t need) {
  return Error(ErrorCode::kCorrupt, std::string(what) + " event of " + std::to_string(have) +
                                        " bytes, shorter than the " + std::to_string(need) + " it needs");
}

}  // namespace

EventHeader ParseHeader(std::string_view b) {
  return {Le<uint32_t>(b, 0), static_cast<uint8_t>(b[4]), Le<uint32_t>(b, 5),
          Le<uint32_t>(b, 9), Le<uint32_t>(b, 13),        Le<uint16_t>(b, 17)};
}

Result<FormatDescription> ParseFormatDescription(std::string_view event) {
  // header, binlog version (2), server version (50), created (4), header
  // length (1), post-header lengths, checksum algorithm (1), checksum (4)
  constexpr size_t kFixed = kHeaderSize + 2 + 50 + 4 + 1;
  if (event.size() < kFixed + 1 + kChecksumSize) return Short("format description", event.size(), kFixed + 5);
  FormatDescription f;
  f.binlog_version = Le<uint16_t>(event, kHeaderSize);
  std::string_view v = event.substr(kHeaderSize + 2, 50);
  f.server_version = std::string(v.substr(0, v.find('\0')));
  if (f.binlog_version != 4) {
    return Error(ErrorCode::kUnsupported, "binlog version " + std::to_string(f.binlog_version) +
                                              " (only version 4, MariaDB 10.x's, is read)");
  }
  if (static_cast<uint8_t>(event[kHeaderSize + 56]) != kHeaderSize) {
    return Error(ErrorCode::kCorrupt, "format description with a header length of " +
                                          std::to_string(static_cast<uint8_t>(event[kHeaderSize + 56])) +
                                          ", not 19");
  }
  const uint8_t alg = static_cast<uint8_t>(event[event.size() - kChecksumSize - 1]);
  if (alg == 1) {
    f.checksum = Checksum::kCrc32;
  } else if (alg != 0) {
    return Error(ErrorCode::kUnsupported,
                 "checksum algorithm " + std::to_string(alg) + " (none or CRC32 are)");
  }
  return f;
}

bool ChecksumMatches(std::string_view event) {
  if (event.size() < kChecksumSize) return false;
  const size_t n = event.size() - kChecksumSize;
  return util::crc32::Value(event.data(), n) == Le<uint32_t>(event, n);
}

Result<GtidEvent> ParseGtidEvent(std::string_view body, uint32_t server_id) {
  if (body.size() < 13) return Short("GTID", body.size(), 13);
  GtidEvent e;
  e.gtid = {Le<uint32_t>(body, 8), server_id, Le<uint64_t>(body, 0)};
  e.flags = static_cast<uint8_t>(body[12]);
  return e;
}

Result<GtidPosition> ParseGtidList(std::string_view body) {
  if (body.size() < 4) return Short("GTID list", body.size(), 4);
  // The count's top 4 bits are flags.
  const uint32_t count = Le<uint32_t>(body, 0) & 0x0fffffff;
  if (body.size() < 4 + uint64_t{count} * 16) return Short("GTID list", body.size(), 4 + size_t{count} * 16);
  GtidPosition p;
  for (uint32_t i = 0; i < count; i++) {
    const size_t at = 4 + size_t{i} * 16;
    Advance(&p, {Le<uint32_t>(body, at), Le<uint32_t>(body, at + 4), Le<uint64_t>(body, at + 8)});
  }
  return p;
}

Result<std::string> ParseRotate(std::string_view body) {
  if (body.size() < 9) return Short("rotate", body.size(), 9);
  std::string name(body.substr(8));
  // A file name the server made: printable ASCII, no path.
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(),
                                                  [](char c) { return c > ' ' && c < 127 && c != '/'; });
  if (!plain || name == "." || name == "..")
    return Error(ErrorCode::kCorrupt, "rotate event naming '" + name.substr(0, 64) + "', not a file name");
  return name;
}

}  // namespace xbak::binlog
