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

// Version 3 carries the put's summary before the pieces line; its head alone
// (what list reads) gives the summary, and says when it was cut short.
TEST(LayoutTest, ManifestVersion3CarriesTheSummary) {
  std::vector<ManifestEntry> e = {
      {"xtrabackup_checkpoints", 0, 3, storage::Md5("abc"), 4096, {storage::Md5("abc")}}};
  ManifestSummary sum;
  sum.started = 1795729854;
  sum.finished = 1795729900;
  sum.file_bytes = 123456789;
  sum.stored_bytes = 23456789;
  sum.objects = 17;
  sum.encoding = "zstd+encrypted";
  sum.lock_mode = "GOVERNANCE";
  sum.lock_until = 1796000000;
  sum.files = {{"xtrabackup_checkpoints", "backup_type = full-backuped\nfrom_lsn = 0\n"},
               {"xtrabackup_info", std::string("binary\0\xff\n bytes", 16)}};
  std::string text = EncodeManifest(e, &sum);
  ASSERT_TRUE(text.starts_with("xbcloud-manifest 3\nstarted 1795729854\nfinished 1795729900\n")) << text;
  ManifestSummary back;
  auto entries = ParseManifest(text, &back);
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].pieces, e[0].pieces);
  EXPECT_EQ(back.started, sum.started);
  EXPECT_EQ(back.finished, sum.finished);
  EXPECT_EQ(back.file_bytes, sum.file_bytes);
  EXPECT_EQ(back.stored_bytes, sum.stored_bytes);
  EXPECT_EQ(back.objects, sum.objects);
  EXPECT_EQ(back.encoding, sum.encoding);
  EXPECT_EQ(back.lock_mode, "GOVERNANCE");
  EXPECT_EQ(back.lock_until, 1796000000);
  EXPECT_EQ(back.files, sum.files);
  ASSERT_NE(back.File("xtrabackup_info"), nullptr);
  EXPECT_EQ(*back.File("xtrabackup_info"), sum.files[1].second);
  EXPECT_EQ(back.File("xtrabackup_binlog_info"), nullptr);
  EXPECT_EQ(EncodeManifest(*entries, &back), text);

  for (size_t cut = 0; cut <= text.size(); cut++) {
    auto head = ParseManifestHead(std::string_view(text).substr(0, cut));
    ASSERT_TRUE(head.ok()) << cut << ": " << head.status().message();
    const bool whole_head = cut >= text.find("pieces 4096\n") + 12;
    EXPECT_EQ(head->complete, whole_head) << cut;
    if (whole_head) {
      EXPECT_EQ(head->version, 3);
      EXPECT_EQ(head->summary.files, sum.files);
    }
  }
  auto v2 = ParseManifestHead(EncodeManifest(e));
  ASSERT_TRUE(v2.ok());
  EXPECT_TRUE(v2->complete);
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(v2->summary.started, 0);

  auto damaged = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return ParseManifest(t);
  };
  EXPECT_FALSE(damaged("started 1795729854", "started soon").ok());
  EXPECT_FALSE(damaged("file xtrabackup_info ", "file  ").ok());
  EXPECT_FALSE(damaged("file xtrabackup_info 62", "file xtrabackup_info 6").ok());  // odd hex
  EXPECT_FALSE(damaged("file xtrabackup_info 62", "file xtrabackup_info zz").ok());
  EXPECT_FALSE(damaged("pieces 4096\n", "").ok());
  EXPECT_FALSE(damaged("encoding zstd+encrypted", "encoding zstd encrypted").ok());
  EXPECT_FALSE(damaged("lock GOVERNANCE", "lock FOREVER").ok());
  EXPECT_FALSE(damaged("lock GOVERNANCE 1796000000", "lock GOVERNANCE soon").ok());
  auto unknown = damaged("finished", "finishd");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("manifest line 3"), std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(ParseManifestHead("xbcloud-manifest 3\nbogus\n").ok());
}

}  // namespace
}  // namespace xbak::cloud
