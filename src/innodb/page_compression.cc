#include "xbak/innodb/page_compression.h"

#include <lz4.h>
#include <zlib.h>

// The codecs of MariaDB's provider plugins, when this build found their
// libraries (see CMakeLists.txt); without one, its pages are refused by name.
#ifdef XBAK_HAVE_LZMA
#include <lzma.h>
#endif
#ifdef XBAK_HAVE_BZIP2
#include <bzlib.h>
#endif
#ifdef XBAK_HAVE_LZO
#include <lzo/lzo1x.h>
#endif
#ifdef XBAK_HAVE_SNAPPY
#include <snappy-c.h>
#endif

#include <cstring>
#include <vector>

#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

constexpr size_t kFcrc32Payload = 26;  // full_crc32: payload offset
constexpr size_t kOldPayload = 40;     // 34354: payload offset (after the 2-byte length at 38)

// lz4, lzo and snappy need their exact input length, which the 256-rounded
// written size does not give: one more byte before the checksum holds it.
bool NeedsLengthByte(uint32_t algo) {
  return algo == kCompressionLz4 || algo == kCompressionLzo || algo == kCompressionSnappy;
}

Status Unsupported(uint32_t algo) {
  return Error(ErrorCode::kUnsupported,
               CompressionName(algo) + " page compression is not supported by xbak yet");
}

// Decompresses n bytes into `out` (room for `want`) with the call MariaDB's
// fil_page_decompress uses; the length produced.
Result<size_t> Decode(uint32_t algo, const uint8_t* in, size_t n, uint8_t* out, size_t want) {
  bool ok = false;
  size_t got = 0;
  switch (algo) {
    case kCompressionZlib: {
      uLongf len = static_cast<uLongf>(want);
      ok = uncompress(out, &len, in, static_cast<uLong>(n)) == Z_OK;
      got = len;
      break;
    }
    case kCompressionLz4: {
      int r = LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                                  static_cast<int>(n), static_cast<int>(want));
      ok = r >= 0;
      got = ok ? static_cast<size_t>(r) : 0;
      break;
    }
#ifdef XBAK_HAVE_LZMA
    case kCompressionLzma: {
      uint64_t memlimit = UINT64_MAX;
      size_t in_pos = 0;
      ok = lzma_stream_buffer_decode(&memlimit, 0, nullptr, in, &in_pos, n, out, &got, want) == LZMA_OK;
      break;
    }
#endif
#ifdef XBAK_HAVE_BZIP2
    case kCompressionBzip2: {
      unsigned len = static_cast<unsigned>(want);
      ok = BZ2_bzBuffToBuffDecompress(reinterpret_cast<char*>(out), &len,
                                      const_cast<char*>(reinterpret_cast<const char*>(in)),
                                      static_cast<unsigned>(n), 1, 0) == BZ_OK;
      got = len;
      break;
    }
#endif
#ifdef XBAK_HAVE_LZO
    case kCompressionLzo: {
      lzo_uint len = want;
      ok = lzo1x_decompress_safe(in, n, out, &len, nullptr) == LZO_E_OK;
      got = len;
      break;
    }
#endif
#ifdef XBAK_HAVE_SNAPPY
    case kCompressionSnappy:
      got = want;
      ok = snappy_uncompress(reinterpret_cast<const char*>(in), n, reinterpret_cast<char*>(out), &got) ==
           SNAPPY_OK;
      break;
#endif
    default:
      return Unsupported(algo);
  }
  if (!ok) return Error(ErrorCode::kCorrupt, CompressionName(algo) + " payload does not decompress");
  return got;
}

