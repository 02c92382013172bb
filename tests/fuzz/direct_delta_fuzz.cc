// libFuzzer target: arbitrary bytes as an incremental's delta arriving in a
// stream that `xbak --restore --from-stream` writes into the datadir as it
// comes (restore/direct_delta.h), plain and as a zstd file, fed in two
// pieces; and as the NAME.xbapplied record it leaves (prepare/applied_delta.h).
// Everything must be accepted or rejected cleanly: no crash, no sanitizer
// report, no write outside the scratch directory.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/prepare/applied_delta.h"
#include "xbak/restore/direct_delta.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace {

constexpr uint32_t kPs = 4096;
constexpr uint32_t kFlags = 0x13;  // full_crc32, 4 KiB pages

std::string ScratchDir() {
  static std::string dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "xbak_direct_fuzz_XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) abort();
    return t;
  }();
  return dir;
}

// db/t.ibd of the datadir: space 5, 4 valid pages.
void WriteTable(const std::string& path) {
  static const std::string bytes = [] {
    auto flags = xbak::innodb::DecodeSpaceFlags(kFlags);
    if (!flags.ok()) abort();
    std::string out;
    for (uint32_t no = 0; no < 4; no++) {
      std::vector<uint8_t> p(kPs, 0);
      xbak::util::StoreBE32(p.data() + xbak::innodb::kFilPageOffset, no);
      xbak::util::StoreBE32(p.data() + xbak::innodb::kFilPageSpaceId, 5);
      xbak::util::StoreBE64(p.data() + xbak::innodb::kFilPageLsn, 1500);
      if (no == 0) {
        xbak::util::StoreBE32(p.data() + xbak::innodb::kFspSpaceId, 5);
        xbak::util::StoreBE32(p.data() + xbak::innodb::kFspSize, 4);
        xbak::util::StoreBE32(p.data() + xbak::innodb::kFspSpaceFlags, kFlags);
      }
      xbak::innodb::StampPageChecksum(p.data(), *flags);
      out.append(p.begin(), p.end());
    }
    return out;
  }();
  if (!xbak::util::WriteFileAtomic(path, bytes).ok()) abort();
}

void Feed(const std::string& rel, const uint8_t* data, size_t size) {
  const std::string dir = ScratchDir();
  std::filesystem::remove_all(dir + "/data");
  std::filesystem::remove_all(dir + "/staging");
  std::filesystem::create_directories(dir + "/data/db");
  std::filesystem::create_directories(dir + "/staging/db");
  WriteTable(dir + "/data/db/t.ibd");
  xbak::restore::DirectDeltas d(dir + "/data", 2);
  d.Open(1, kPs, xbak::prepare::LogDdl{});
  std::string out_rel = rel, record;
  auto filter = d.Filter(1, dir + "/staging")(rel, &out_rel, [&](const uint8_t* p, size_t n) {
    record.append(reinterpret_cast<const char*>(p), n);
    return xbak::Status::Ok();
  });
  if (!filter.ok() || !*filter) return;
  const size_t half = size / 2;
  xbak::Status st = (*filter)->Write(data, half);
  if (st.ok()) st = (*filter)->Write(data + half, size - half);
  if (st.ok()) st = (*filter)->Finish();
  // A record it wrote reads back.
  if (st.ok() && !record.empty() && !xbak::prepare::ParseAppliedDelta(record, "record").ok()) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Feed("db/t.ibd.delta", data, size);
  Feed("db/t.ibd.delta.zst", data, size);
  (void)xbak::prepare::ParseAppliedDelta(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
