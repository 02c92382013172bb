#include "xbak/util/crc32.h"

#include <isa-l/crc.h>

namespace xbak::util::crc32 {

// Intel ISA-L's crc32_gzip_refl, which folds with carry-less multiplication
// (PCLMULQDQ on x86-64, PMULL on AArch64, chosen at run time): about 10x
// Debian's zlib 1.2.13 crc32_z (benchmarks/micro: BM_Crc32 against
// BM_ZlibCrc32). Every byte of a stream written or read passes through here,
// on the path that competes with the download for the CPU in a restore.
// It takes and returns the CRC as zlib does (inversions inside) and a 64-bit
// length.
uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace xbak::util::crc32