// Compresses a whole frame of `size` bytes with `algo` into `out` (room for
// 2 * size bytes) with the calls and parameters MariaDB's fil_page_compress
// uses; the compressed length, or 0 when the codec fails.
Result<size_t> Encode(uint32_t algo, const uint8_t* frame, size_t size, int level, uint8_t* out) {
  const size_t room = 2 * size;
  switch (algo) {
    case kCompressionZlib: {
      uLongf len = static_cast<uLongf>(room);
      return compress2(out, &len, frame, static_cast<uLong>(size), level) == Z_OK ? size_t{len} : 0;
    }
    case kCompressionLz4: {
      int r = LZ4_compress_default(reinterpret_cast<const char*>(frame), reinterpret_cast<char*>(out),
                                   static_cast<int>(size), static_cast<int>(room));
      return r > 0 ? static_cast<size_t>(r) : 0;
    }
#ifdef XBAK_HAVE_LZMA
    case kCompressionLzma: {
      size_t pos = 0;
      return lzma_easy_buffer_encode(static_cast<uint32_t>(level), LZMA_CHECK_NONE, nullptr, frame, size, out,
                                     &pos, room) == LZMA_OK
                 ? pos
                 : 0;
    }
#endif
#ifdef XBAK_HAVE_BZIP2
    case kCompressionBzip2: {
      unsigned len = static_cast<unsigned>(room);
      return BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out), &len,
                                      const_cast<char*>(reinterpret_cast<const char*>(frame)),
                                      static_cast<unsigned>(size), 1, 0, 0) == BZ_OK
                 ? size_t{len}
                 : 0;
    }
#endif
#ifdef XBAK_HAVE_LZO
    case kCompressionLzo: {
      // lzo_init checks the library against its headers, once.
      static const bool ok = lzo_init() == LZO_E_OK;
      if (!ok) return Error(ErrorCode::kInternal, "the lzo library does not match its headers");
      std::vector<uint8_t> work(LZO1X_1_15_MEM_COMPRESS);
      lzo_uint len = room;
      return lzo1x_1_15_compress(frame, size, out, &len, work.data()) == LZO_E_OK ? size_t{len} : 0;
    }
#endif
#ifdef XBAK_HAVE_SNAPPY
    case kCompressionSnappy: {
      size_t len = snappy_max_compressed_length(size);
      if (len > room) return size_t{0};
      return snappy_compress(reinterpret_cast<const char*>(frame), size, reinterpret_cast<char*>(out),
                             &len) == SNAPPY_OK
                 ? len
                 : 0;
    }
#endif
    default:
      return Unsupported(algo);
  }
}

}  // namespace

std::string CompressionName(uint32_t algo) {
  switch (algo) {
    case kCompressionNone:
      return "none";
    case kCompressionZlib:
      return "zlib";
    case kCompressionLz4:
      return "lz4";
    case kCompressionLzo:
      return "lzo";
    case kCompressionLzma:
      return "lzma";
    case kCompressionBzip2:
      return "bzip2";
    case kCompressionSnappy:
      return "snappy";
    default:
      return "algorithm " + std::to_string(algo);
  }
}

bool CompressionSupported(uint32_t algo) {
  switch (algo) {
    case kCompressionZlib:
    case kCompressionLz4:
      return true;
#ifdef XBAK_HAVE_LZMA
    case kCompressionLzma:
      return true;
#endif
#ifdef XBAK_HAVE_BZIP2
    case kCompressionBzip2:
      return true;
#endif
#ifdef XBAK_HAVE_LZO
    case kCompressionLzo:
      return true;
#endif
#ifdef XBAK_HAVE_SNAPPY
    case kCompressionSnappy:
      return true;
#endif
    default:
      return false;
  }
}

uint32_t StoredCompression(const uint8_t* page, const SpaceFlags& flags) {
  const uint16_t type = PageType(page);
  if (flags.full_crc32) return (type & kPageTypeFcrc32CompressedMarker) ? flags.compression_algo : 0;
  if (type == kPageTypePageCompressed) return static_cast<uint32_t>(util::LoadBE64(page + kFilPageCompAlgo));
  return 0;
}

