#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "xbak/stream/xbstream.h"
#include "xbak/util/endian.h"
#include "xbak/util/hex.h"

namespace xbak::stream {
namespace {

constexpr size_t kReadBufferSize = size_t{1} << 20;

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}

// Paths in messages: stop at a NUL or control byte so the message stays one line.
std::string Printable(const std::string& path) {
  std::string s = path.substr(0, 200);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return s;
}

}  // namespace

ChunkReader::ChunkReader(int fd, std::string description)
    : fd_(fd), description_(std::move(description)), buf_(kReadBufferSize) {}

Status ChunkReader::Corrupt(uint64_t at, const std::string& path, const std::string& what) const {
  std::string msg = "corrupt " + description_ + " at byte " + std::to_string(at);
  if (!path.empty()) msg += " (file " + Printable(path) + ")";
  return Error(ErrorCode::kCorrupt, msg + ": " + what);
}

Result<size_t> ChunkReader::RawRead(void* dst, size_t cap) {
  while (true) {
    if (cancel_ != nullptr) {
      // Wait in slices so a raised cancel flag is seen even on a silent FIFO.
      pollfd pfd{fd_, POLLIN, 0};
      int r = ::poll(&pfd, 1, 100);
      if (cancel_->load(std::memory_order_relaxed)) {
        return Error(ErrorCode::kCancelled, "reading " + description_ + " cancelled");
      }
      if (r < 0 && errno != EINTR) return ErrnoError("poll", description_, errno);
      if (r <= 0) continue;
    }
    ssize_t n = ::read(fd_, dst, cap);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", description_ + " at byte " + std::to_string(offset_), errno);
    }
    return static_cast<size_t>(n);
  }
}

Result<size_t> ChunkReader::Read(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    if (buf_pos_ == buf_len_) {
      if (n - done >= buf_.size()) {
        // Big payloads go straight to their destination, skipping a copy.
        XBAK_ASSIGN_OR_RETURN(size_t r, RawRead(out + done, n - done));
        if (r == 0) break;  // end of stream
        done += r;
        continue;
      }
      XBAK_ASSIGN_OR_RETURN(size_t r, RawRead(buf_.data(), buf_.size()));
      buf_pos_ = 0;
      buf_len_ = r;
      if (r == 0) break;  // end of stream
    }
    size_t take = std::min(n - done, buf_len_ - buf_pos_);
    std::memcpy(out + done, buf_.data() + buf_pos_, take);
    buf_pos_ += take;
    done += take;
  }
  offset_ += done;
  return done;
}

Result<bool> ChunkReader::Next(Chunk* chunk) {
  const uint64_t start = offset_;
  chunk->stream_offset = start;
  chunk->path.clear();
  chunk->payload.clear();
  chunk->offset = 0;

  uint32_t path_len = 0;
  XBAK_ASSIGN_OR_RETURN(bool found, ReadFixedHeader(start, chunk, &path_len));
  if (!found) return false;
  XBAK_RETURN_IF_ERROR(ReadPath(start, path_len, chunk));
  if (chunk->type == ChunkType::kEof) return true;
  XBAK_RETURN_IF_ERROR(ReadPayload(start, chunk));
  return true;
}

