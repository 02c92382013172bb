// What the page tests share: space flags by their raw value and synthetic
// index pages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb::page_test {

inline constexpr uint32_t kFull16k = 0x15;  // full_crc32, 16k: what 10.5+ creates
inline constexpr uint32_t kOld16k = 0x21;   // crc32-era DYNAMIC 16k

inline SpaceFlags Flags(uint32_t raw) {
  auto f = DecodeSpaceFlags(raw);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? f.value() : SpaceFlags{};
}

// A plausible index page: header fields, some payload, LSN; no checksum yet.
inline std::vector<uint8_t> MakePage(uint32_t size, uint32_t page_no, uint64_t lsn = 0x0000000512345678ull,
                                     uint32_t space_id = 7) {
  std::vector<uint8_t> p(size, 0);
  util::StoreBE32(p.data() + kFilPageOffset, page_no);
  util::StoreBE32(p.data() + kFilPagePrev, kFilNull);
  util::StoreBE32(p.data() + kFilPageNext, kFilNull);
  util::StoreBE64(p.data() + kFilPageLsn, lsn);
  util::StoreBE16(p.data() + kFilPageType, kPageTypeIndex);
  util::StoreBE32(p.data() + kFilPageSpaceId, space_id);
  for (uint32_t i = kFilPageData; i < size - 200; i += 7) p[i] = static_cast<uint8_t>(i * 31 + page_no);
  return p;
}

inline std::vector<uint8_t> Stamped(uint32_t raw_flags, uint32_t page_no) {
  SpaceFlags f = Flags(raw_flags);
  auto p = MakePage(f.physical_size, page_no);
  StampPageChecksum(p.data(), f);
  return p;
}

}  // namespace xbak::innodb::page_test
