// The encrypting sink: every file X as X.xbenc that decrypts to X, its chunks
// sealed on several threads yet in order, below compression when both are on,
// an empty file still a valid encrypted file, and nothing in clear text.
#include "xbak/sink/encrypt.h"

#include <gtest/gtest.h>

#include <thread>

#include "stream/stream_test_util.h"
#include "xbak/crypt/stream.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"

namespace xbak::sink {
namespace {

using testing::TempDir;
using testing::TreeContents;

std::shared_ptr<const crypt::Key> TestKey(char fill = 'k') {
  auto k = crypt::Key::FromBytes(std::string(crypt::kKeyBytes, fill), "test key");
  EXPECT_TRUE(k.ok());
  return std::shared_ptr<const crypt::Key>(std::move(k).value());
}

std::map<std::string, std::string> EncryptSamples() {
  return {
      {"ibdata1", testing::Pattern(3 << 20, 5) + "MARKER-ROW-ibdata1" + std::string(100000, '\0')},
      {"db/t1.ibd", "MARKER-ROW-t1" + testing::Pattern(65536 * 5 + 17, 2)},
      {"db/t1.frm", "CREATE TABLE t1 (a INT) -- MARKER-ROW-frm"},
      {"db/empty.MYD", ""},
  };
}

// Writes `files` through `sink` from two threads, each file in uneven pieces.
void WriteAll(Sink& sink, const std::map<std::string, std::string>& files) {
  std::vector<std::pair<std::string, std::string>> list(files.begin(), files.end());
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th) {
    threads.emplace_back([&, th] {
      for (size_t i = th; i < list.size(); i += 2) {
        auto f = sink.Create(list[i].first);
        ASSERT_TRUE(f.ok()) << f.status().message();
        const std::string& d = list[i].second;
        for (size_t at = 0; at < d.size();) {
          size_t n = std::min(d.size() - at, size_t{1} + (at * 7919) % 300000);
          ASSERT_TRUE((*f)->Write(d.data() + at, n).ok());
          at += n;
        }
        ASSERT_TRUE((*f)->Close().ok());
      }
    });
  }
  for (auto& t : threads) t.join();
}

Result<std::string> DecryptFile(const std::string& blob, const crypt::KeyRing& ring, const std::string& path,
                                crypt::BackupId* backup = nullptr) {
  std::string plain;
  crypt::Decryptor d(ring, path + ".xbenc", path, [&](const uint8_t* p, size_t n) {
    plain.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  });
  XBAK_RETURN_IF_ERROR(d.Write(blob.data(), blob.size()));
  XBAK_RETURN_IF_ERROR(d.Finish());
  if (backup) *backup = d.header()->backup_id;
  return plain;
}

TEST(EncryptingSinkTest, EveryFileDecryptsToItselfAndNothingIsInClearText) {
  TempDir dir;
  EncryptOptions o;
  o.key = TestKey();
  o.threads = 3;
  o.chunk_size = 100000;  // several chunks per file, sealed on all threads
  o.backup_id.fill(0x42);
  auto base = MakeDirectorySink(dir.path());
  ASSERT_TRUE(base.ok());
  auto sink = MakeEncryptingSink(std::move(base).value(), o);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  const auto files = EncryptSamples();
  WriteAll(**sink, files);
  EXPECT_NE((*sink)->Describe().find("encrypted (AES256, key id " + crypt::KeyIdHex(o.key->id()) + ")"),
            std::string::npos);
  crypt::KeyRing ring;
  ring.Add(crypt::Key::FromBytes(std::string(crypt::kKeyBytes, 'k'), "ring").value());
  const auto tree = TreeContents(dir.path());
  ASSERT_EQ(tree.size(), files.size());
  for (const auto& [path, content] : files) {
    auto it = tree.find(path + ".xbenc");
    ASSERT_NE(it, tree.end()) << path;
    EXPECT_EQ(it->second.find("MARKER-ROW"), std::string::npos) << path << " holds clear text";
    crypt::BackupId backup{};
    auto plain = DecryptFile(it->second, ring, path, &backup);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    EXPECT_EQ(*plain, content) << path;
    EXPECT_EQ(backup, o.backup_id);
  }
}

TEST(EncryptingSinkTest, BelowCompressionAFileIsCompressedThenEncrypted) {
  TempDir dir, out;
  EncryptOptions e;
  e.key = TestKey();
  e.threads = 2;
  auto base = MakeDirectorySink(dir.path());
  ASSERT_TRUE(base.ok());
  auto enc = MakeEncryptingSink(std::move(base).value(), e);
  ASSERT_TRUE(enc.ok());
  CompressOptions c;
  c.threads = 2;
  auto sink = MakeCompressingSink(std::move(enc).value(), c);
  ASSERT_TRUE(sink.ok());
  const auto files = EncryptSamples();
  WriteAll(**sink, files);
  crypt::KeyRing ring;
  ring.Add(crypt::Key::FromBytes(std::string(crypt::kKeyBytes, 'k'), "ring").value());
  // Decrypt X.zst.xbenc to X.zst, then the decompressor must give X back.
  for (const auto& [path, blob] : TreeContents(dir.path())) {
    ASSERT_TRUE(path.ends_with(".zst.xbenc")) << path;
    const std::string zst_path = path.substr(0, path.size() - 6);
    auto plain = DecryptFile(blob, ring, zst_path);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    testing::WriteFile(out / zst_path, *plain);
  }
  DecompressOptions d;
  d.target_dir = out.path();
  d.remove_original = true;
  ASSERT_TRUE(DecompressBackup(d).ok());
  EXPECT_EQ(TreeContents(out.path()), files);
}

TEST(EncryptingSinkTest, AFileNeverClosedIsNotPartOfTheBackup) {
  TempDir dir;
  EncryptOptions o;
  o.key = TestKey();
  auto base = MakeDirectorySink(dir.path());
  ASSERT_TRUE(base.ok());
  auto sink = MakeEncryptingSink(std::move(base).value(), o);
  ASSERT_TRUE(sink.ok());
  {
    auto f = (*sink)->Create("db/half.ibd");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write("some bytes", 10).ok());
  }  // dropped unclosed: a failed copy
  for (const auto& [path, blob] : TreeContents(dir.path())) {
    EXPECT_FALSE(path == "db/half.ibd.xbenc") << "an unfinished file under its final name";
  }
}

TEST(EncryptingSinkTest, BadOptionsAreRefusedByName) {
  TempDir dir;
  EncryptOptions o;
  auto no_key = MakeEncryptingSink(MakeDirectorySink(dir / "a").value(), o);
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("--encrypt-key-file"), std::string::npos);
  o.key = TestKey();
  o.threads = 0;
  auto threads = MakeEncryptingSink(MakeDirectorySink(dir / "b").value(), o);
  ASSERT_FALSE(threads.ok());
  EXPECT_NE(threads.status().message().find("--encrypt-threads must be between 1 and 1024"),
            std::string::npos);
  o.threads = 1;
  o.chunk_size = crypt::kMaxChunkBytes + 1;
  auto chunk = MakeEncryptingSink(MakeDirectorySink(dir / "c").value(), o);
  ASSERT_FALSE(chunk.ok());
  EXPECT_NE(chunk.status().message().find("--encrypt-chunk-size"), std::string::npos);
}

}  // namespace
}  // namespace xbak::sink
