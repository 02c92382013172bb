// The bucket layout: object keys, backup names, manifests, digests.
#include "xbak/cloud/layout.h"

#include <gtest/gtest.h>

#include "stream/stream_test_util.h"
#include "xbak/storage/md5.h"

namespace xbak::cloud {
namespace {

using xbak::testing::Pattern;

TEST(LayoutTest, KeysAndNames) {
  EXPECT_EQ(DataObjectKey("n", "db/t.ibd", 7), "n/db/t.ibd.00000000000000000007");
  std::string path;
  uint64_t seq = 0;
  EXPECT_TRUE(ParseDataObjectKey("n", "n/db/t.ibd.00000000000000000007", &path, &seq));
  EXPECT_EQ(path, "db/t.ibd");
  EXPECT_EQ(seq, 7u);
  EXPECT_FALSE(ParseDataObjectKey("n", "n/db/t.ibd.00000000000000000007.md5", &path, &seq));
  EXPECT_FALSE(ParseDataObjectKey("n", "n/xbcloud.manifest", &path, &seq));
  EXPECT_FALSE(ParseDataObjectKey("n", "nx/t.00000000000000000007", &path, &seq));
  EXPECT_TRUE(CheckBackupName("a/b-2026.11.23").ok());
  for (const char* bad : {"", "/a", "a/", "a//b", "..", "a/../b", "a b", "a\nb"}) {
    EXPECT_FALSE(CheckBackupName(bad).ok()) << bad;
  }
}

TEST(LayoutTest, ManifestRoundTripAndDamage) {
  std::vector<ManifestEntry> e = {{"db/t.ibd", 1, 10, storage::Md5("b"), 0, {}},
                                  {"db/t.ibd", 0, 20, storage::Md5("a"), 0, {}},
                                  {"x y", 0, 0, storage::Md5(""), 0, {}}};
  std::string text = EncodeManifest(e);
  auto back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].path, "db/t.ibd");
  EXPECT_EQ((*back)[0].seq, 0u);
  EXPECT_EQ((*back)[0].size, 20u);
  EXPECT_EQ((*back)[2].path, "x y");
  EXPECT_FALSE(ParseManifest(text.substr(0, text.size() - 1)).ok());    // cut mid-line
  EXPECT_FALSE(ParseManifest(text.substr(0, text.rfind("end"))).ok());  // no end line
  EXPECT_FALSE(ParseManifest("").ok());
  std::string gap =
      EncodeManifest({{"a", 0, 1, storage::Md5(""), 0, {}}, {"a", 2, 1, storage::Md5(""), 0, {}}});
  EXPECT_FALSE(ParseManifest(gap).ok());
  std::string bad = text;
  bad[1 + bad.find('\n')] = 'z';  // md5 no longer hex
  auto r = ParseManifest(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos);
}

TEST(LayoutTest, DigestObjectGivesTheObjectAndPieceMd5s) {
  std::string body = Pattern((64 << 10) * 3 + 100, 7);
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{4097}, size_t{64 << 10}, body.size()}) {
    std::string_view b(body.data(), size);
    ObjectDigests d = DigestObject(b, 4096);
    EXPECT_EQ(d.md5, storage::Md5(b)) << size;
    ASSERT_EQ(d.pieces.size(), PieceCount(size, 4096)) << size;
    for (size_t k = 0; k < d.pieces.size(); k++) {
      EXPECT_EQ(d.pieces[k], storage::Md5(b.substr(k * 4096, 4096))) << size << " piece " << k;
    }
  }
}

TEST(LayoutTest, ManifestVersion2CarriesPieceMd5s) {
  std::string big = Pattern(10000, 1);
  ObjectDigests d = DigestObject(big, 4096);
  std::vector<ManifestEntry> e = {{"db/t.ibd", 0, big.size(), d.md5, 4096, d.pieces},
                                  {"db/t.ibd", 1, 0, storage::Md5(""), 4096, {}},
                                  {"a b", 0, 3, storage::Md5("abc"), 4096, {storage::Md5("abc")}}};
  std::string text = EncodeManifest(e);
  ASSERT_TRUE(text.starts_with("xbcloud-manifest 2\npieces 4096\n")) << text;
  auto back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].path, "a b");
  EXPECT_EQ((*back)[0].pieces, e[2].pieces);
  EXPECT_EQ((*back)[1].pieces, d.pieces);
  EXPECT_EQ((*back)[1].piece_bytes, 4096u);
  EXPECT_TRUE((*back)[2].pieces.empty());
  EXPECT_EQ((*back)[2].piece_bytes, 4096u);
  EXPECT_EQ(EncodeManifest(*back), text);
  // One object without its pieces: version 1 for all.
  e[0].pieces.pop_back();
  EXPECT_TRUE(EncodeManifest(e).starts_with("xbcloud-manifest 1\n"));

  auto damaged = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return ParseManifest(t);
  };
  std::string hex = storage::Md5Hex(d.pieces[1]);
  auto r = damaged(hex, hex.substr(0, 31) + "g");  // not hex
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("piece md5"), std::string::npos) << r.status().message();
  r = damaged(hex, "");  // a piece missing
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected 3 piece md5s"), std::string::npos) << r.status().message();
  EXPECT_FALSE(damaged(" - ", " x ").ok());                           // an empty object has none
  EXPECT_FALSE(damaged("pieces 4096\n", "").ok());                    // no piece size
  EXPECT_FALSE(damaged("pieces 4096", "pieces 100").ok());            // too small
  EXPECT_FALSE(damaged("pieces 4096", "pieces 1099511627776").ok());  // too large
  EXPECT_FALSE(ParseManifest("xbcloud-manifest 2\n").ok());
  EXPECT_FALSE(ParseManifest("xbcloud-manifest 3\nend 0\n").ok());
}

}  // namespace
}  // namespace xbak::cloud
