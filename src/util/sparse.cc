#include "xbak/util/sparse.h"

#include <algorithm>
#include <cstring>

namespace xbak::util {
namespace {

constexpr size_t kBlock = 4096;

bool AllZero(const uint8_t* p) {
  static constexpr uint8_t kZero[kBlock] = {};
  return std::memcmp(p, kZero, kBlock) == 0;
}

}  // namespace

Status WriteSkippingZeroBlocks(const uint8_t* p, size_t n, uint64_t off, const RunWriter& write) {
  while (n > 0) {
    // Up to the next block boundary of the file, or a last partial block:
    // written as it is. Then runs of non-zero whole blocks, one write each;
    // zero blocks skipped.
    const size_t head = static_cast<size_t>((kBlock - off % kBlock) % kBlock);
    size_t run = head > 0 ? std::min(head, n) : std::min(n, kBlock);
    if (head == 0 && run == kBlock) {
      if (AllZero(p)) {
        p += kBlock, n -= kBlock, off += kBlock;
        continue;
      }
      while (run + kBlock <= n && !AllZero(p + run)) run += kBlock;
    }
    XBAK_RETURN_IF_ERROR(write(p, run, off));
    p += run, n -= run, off += run;
  }
  return Status::Ok();
}

Status SparseWriter::Write(const void* data, size_t n) {
  XBAK_RETURN_IF_ERROR(WriteSkippingZeroBlocks(
      static_cast<const uint8_t*>(data), n, pos_,
      [this](const uint8_t* p, size_t k, uint64_t off) { return f_.PWrite(p, k, off); }));
  pos_ += n;
  return Status::Ok();
}

Status SparseWriter::Finish() {
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f_.Size());
  if (size < pos_) XBAK_RETURN_IF_ERROR(f_.Truncate(pos_));
  return Status::Ok();
}

}  // namespace xbak::util