// Each check comes before what it guards: the magic before the rest of the
// header is believed, the path length before it is allocated.
Result<bool> ChunkReader::ReadFixedHeader(uint64_t start, Chunk* chunk, uint32_t* path_len) {
  uint8_t fixed[kXbstreamFixedHeaderLen];
  XBAK_ASSIGN_OR_RETURN(size_t got, Read(fixed, sizeof(fixed)));
  if (got == 0) return false;
  if (got < sizeof(fixed)) {
    return Corrupt(start, "",
                   "truncated chunk header (stream ends after " + std::to_string(got) + " of " +
                       std::to_string(sizeof(fixed)) + " fixed header bytes)");
  }
  if (std::memcmp(fixed, kXbstreamMagic.data(), kXbstreamMagic.size()) != 0) {
    return Corrupt(start, "",
                   "bad chunk magic (expected " +
                       Hex(reinterpret_cast<const uint8_t*>(kXbstreamMagic.data()), 8) +
                       " \"XBSTCK01\", found " + Hex(fixed, 8) + ")");
  }
  chunk->flags = fixed[8];
  chunk->raw_type = fixed[9];
  switch (fixed[9]) {
    case 'P':
      chunk->type = ChunkType::kPayload;
      break;
    case 'E':
      chunk->type = ChunkType::kEof;
      break;
    default:
      if (!(chunk->flags & kXbstreamFlagIgnorable)) {
        return Corrupt(start, "",
                       "unknown chunk type 0x" + Hex(fixed + 9, 1) + " without the ignorable flag");
      }
      chunk->type = ChunkType::kUnknown;
  }
  *path_len = util::LoadLE32(fixed + 10);
  if (*path_len > kXbstreamMaxPathLen) {
    return Corrupt(start, "",
                   "path too long (" + std::to_string(*path_len) + " bytes, limit " +
                       std::to_string(kXbstreamMaxPathLen) + ")");
  }
  return true;
}

Status ChunkReader::ReadPath(uint64_t start, uint32_t path_len, Chunk* chunk) {
  chunk->path.resize(path_len);
  XBAK_ASSIGN_OR_RETURN(size_t got, Read(chunk->path.data(), path_len));
  if (got < path_len) {
    chunk->path.resize(got);
    return Corrupt(start, "",
                   "truncated chunk header (stream ends after " + std::to_string(got) + " of " +
                       std::to_string(path_len) + " path bytes)");
  }
  return Status::Ok();
}

// The length, offset and checksum after the path, then the payload itself,
// which is allocated only once its length is known to be within the limit.
Status ChunkReader::ReadPayload(uint64_t start, Chunk* chunk) {
  uint8_t tail[kXbstreamPayloadHeaderLen];
  XBAK_ASSIGN_OR_RETURN(size_t got, Read(tail, sizeof(tail)));
  if (got < sizeof(tail)) {
    return Corrupt(start, chunk->path,
                   "truncated chunk header (stream ends after " + std::to_string(got) + " of " +
                       std::to_string(sizeof(tail)) + " length/offset/checksum bytes)");
  }
  const uint64_t len = util::LoadLE64(tail);
  chunk->offset = util::LoadLE64(tail + 8);
  const uint32_t stored_crc = util::LoadLE32(tail + 16);
  if (len > kXbstreamMaxPayloadLen) {
    return Corrupt(start, chunk->path,
                   "payload too large (" + std::to_string(len) + " bytes, limit " +
                       std::to_string(kXbstreamMaxPayloadLen) + ")");
  }
  if (chunk->offset > (uint64_t{1} << 62) - len) {
    // Keeps offset + length far from overflow for every consumer.
    return Corrupt(start, chunk->path, "payload offset " + std::to_string(chunk->offset) + " out of range");
  }
  chunk->payload.resize(static_cast<size_t>(len));
  XBAK_ASSIGN_OR_RETURN(got, Read(chunk->payload.data(), chunk->payload.size()));
  if (got < len) {
    return Corrupt(start, chunk->path,
                   "truncated payload (stream ends after " + std::to_string(got) + " of " +
                       std::to_string(len) + " payload bytes)");
  }
  const uint32_t crc = XbstreamCrc32(chunk->payload.data(), chunk->payload.size());
  if (crc != stored_crc) {
    return Corrupt(start, chunk->path,
                   "payload checksum mismatch (stored " + util::Hex32(stored_crc) + ", computed " +
                       util::Hex32(crc) + ")");
  }
  chunk->crc = crc;
  return Status::Ok();
}

}  // namespace xbak::stream
