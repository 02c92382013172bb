#include "xbak/util/sparse.h"

#include <algorithm>
#include <cstring>

namespace xbak {
namespace {

bool AllZero(const uint8_t* p, size_t n) {
  static constexpr uint8_t kZero[4096] = {};
  return n <= sizeof kZero && std::memcmp(p, kZero, n) == 0;
}

}  // namespace

Status SparseWriter::Write(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    // The run up to the next block boundary of the file, then whole blocks:
    // runs of non-zero blocks are written with one pwrite, zero blocks skipped.
    const size_t head = static_cast<size_t>((kBlock - pos_ % kBlock) % kBlock);
    if (head > 0) {
      const size_t k = std::min(head, n);
      XBAK_RETURN_IF_ERROR(f_.PWrite(p, k, pos_));
      p += k, n -= k, pos_ += k;
      continue;
    }
    if (n < kBlock) {
      XBAK_RETURN_IF_ERROR(f_.PWrite(p, n, pos_));
      pos_ += n;
      return Status::Ok();
    }
    if (AllZero(p, kBlock)) {
      p += kBlock, n -= kBlock, pos_ += kBlock;
      continue;
    }
    size_t run = kBlock;
    while (run + kBlock <= n && !AllZero(p + run, kBlock)) run += kBlock;
    XBAK_RETURN_IF_ERROR(f_.PWrite(p, run, pos_));
    p += run, n -= run, pos_ += run;
  }
  return Status::Ok();
}

Status SparseWriter::Finish() {
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f_.Size());
  if (size < pos_) XBAK_RETURN_IF_ERROR(f_.Truncate(pos_));
  return Status::Ok();
}

}  // namespace xbak
