#include "xbak/util/crc32c.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace xbak::util {
namespace {

// Which path ExtendHardware takes on this CPU. XBAK_EXPECT_CRC32C_HW=1 (set by
// scripts/cross-aarch64.sh: qemu's default AArch64 CPU has the CRC32 extension) makes a missing
// hardware path a failure, so that a build where the instructions are not selected is caught.
TEST(Crc32c, ReportsThePathItTests) {
#if defined(__x86_64__)
  const char* arch = "x86-64 SSE4.2";
#elif defined(__aarch64__)
  const char* arch = "AArch64 CRC32";
#else
  const char* arch = "no hardware path on this architecture";
#endif
  std::cout << "crc32c path: " << (crc32c::HardwareAvailable() ? "hardware (" : "portable (no ") << arch
            << ")\n";
  const char* expect = std::getenv("XBAK_EXPECT_CRC32C_HW");
  if (expect != nullptr && std::string(expect) == "1") {
    EXPECT_TRUE(crc32c::HardwareAvailable());
  }
}

// Vectors from RFC 3720 (iSCSI), appendix B.4, and the classic "123456789" check value.
TEST(Crc32c, KnownVectors) {
  for (auto fn : {&crc32c::ExtendPortable, &crc32c::ExtendHardware}) {
    std::string check = "123456789";
    EXPECT_EQ(fn(0, check.data(), check.size()), 0xE3069283u);
    std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
    for (int i = 0; i < 32; i++) {
      inc[i] = static_cast<uint8_t>(i);
      dec[i] = static_cast<uint8_t>(31 - i);
    }
    EXPECT_EQ(fn(0, zeros.data(), 32), 0x8A9136AAu);
    EXPECT_EQ(fn(0, ones.data(), 32), 0x62A8AB43u);
    EXPECT_EQ(fn(0, inc.data(), 32), 0x46DD794Eu);
    EXPECT_EQ(fn(0, dec.data(), 32), 0x113FDB5Cu);
  }
}

TEST(Crc32c, ExtendIsIncrementalAndPathsAgree) {
  std::vector<uint8_t> buf(70001);
  uint32_t x = 12345;
  for (auto& b : buf) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{70000}}) {
    for (size_t off : {size_t{0}, size_t{3}}) {  // unaligned starts too
      const uint8_t* p = buf.data() + off;
      size_t n = buf.size() - off;
      uint32_t whole = crc32c::ExtendPortable(0, p, n);
      EXPECT_EQ(crc32c::ExtendHardware(0, p, n), whole);
      size_t s = std::min(split, n);
      EXPECT_EQ(crc32c::Extend(crc32c::Extend(0, p, s), p + s, n - s), whole);
    }
  }
}

}  // namespace
}  // namespace xbak::util
