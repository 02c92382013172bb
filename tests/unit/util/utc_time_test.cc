#include "xbak/util/utc_time.h"

#include <gtest/gtest.h>

namespace xbak::util {
namespace {

TEST(FormatUtc, AnyStrftimeFormatInUtc) {
  EXPECT_EQ(FormatUtc(1795729854, "%Y-%m-%dT%H:%M:%SZ"), "2026-11-26T21:50:54Z");
  EXPECT_EQ(FormatUtc(0, "%Y%m%d"), "19700101");
  EXPECT_EQ(FormatUtc(1369353600, "%Y%m%dT%H%M%SZ"), "20130524T000000Z");
}

}  // namespace
}  // namespace xbak::util
