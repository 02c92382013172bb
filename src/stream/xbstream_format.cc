// Chunk encoding and path rules shared by the writer, reader and extractor.

#include <algorithm>

#include "xbak/stream/xbstream.h"
#include "xbak/util/crc32.h"
#include "xbak/util/endian.h"

namespace xbak::stream {

uint32_t XbstreamCrc32(const void* data, size_t n) { return util::crc32::Value(data, n); }

uint32_t XbstreamZerosCrc32(size_t n) {
  static const uint32_t kBlockCrc = XbstreamCrc32(util::ZeroBlock(), util::kZeroBlockLen);
  return n == util::kZeroBlockLen ? kBlockCrc : XbstreamCrc32(util::ZeroBlock(), n);
}

namespace {
std::string FixedHeader(char type, std::string_view path, size_t extra) {
  std::string h;
  h.reserve(kXbstreamFixedHeaderLen + path.size() + extra);
  h.append(kXbstreamMagic);
  h.push_back(0);  // flags: we never write ignorable chunks
  h.push_back(type);
  uint8_t len[4];
  util::StoreLE32(len, static_cast<uint32_t>(path.size()));
  h.append(reinterpret_cast<const char*>(len), 4);
  h.append(path);
  return h;
}
}  // namespace

std::string EncodePayloadChunkHeader(std::string_view path, uint64_t payload_len, uint64_t offset,
                                     uint32_t crc) {
  std::string h = FixedHeader('P', path, kXbstreamPayloadHeaderLen);
  uint8_t tail[kXbstreamPayloadHeaderLen];
  util::StoreLE64(tail, payload_len);
  util::StoreLE64(tail + 8, offset);
  util::StoreLE32(tail + 16, crc);
  h.append(reinterpret_cast<const char*>(tail), sizeof(tail));
  return h;
}

std::string EncodeEofChunk(std::string_view path) { return FixedHeader('E', path, 0); }

Result<std::string> NormalizeXbstreamPath(std::string_view path) {
  auto bad = [&](const std::string& why) {
    std::string shown(path.substr(0, std::min<size_t>(path.size(), 200)));
    std::replace(shown.begin(), shown.end(), '\0', '?');
    return Error(ErrorCode::kCorrupt, "unsafe path '" + shown + "' in xbstream: " + why);
  };
  if (path.empty()) return bad("empty path");
  if (path.size() > kXbstreamMaxPathLen) return bad("path too long");
  if (path.find('\0') != std::string_view::npos) return bad("path contains a NUL byte");
  if (path.front() == '/') return bad("absolute path");
  std::string out;
  out.reserve(path.size());
  size_t pos = 0;
  while (true) {
    size_t slash = path.find('/', pos);
    std::string_view comp =
        path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (comp.empty()) return bad("empty path component");
    if (comp == "..") return bad("'..' component");
    if (comp != ".") {
      if (!out.empty()) out.push_back('/');
      out.append(comp);
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  if (out.empty()) return bad("path names the target directory itself");
  if (out.size() >= kXbstreamPartialSuffix.size() &&
      std::string_view(out).substr(out.size() - kXbstreamPartialSuffix.size()) == kXbstreamPartialSuffix) {
    // Reserved so that a *.xbpartial name always means "incomplete".
    return bad("name ends in the reserved suffix " + std::string(kXbstreamPartialSuffix));
  }
  return out;
}

}  // namespace xbak::stream
