// xbcloud verify over the posix driver: a sound backup has no problem, and
// each kind of damage is one line naming the object.
#include "xbak/cloud/verify.h"

#include <algorithm>
#include <filesystem>

#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

class CloudVerifyTest : public CloudTest {
 protected:
  CloudVerifyResult Verify(const std::string& name) {
    CloudVerifyOptions o;
    o.name = name;
    auto r = CloudVerify(loop_, *store_, o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : CloudVerifyResult{};
  }
  // Whether a problem names `key` and says `what`.
  static bool Has(const CloudVerifyResult& r, const std::string& key, const std::string& what) {
    return std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& p) {
      return p.starts_with(key + ":") && p.find(what) != std::string::npos;
    });
  }
  static std::string Dump(const CloudVerifyResult& r) {
    std::string s;
    for (const auto& p : r.problems) s += p + "\n";
    return s;
  }
  void FlipByte(const std::string& key, size_t at) {
    auto body = util::ReadSmallFile(Path(key));
    ASSERT_TRUE(body.ok());
    std::string b = *body;
    b[at] = static_cast<char>(b[at] ^ 0x20);
    ASSERT_TRUE(util::WriteFileAtomic(Path(key), b).ok());
  }

  const std::string big1 = "b1/db/big.ibd.00000000000000000001";
};

TEST_F(CloudVerifyTest, ASoundBackupHasNoProblem) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  auto r = Verify("b1");
  EXPECT_TRUE(r.sound()) << Dump(r);
  EXPECT_GT(r.objects, 4u);
  EXPECT_EQ(r.Summary().rfind("verify: " + std::to_string(r.objects) + " objects, ", 0), 0u) << r.Summary();
}

TEST_F(CloudVerifyTest, AFlippedByteFailsTheSidecarTheManifestAndTheChunkCrc) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  FlipByte(big1, 40000);
  auto r = Verify("b1");
  EXPECT_TRUE(Has(r, big1, "does not match its .md5 sidecar")) << Dump(r);
  EXPECT_TRUE(Has(r, big1, "does not match the manifest")) << Dump(r);
  EXPECT_TRUE(Has(r, big1, "not a valid xbstream piece of db/big.ibd at byte ")) << Dump(r);
  for (const auto& p : r.problems) EXPECT_TRUE(p.starts_with(big1)) << "only that object: " << p;
}

TEST_F(CloudVerifyTest, APieceMd5TheObjectDoesNotHaveIsNamed) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  // The manifest's MD5 of piece 2 of that object replaced: get would refuse
  // those bytes although the object's own MD5 is right.
  auto body = util::ReadSmallFile(Path(big1));
  auto manifest = util::ReadSmallFile(Path("b1/xbcloud.manifest"));
  ASSERT_TRUE(body.ok() && manifest.ok());
  std::string piece2 = storage::Md5Hex(storage::Md5(body->substr(2 * (16 << 10), 16 << 10)));
  std::string m = *manifest;
  size_t at = m.find(piece2);
  ASSERT_NE(at, std::string::npos);
  m.replace(at, 32, std::string(32, '0'));
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/xbcloud.manifest"), m).ok());
  auto r = Verify("b1");
  EXPECT_TRUE(Has(r, big1, "(piece 2) does not match the manifest's piece MD5s")) << Dump(r);
}

TEST_F(CloudVerifyTest, MissingObjectsSidecarsAndManifestAreNamed) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::filesystem::remove(Path(big1));
  std::filesystem::remove(Path("b1/db/small.frm.00000000000000000000.md5"));
  auto r = Verify("b1");
  EXPECT_TRUE(Has(r, big1, "missing (listed in the manifest)")) << Dump(r);
  EXPECT_TRUE(Has(r, big1 + ".md5", "a sidecar without its object")) << Dump(r);
  EXPECT_TRUE(Has(r, "b1/db/small.frm.00000000000000000000", "no .md5 sidecar")) << Dump(r);

  std::filesystem::remove(Path("b1/xbcloud.manifest"));
  auto r2 = Verify("b1");
  EXPECT_TRUE(Has(r2, "b1/xbcloud.manifest", "missing: the backup is incomplete")) << Dump(r2);
  EXPECT_TRUE(Has(r2, big1, "missing (the objects of db/big.ibd skip it)")) << Dump(r2);
}

TEST_F(CloudVerifyTest, ObjectsTheManifestDoesNotListAreNamed) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/stray"), "x").ok());
  std::string extra = "b1/db/small.frm.00000000000000000001";
  ASSERT_TRUE(util::WriteFileAtomic(Path(extra), "whatever").ok());
  auto r = Verify("b1");
  EXPECT_TRUE(Has(r, "b1/stray", "not an object of an xbcloud backup")) << Dump(r);
  EXPECT_TRUE(Has(r, extra, "not listed in the manifest")) << Dump(r);
}

TEST_F(CloudVerifyTest, AnUnknownBackupIsAnError) {
  CloudVerifyOptions o;
  o.name = "nothing";
  auto r = CloudVerify(loop_, *store_, o);
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("backup nothing not found"), std::string::npos) << r.status().message();
}

TEST(CheckObjectChunks, WholeChunksOfItsFileOnly) {
  std::string body = xbak::testing::PChunk("db/t.ibd", xbak::testing::Pattern(5000, 3), 0);
  EXPECT_EQ(CheckObjectChunks(body, "db/t.ibd"), "");
  EXPECT_NE(
      CheckObjectChunks(body, "db/other.ibd").find("not a valid xbstream piece of db/other.ibd at byte 0"),
      std::string::npos)
      << CheckObjectChunks(body, "db/other.ibd");
  std::string cut = CheckObjectChunks(body.substr(0, body.size() - 10), "db/t.ibd");
  EXPECT_NE(cut.find("not a valid xbstream piece of db/t.ibd"), std::string::npos) << cut;
  std::string flipped = body;
  flipped[flipped.size() - 100] ^= 1;  // in the payload: its CRC-32 no longer matches
  EXPECT_NE(CheckObjectChunks(flipped, "db/t.ibd"), "");
  EXPECT_EQ(CheckObjectChunks("", "db/t.ibd"), "empty object (every object holds at least one chunk)");
}

}  // namespace
}  // namespace xbak::cloud
