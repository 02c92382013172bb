#include "xbak/util/size.h"

#include <gtest/gtest.h>

namespace xbak {
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

}  // namespace
}  // namespace xbak
