#include "xbak/backup/layout.h"

#include <gtest/gtest.h>

namespace xbak {
namespace {

TEST(ParseDataFiles, SizesAreReadAsTheServerReadsThem) {
  auto f = ParseDataFiles("ibdata1:3M;ibdata2:1G;/abs/ibdata3:2048K;ibdata4:10485760:autoextend");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->size(), 4u);
  EXPECT_EQ((*f)[0].name, "ibdata1");
  EXPECT_EQ((*f)[0].size, 3u << 20);
  EXPECT_EQ((*f)[1].size, uint64_t{1} << 30);
  EXPECT_EQ((*f)[2].name, "/abs/ibdata3");
  EXPECT_EQ((*f)[2].size, 2u << 20);
  EXPECT_EQ((*f)[3].size, 10u << 20);  // bytes without a suffix
  EXPECT_EQ(FirstPages(*f, 16384), (std::vector<uint32_t>{0, 192, 192 + 65536, 192 + 65536 + 128}));
  auto names = ParseDataFilePath("ibdata1:12M:autoextend");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"ibdata1"});
}

TEST(ParseDataFiles, BadSpecsAreRefusedWithTheSpec) {
  auto none = ParseDataFiles("ibdata1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no file size"), std::string::npos);
  auto bad = ParseDataFiles("ibdata1:abc");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'abc' is not a size"), std::string::npos);
  EXPECT_EQ(ParseDataFiles("ibdata1:12M:raw").status().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(ParseDataFiles("").ok());
}

}  // namespace
}  // namespace xbak
