// xbcloud delete over the posix driver.
#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

TEST_F(CloudTest, DeleteRemovesOnlyThatBackup) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  ASSERT_TRUE(Put("b10", SampleStream()).ok());  // shares the prefix "b1" but not "b1/"
  uint64_t n = 0;
  ASSERT_TRUE(CloudDelete(loop_, *store_, "b1", &n).ok());
  EXPECT_GT(n, 5u);
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
  EXPECT_FALSE(util::PathExists(Path("b1/db/big.ibd.00000000000000000000")));
  EXPECT_TRUE(Get(GetOpts("b10")).ok());
  EXPECT_EQ(CloudDelete(loop_, *store_, "b1").code(), ErrorCode::kNotFound);
}

TEST_F(CloudTest, DeleteRefusesANestedBackup) {
  ASSERT_TRUE(Put("b1/sub", SampleStream()).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/other.00000000000000000000"), "x").ok());
  Status s = CloudDelete(loop_, *store_, "b1");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Get(GetOpts("b1/sub")).ok());
}

// A deletion starts by replacing the manifest with a tombstone: get refuses
// the backup from then on, and a second delete finishes a cut one.
TEST_F(CloudTest, DeleteCutShortIsRefusedByGetAndFinished) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/xbcloud.manifest"), TombstoneText(1)).ok());
  auto got = Get(GetOpts("b1"));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("being deleted"), std::string::npos) << got.status().message();
  uint64_t n = 0;
  ASSERT_TRUE(CloudDelete(loop_, *store_, "b1", &n).ok());
  EXPECT_GT(n, 5u);
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.started")));
  EXPECT_EQ(CloudDelete(loop_, *store_, "b1").code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace xbak::cloud
