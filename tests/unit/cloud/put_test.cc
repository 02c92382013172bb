// xbcloud put over the posix driver: objects, sidecars, manifest, refusals.
#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

TEST_F(CloudTest, RoundTripRebuildsEveryFile) {
  std::string stream = SampleStream();
  PutStats ps;
  ASSERT_TRUE(Put("b1", stream, &ps).ok());
  EXPECT_EQ(ps.files, 3u);
  EXPECT_GT(ps.objects, 4u);  // the big file was cut into several objects
  EXPECT_TRUE(util::PathExists(Path("b1/xbcloud.manifest")));
  EXPECT_TRUE(util::PathExists(Path("b1/db/big.ibd.00000000000000000000")));
  EXPECT_TRUE(util::PathExists(Path("b1/db/big.ibd.00000000000000000000.md5")));
  auto got = Get(GetOpts("b1"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(Files(*got), Files(stream));
}

TEST_F(CloudTest, SidecarsAreMd5sumFormat) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::string key = "b1/db/small.frm.00000000000000000000";
  auto body = util::ReadSmallFile(Path(key));
  auto sidecar = util::ReadSmallFile(Path(key + ".md5"));
  ASSERT_TRUE(body.ok() && sidecar.ok());
  EXPECT_EQ(*sidecar, storage::Md5Hex(storage::Md5(*body)) + "  small.frm.00000000000000000000\n");
}

TEST_F(CloudTest, PutRefusesAnExistingName) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  Status s = Put("b1", SampleStream());
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(s.message().find("already exists"), std::string::npos);
}

TEST_F(CloudTest, NotXbstreamFailsWithoutMarker) {
  Status s = Put("b1", "this is not an xbstream at all, just some text........");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("byte 0"), std::string::npos) << s.message();
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
}

TEST_F(CloudTest, TruncatedStreamIsNotComplete) {
  std::string stream = SampleStream();
  // Cut before the big file's end chunk: the marker must not be written.
  Status s =
      Put("b1", stream.substr(0, stream.size() - EChunk("db/big.ibd").size() - EChunk("empty").size()));
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("db/big.ibd"), std::string::npos) << s.message();
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
}

TEST_F(CloudTest, ManyFilesAndTinyBudgetStillComplete) {
  // More open files than the memory share holds: readers must flush early
  // instead of deadlocking.
  std::string s;
  for (int round = 0; round < 4; round++) {
    for (int f = 0; f < 40; f++)
      s += PChunk("f" + std::to_string(f), Pattern(8 << 10, f + round), round * (8 << 10));
  }
  for (int f = 0; f < 40; f++) s += EChunk("f" + std::to_string(f));
  auto o = PutOpts("many");
  o.memory_per_stream = 1;  // rounded up to 2 objects
  auto fd = MemFd(s);
  ASSERT_TRUE(CloudPut(loop_, *store_, {fd.get()}, {"s"}, o).ok());
  auto got = Get(GetOpts("many"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Files(*got), Files(s));
}

}  // namespace
}  // namespace xbak::cloud