Result<bool> DecompressPage(const uint8_t* page, const SpaceFlags& flags, uint8_t* out) {
  const size_t size = flags.logical_size;
  const uint16_t type = PageType(page);
  if (flags.full_crc32) {
    if (!(type & kPageTypeFcrc32CompressedMarker)) return false;
    size_t written = size_t{static_cast<uint16_t>(type & ~kPageTypeFcrc32CompressedMarker)} << 8;
    if (written < kFcrc32Payload + 4 || written >= size) {
      return Error(ErrorCode::kCorrupt, "page_compressed page with written size " + std::to_string(written));
    }
    size_t end = written - 4;  // the payload ends before the checksum
    if (NeedsLengthByte(flags.compression_algo)) {
      // The byte at W-5 is (payload end + 5) mod 256, 0 when that is W.
      const uint8_t b = page[written - 5];
      const size_t stop = b != 0 ? written - 256 + b : written;
      // Checked before subtracting: a damaged byte must not wrap the length.
      if (stop <= kFcrc32Payload + 5)
        return Error(ErrorCode::kCorrupt, "page_compressed page with a bad length byte");
      end = stop - 5;
    }
    // Everything from the payload end to W-4 is zero padding; zlib and lzma
    // find their own end.
    XBAK_ASSIGN_OR_RETURN(
        size_t got, Decode(flags.compression_algo, page + kFcrc32Payload, end - kFcrc32Payload, out, size));
    if (got != size)
      return Error(ErrorCode::kCorrupt,
                   "page_compressed page decompresses to " + std::to_string(got) + " bytes");
    return true;
  }
  if (type != kPageTypePageCompressed) {
    if (type == kPageTypePageCompressedEncrypted) {
      return Error(ErrorCode::kUnsupported, "encrypted page_compressed pages are not supported by xbak yet");
    }
    return false;
  }
  const uint32_t algo = static_cast<uint32_t>(util::LoadBE64(page + kFilPageCompAlgo));
  const size_t len = util::LoadBE16(page + kFilPageCompSize);
  if (len == 0 || len > size - kOldPayload) {
    return Error(ErrorCode::kCorrupt, "page_compressed page with payload length " + std::to_string(len));
  }
  XBAK_ASSIGN_OR_RETURN(size_t got, Decode(algo, page + kOldPayload, len, out, size));
  if (got != size)
    return Error(ErrorCode::kCorrupt,
                 "page_compressed page decompresses to " + std::to_string(got) + " bytes");
  return true;
}

Result<size_t> CompressPageFullCrc32(const uint8_t* frame, const SpaceFlags& flags, uint32_t space_id,
                                     int level, uint8_t* out) {
  const size_t size = flags.logical_size;
  const uint32_t algo = flags.compression_algo;
  if (!flags.full_crc32 || algo == kCompressionNone) return size_t{0};
  const uint16_t type = PageType(frame);
  const uint32_t page_no = PageNo(frame);
  if (type == kPageTypeAllocated || type == kPageTypeFspHdr || type == kPageTypeXdes ||
      type == kPageTypePageCompressed || page_no == 0 || (space_id == 0 && page_no == 5)) {
    return size_t{0};
  }
  std::memset(out, 0, size);
  std::memcpy(out, frame, kFcrc32Payload);
  const size_t cap = size - kFcrc32Payload;
  std::vector<uint8_t> tmp(2 * size);
  XBAK_ASSIGN_OR_RETURN(size_t clen, Encode(algo, frame, size, level, tmp.data()));
  if (clen == 0 || clen > cap) return size_t{0};  // does not fit: written plain
  std::memcpy(out + kFcrc32Payload, tmp.data(), clen);
  const size_t actual = kFcrc32Payload + clen;
  const size_t lsb = NeedsLengthByte(algo) ? 1 : 0;
  const size_t written = (actual + lsb + 4 + 255) & ~size_t{255};
  if (written >= size) return size_t{0};
  std::memset(out + actual, 0, size - actual);
  if (lsb) out[written - 5] = static_cast<uint8_t>((actual + 5) & 0xFF);
  out[24] = 0x80;
  out[25] = static_cast<uint8_t>(written >> 8);
  util::StoreBE32(out + written - 4, util::crc32c::Value(out, written - 4));
  return written;
}

}  // namespace xbak::innodb
