#include "xbak/util/hex.h"

#include <gtest/gtest.h>

namespace xbak::util {
namespace {

// Lowercase, as page checksum messages have always been written (and as
// t_backup_errors.sh matches them); redo log messages used to say 0xDEADBEEF.
TEST(Hex32, EightLowercaseDigits) {
  EXPECT_EQ(Hex32(0xDEADBEEF), "0xdeadbeef");
  EXPECT_EQ(Hex32(0x50), "0x00000050");
  EXPECT_EQ(Hex32(0), "0x00000000");
  EXPECT_EQ(Hex32(0xFFFFFFFF), "0xffffffff");
}

}  // namespace
TEST(HexBytes, TwoLowercaseDigitsPerByteNoPrefix) {
  const uint8_t id[] = {0x00, 0x0f, 0xa0, 0xff};
  EXPECT_EQ(HexBytes(id, sizeof id), "000fa0ff");
  EXPECT_EQ(HexBytes(id, 0), "");
}

}  // namespace xbak::util

namespace xbak::util {
namespace {

TEST(ParseHexBytes, ExactlyTwoDigitsPerByteEitherCase) {
  uint8_t out[4] = {};
  ASSERT_TRUE(ParseHexBytes("000FA0ff", out, 4));
  EXPECT_EQ(HexBytes(out, 4), "000fa0ff");
  EXPECT_FALSE(ParseHexBytes("000fa0f", out, 4));    // short
  EXPECT_FALSE(ParseHexBytes("000fa0fff", out, 4));  // long
  EXPECT_FALSE(ParseHexBytes("000fa0fg", out, 4));
  EXPECT_TRUE(ParseHexBytes("", out, 0));
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
}

}  // namespace
}  // namespace xbak::util
