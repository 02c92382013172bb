// libFuzzer target: arbitrary bytes as a binary log file (the archiver reads
// files a server, a disk or a network gave it). The scanner must fail or
// succeed cleanly, and the same bytes fed whole or cut in two must give the
// same verdict and the same summary.
#include <stdlib.h>

#include <cstdint>
#include <string_view>

#include "xbak/binlog/scanner.h"

namespace {

xbak::Result<xbak::binlog::FileSummary> Scan(std::string_view in, size_t cut) {
  xbak::binlog::Scanner s("fuzz");
  XBAK_RETURN_IF_ERROR(s.Feed(in.substr(0, cut)));
  XBAK_RETURN_IF_ERROR(s.Feed(in.substr(cut)));
  XBAK_RETURN_IF_ERROR(s.Finish(false));
  return s.summary();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto whole = Scan(in, size);
  auto cut = Scan(in, size == 0 ? 0 : (data[0] * 131u + size / 3) % size);
  if (whole.ok() != cut.ok()) abort();
  if (!whole.ok()) {
    if (whole.status().message() != cut.status().message()) abort();
    return 0;
  }
  if (whole->events != cut->events || whole->complete_bytes != cut->complete_bytes ||
      whole->transaction_end != cut->transaction_end || whole->last_gtid != cut->last_gtid)
    abort();
  if (whole->transaction_end > whole->complete_bytes || whole->complete_bytes > size) abort();
  (void)xbak::binlog::ParseGtidPosition(in.substr(0, 256));
  return 0;
}
