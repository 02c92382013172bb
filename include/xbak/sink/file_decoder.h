// A streaming decoder of one backup file stored transformed (X.zst, X.lz4,
// X.xbenc) back into X: what --decompress, --decrypt and the readers of such
// files share.
#pragma once

#include <cstdint>
#include <functional>

#include "xbak/util/status.h"

namespace xbak::sink {

class FileDecoder {
 public:
  using Output = std::function<Status(const uint8_t* data, size_t n)>;
  virtual ~FileDecoder() = default;
  // Decodes n more input bytes, handing the output to `out` in pieces.
  virtual Status Feed(const uint8_t* data, size_t n, const Output& out) = 0;
  // Call at the end of the input: fails if it stopped where the format says it cannot.
  virtual Status Finish() = 0;
};

}  // namespace xbak::sink
