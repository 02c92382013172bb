#include "xbak/util/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace xbak::util::crc32c {

// Intel ISA-L's crc32_iscsi, not a loop of our own: it folds with carry-less
// multiplication (PCLMULQDQ on x86-64, PMULL on AArch64, chosen at run time,
// with a table fallback), about 6x the loop of SSE4.2/ARMv8 CRC32C instructions
// (8 bytes each, one after another) this file used to hold (benchmarks/micro: BM_Crc32c). Every
// page read by a backup, written by a prepare and every redo mini-transaction
// passes through here.
//
// crc32_iscsi neither inverts its input nor its result (the iSCSI convention
// of the RFC's appendix leaves that to the caller), and takes an int length.
uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  // ISA-L's API takes a non-const pointer; it only reads the buffer.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t c = ~crc;
  while (n > 0) {
    const int len = n > size_t{INT_MAX} ? INT_MAX : static_cast<int>(n);
    c = crc32_iscsi(p, len, c);
    p += len;
    n -= static_cast<size_t>(len);
  }
  return ~c;
}

}  // namespace xbak::util::crc32c
