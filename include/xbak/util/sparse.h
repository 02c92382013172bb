// Writes a file front to back, leaving each whole, aligned 4 KiB block of
// zeros as a hole. Why: PAGE_COMPRESSED tablespaces are sparse on the server
// (it punches out what follows each compressed page); a backup or restore that
// wrote every zero would need up to several times their disk space. The
// content is the same either way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak {

class SparseWriter {
 public:
  explicit SparseWriter(File& f) : f_(f) {}
  Status Write(const void* data, size_t n);
  // Gives the file its full size (a trailing hole is not written). Call once,
  // after the last Write.
  Status Finish();
  uint64_t size() const { return pos_; }

 private:
  static constexpr size_t kBlock = 4096;
  File& f_;
  uint64_t pos_ = 0;
};

}  // namespace xbak
