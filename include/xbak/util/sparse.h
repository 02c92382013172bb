// Writes a file front to back, leaving aligned 4 KiB blocks of zeros as holes
// where they are worth one (sparse.cc says which). Why: PAGE_COMPRESSED tablespaces are sparse on the server
// (it punches out what follows each compressed page); a backup or restore that
// wrote every zero would need up to several times their disk space. The
// content is the same either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::util {

// kZeroBlockLen read-only zero bytes, shared: what is written or compared for
// a run of zeros without memory of its own (a stream carries a tablespace's
// preallocated space as zeros; a block is tested for being all zero).
inline constexpr size_t kZeroBlockLen = size_t{1} << 20;
const uint8_t* ZeroBlock();

// Hands `write` the runs of data[0, n), which belong at file offset `offset`,
// leaving out runs of whole, 4 KiB-aligned (in the file) blocks of zeros that
// are 16 KiB long or end on a 16 KiB boundary of the file: those
// stay holes in a file that is written front to back and extended to its full
// size at the end. What SparseWriter and the xbstream extractor both write with.
using RunWriter = std::function<Status(const uint8_t* data, size_t n, uint64_t offset)>;
Status WriteSkippingZeroBlocks(const uint8_t* data, size_t n, uint64_t offset, const RunWriter& write);

class SparseWriter {
 public:
  explicit SparseWriter(File& f) : f_(f) {}
  Status Write(const void* data, size_t n);
  // Leaves the next n bytes a hole (they read as zeros).
  void Skip(uint64_t n) { pos_ += n; }
  // Gives the file its full size (a trailing hole is not written). Call once,
  // after the last Write.
  Status Finish();
  uint64_t size() const { return pos_; }

 private:
  File& f_;
  uint64_t pos_ = 0;
};

}  // namespace xbak::util
