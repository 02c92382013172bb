#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xbak/util/crc32.h"
#include "xbak/util/crc32c.h"

namespace xbak::util {
namespace {

// Bit by bit, straight from the definition (reflected polynomial, inverted
// before and after): slow, and shares nothing with the library under test.
uint32_t Reference(uint32_t poly, uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
  }
  return ~crc;
}
constexpr uint32_t kCastagnoli = 0x82F63B78u;
constexpr uint32_t kIso3309 = 0xEDB88320u;

std::vector<uint8_t> Noise(size_t n) {
  std::vector<uint8_t> buf(n);
  uint32_t x = 12345;
  for (auto& b : buf) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return buf;
}

// Vectors from RFC 3720 (iSCSI), appendix B.4, and the classic "123456789" check value.
TEST(Crc32c, KnownVectors) {
  std::string check = "123456789";
  EXPECT_EQ(crc32c::Value(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; i++) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c::Value(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Value(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c::Value(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c::Value(dec.data(), 32), 0x113FDB5Cu);
}

// Every length up to a few folding blocks, unaligned starts, a page, and a
// CRC continued across any split, against the bitwise definition of `poly`.
void ExpectAgreesWithTheDefinition(uint32_t (*extend)(uint32_t, const void*, size_t), uint32_t poly) {
  const std::vector<uint8_t> buf = Noise(70001);
  for (size_t off : {size_t{0}, size_t{1}, size_t{3}}) {
    for (size_t n = 0; n < 600; n++) {
      ASSERT_EQ(extend(0, buf.data() + off, n), Reference(poly, 0, buf.data() + off, n)) << n;
    }
  }
  const uint8_t* p = buf.data() + 3;
  const size_t n = buf.size() - 3;
  const uint32_t whole = Reference(poly, 0, p, n);
  EXPECT_EQ(extend(0, p, 16384), Reference(poly, 0, p, 16384));
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, n}) {
    EXPECT_EQ(extend(extend(0, p, split), p + split, n - split), whole) << split;
  }
}

TEST(Crc32c, AgreesWithTheDefinitionAtEveryLengthAndSplit) {
  ExpectAgreesWithTheDefinition(&crc32c::Extend, kCastagnoli);
}

// "hello" is the value the xbstream tests have always used; "123456789" is the check value.
TEST(Crc32, KnownVectors) {
  EXPECT_EQ(crc32::Value("hello", 5), 0x3610a686u);
  EXPECT_EQ(crc32::Value("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(crc32::Value("", 0), 0u);
}

TEST(Crc32, AgreesWithTheDefinitionAtEveryLengthAndSplit) {
  ExpectAgreesWithTheDefinition(&crc32::Extend, kIso3309);
}

}  // namespace
}  // namespace xbak::util
