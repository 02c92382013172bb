// CRC-32C (Castagnoli), as InnoDB uses it for full_crc32/crc32 page checksums
// and for redo log blocks. Hardware instructions are chosen at run time
// (SSE4.2 on x86-64, the ARMv8 CRC32 extension on AArch64); the portable
// table-driven version is always compiled and tested against the same vectors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xbak::util::crc32c {

// Continues a CRC over more bytes. Extend(0, d, n) is the CRC of d[0..n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
// The hardware path, or the portable one when the CPU lacks the instructions.
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
bool HardwareAvailable();

}  // namespace xbak::util::crc32c
