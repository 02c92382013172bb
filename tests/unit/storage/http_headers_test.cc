#include "xbak/storage/http_headers.h"

#include <gtest/gtest.h>

namespace xbak::storage {
namespace {

TEST(ContentRangeTest, TheFormsS3Sends) {
  auto r = ParseContentRange(" bytes 0-99/100\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->last, 99u);
  EXPECT_EQ(r->size, 100u);
  r = ParseContentRange("bytes 40000-102399/*");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 40000u);
  EXPECT_FALSE(r->size);
  r = ParseContentRange("bytes 9223372036854775806-9223372036854775806/9223372036854775807");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 9223372036854775806u);
}

TEST(ContentRangeTest, AnythingElseIsAbsent) {
  for (const char* bad :
       {"", "bytes", "bytes ", "bytes 1-0/5", "bytes 0-5/5", "bytes 0-4/5x", "bytes -4/5", "bytes 0-/5",
        "bytes 0-4", "bytes */5", "items 0-4/5", "bytes 0 - 4/5", "bytes +0-4/5",
        "bytes 0-4/9223372036854775808", "bytes 99999999999999999999-1/2"}) {
    EXPECT_FALSE(ParseContentRange(bad)) << bad;
  }
}

TEST(EtagTest, Normalized) {
  EXPECT_EQ(NormalizeEtag(" \"9E107D9D372BB6826BD81D3542A419D6\"\r\n"), "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(NormalizeEtag("W/\"Abc\""), "abc");
  EXPECT_EQ(NormalizeEtag("abc-3"), "abc-3");
  EXPECT_EQ(NormalizeEtag("\""), "\"");
  EXPECT_EQ(NormalizeEtag(""), "");
}

}  // namespace
}  // namespace xbak::storage
