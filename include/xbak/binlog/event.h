// The MariaDB binary log's event format (binlog version 4), the parts the
// archiver acts on: every event's 19-byte header, its CRC32, and the bodies
// of the events that say where a file stands (format description, GTID,
// GTID list, rotate). Learned from MariaDB's documentation of the format and
// checked against files a MariaDB 10.11 server wrote (tests/unit/binlog).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "xbak/binlog/gtid.h"
#include "xbak/util/status.h"

namespace xbak::binlog {

// Every binlog file starts with these 4 bytes.
inline constexpr std::string_view kMagic{
    "\xfe"
    "bin",
    4};
inline constexpr size_t kHeaderSize = 19;
inline constexpr size_t kChecksumSize = 4;
// The format description event's own flag: the server has the file open
// (it clears it when it closes the file). A copy taken while set may end
// in an event still being written.
inline constexpr uint16_t kFlagInUse = 0x1;

enum EventType : uint8_t {
  kQuery = 2,
  kXaPrepare = 38,  // ends an XA transaction's first phase (XA PREPARE)
  kStop = 3,
  kRotate = 4,
  kXid = 16,
  kFormatDescription = 15,
  kTableMap = 19,
  kAnnotateRows = 160,
  kBinlogCheckpoint = 161,
  kGtid = 162,
  kGtidList = 163,
  kStartEncryption = 164,
  kQueryCompressed = 165,  // a query event compressed (log_bin_compress): its text is not read
};

struct EventHeader {
  uint32_t timestamp = 0;  // Unix time the event's statement began
  uint8_t type = 0;
  uint32_t server_id = 0;
  uint32_t length = 0;    // the whole event: header, body, checksum
  uint32_t next_pos = 0;  // its end's offset in the file (0 in some relay logs)
  uint16_t flags = 0;
};
// The first kHeaderSize bytes of `bytes` (which must hold them).
EventHeader ParseHeader(std::string_view bytes);

// Whether events carry a CRC32 (binlog_checksum), from the format
// description event.
enum class Checksum { kNone, kCrc32 };

struct FormatDescription {
  uint16_t binlog_version = 0;
  std::string server_version;  // "10.11.19-MariaDB-0+deb12u1-log"
  Checksum checksum = Checksum::kNone;
};
// The whole event (header included). Its checksum algorithm byte sits 5
// bytes before its end, followed by 4 bytes that are its CRC32 when the
// algorithm is CRC32 (and present, unchecked, when it is none).
Result<FormatDescription> ParseFormatDescription(std::string_view event);

// CRC32 (zlib's polynomial) of all but the last 4 bytes against those 4
// (little-endian).
bool ChecksumMatches(std::string_view event);

// A GTID event's body (without header and checksum) and the header's server id.
struct GtidEvent {
  Gtid gtid;
  uint8_t flags = 0;
  bool standalone() const { return (flags & 1) != 0; }  // DDL or other statement outside a transaction
};
Result<GtidEvent> ParseGtidEvent(std::string_view body, uint32_t server_id);
// A GTID list event's body: the binlog state when the file began.
Result<GtidPosition> ParseGtidList(std::string_view body);
// A rotate event's body: the next file's name.
Result<std::string> ParseRotate(std::string_view body);

}  // namespace xbak::binlog
