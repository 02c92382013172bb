// CRC-32 of ISO 3309 / ITU-T V.42 (zlib's crc32, gzip's, Ethernet's), as the
// xbstream format uses it for every chunk and MariaDB's binary log for every
// event.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xbak::util::crc32 {

// Continues a CRC over more bytes, as zlib's crc32_z(crc, d, n) does.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

}  // namespace xbak::util::crc32
