#include "xbak/util/size.h"

#include <gtest/gtest.h>

namespace xbak::util {
namespace {

TEST(ParseSize, AcceptsPlainAndSuffixedSizes) {
  EXPECT_EQ(ParseSize("65536"), 65536u);
  EXPECT_EQ(ParseSize("512K"), 512u << 10);
  EXPECT_EQ(ParseSize("64m"), 64u << 20);
  EXPECT_EQ(ParseSize("2G"), uint64_t{2} << 30);
  EXPECT_EQ(ParseSize("0"), 0u);
  EXPECT_EQ(ParseSize("1024G"), uint64_t{1} << 40);
}

TEST(ParseSize, RefusesGarbageAndOverflow) {
  for (const char* bad : {"", "M", "-1", "12X", "1MB", " 1M", "1.5G", "1025G", "18446744073709551615K",
                          "99999999999999999999999"}) {
    EXPECT_EQ(ParseSize(bad), std::nullopt) << bad;
  }
}

// A larger bound (innodb_data_file_path's sizes) is checked as safely: a
// product that would wrap around 2^64 is refused, not taken modulo 2^64.
TEST(ParseSize, TakesAnyBoundWithoutOverflow) {
  constexpr uint64_t kAll = UINT64_MAX;
  EXPECT_EQ(ParseSize("2048G", kAll), uint64_t{1} << 41);
  EXPECT_EQ(ParseSize("17179869183G", kAll), uint64_t{17179869183} << 30);  // (2^34 - 1) GiB
  EXPECT_EQ(ParseSize("17179869184G", kAll), std::nullopt);                 // 2^64: wraps to 0
  EXPECT_EQ(ParseSize("18014398509481985K", kAll), std::nullopt);           // wraps to 1024
  EXPECT_EQ(ParseSize("18446744073709551615", kAll), UINT64_MAX);
  EXPECT_EQ(ParseSize("1000", 999), std::nullopt);
  EXPECT_EQ(ParseSize("999", 999), 999u);
  EXPECT_EQ(ParseSize("1K", 1023), std::nullopt);
}

}  // namespace
}  // namespace xbak::util
