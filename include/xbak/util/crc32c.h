// CRC-32C (Castagnoli), as InnoDB uses it for full_crc32/crc32 page checksums
// and for redo log blocks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xbak::util::crc32c {

// Continues a CRC over more bytes. Extend(0, d, n) is the CRC of d[0..n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

}  // namespace xbak::util::crc32c
