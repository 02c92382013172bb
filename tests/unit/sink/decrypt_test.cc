// --decrypt over a directory and --extract --decrypt from a stream: what the
// encrypting sink wrote comes back byte for byte, and every refusal (wrong
// key, a file of another backup, a renamed file) comes before anything is
// written; damage is named with file and offset and leaves no finished file.
#include "xbak/sink/decrypt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "stream/stream_test_util.h"
#include "xbak/sink/encrypt.h"
#include "xbak/sink/xbstream_sink.h"

namespace xbak::sink {
namespace {

using testing::TempDir;
using testing::TreeContents;

std::shared_ptr<const crypt::Key> KeyOf(char fill) {
  return std::shared_ptr<const crypt::Key>(
      crypt::Key::FromBytes(std::string(crypt::kKeyBytes, fill), "k").value());
}

crypt::KeyRing Ring(char fill) {
  crypt::KeyRing r;
  r.Add(crypt::Key::FromBytes(std::string(crypt::kKeyBytes, fill), "key " + std::string(1, fill)).value());
  return r;
}

const std::map<std::string, std::string> kFiles = {
    {"ibdata1", testing::Pattern(700000, 1)},
    {"db/a.ibd", testing::Pattern(300000, 2)},
    {"db/a.frm", "frm"},
    {"xtrabackup_checkpoints", "backup_type = full-backuped\n"},
    {"db/empty.MYD", ""},
};

// kFiles through an encrypting sink (one backup id per call) into `sink`.
void WriteEncrypted(std::unique_ptr<Sink> inner, char key = 'k',
                    const std::map<std::string, std::string>& files = kFiles) {
  EncryptOptions o;
  o.key = KeyOf(key);
  o.threads = 2;
  o.chunk_size = 65536;
  o.backup_id = crypt::NewBackupId().value();
  auto sink = MakeEncryptingSink(std::move(inner), o);
  ASSERT_TRUE(sink.ok());
  for (const auto& [name, data] : files) {
    auto f = (*sink)->Create(name);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write(data.data(), data.size()).ok());
    ASSERT_TRUE((*f)->Close().ok());
  }
  ASSERT_TRUE((*sink)->Flush().ok());
}

void WriteEncryptedDir(const std::string& dir, char key = 'k') {
  WriteEncrypted(MakeDirectorySink(dir).value(), key);
}

TEST(DecryptBackupTest, ADirectoryComesBackByteForByte) {
  TempDir t;
  WriteEncryptedDir(t / "b");
  auto ring = Ring('k');
  Status st = DecryptBackup({t / "b", 3, true}, ring);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "b"), kFiles);
}

TEST(DecryptBackupTest, AWrongKeyIsRefusedBeforeAnythingIsWritten) {
  TempDir t;
  WriteEncryptedDir(t / "b");
  const auto before = TreeContents(t / "b");
  auto wrong = Ring('w');
  Status st = DecryptBackup({t / "b", 2, true}, wrong);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("was encrypted with key id " + crypt::KeyIdHex(KeyOf('k')->id()) +
                              "; the key given has id " + crypt::KeyIdHex(KeyOf('w')->id())),
            std::string::npos)
      << st.message();
  EXPECT_EQ(TreeContents(t / "b"), before);
}

TEST(DecryptBackupTest, AFileOfAnotherBackupOrUnderAnotherNameIsRefusedFirst) {
  TempDir t;
  WriteEncryptedDir(t / "b");
  WriteEncryptedDir(t / "other");
  const std::string foreign = t / "b/db/a.ibd.xbenc";
  std::filesystem::copy_file(t / "other/db/a.ibd.xbenc", foreign,
                             std::filesystem::copy_options::overwrite_existing);
  const auto before = TreeContents(t / "b");
  auto ring = Ring('k');
  Status st = DecryptBackup({t / "b", 2, false}, ring);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("belongs to another backup"), std::string::npos) << st.message();
  EXPECT_EQ(TreeContents(t / "b"), before);

  TempDir u;
  WriteEncryptedDir(u / "b");
  std::filesystem::rename(u / "b/db/a.ibd.xbenc", u / "b/db/z.ibd.xbenc");
  Status renamed = DecryptBackup({u / "b", 2, false}, ring);
  ASSERT_FALSE(renamed.ok());
  EXPECT_NE(renamed.message().find("the header says this is db/a.ibd of its backup"), std::string::npos)
      << renamed.message();
}

TEST(DecryptBackupTest, DamageIsNamedWithItsOffsetAndLeavesNoFinishedFile) {
  TempDir t;
  WriteEncryptedDir(t / "b");
  const std::string path = t / "b/ibdata1.xbenc";
  auto blob = util::ReadSmallFile(path, 64 << 20);
  ASSERT_TRUE(blob.ok());
  std::string bad = *blob;
  bad[300000] ^= 1;
  testing::WriteFile(path, bad);
  auto ring = Ring('k');
  Status st = DecryptBackup({t / "b", 1, false}, ring);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(path + ": chunk 4 at byte "), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(t / "b/ibdata1"));
  EXPECT_FALSE(std::filesystem::exists(t / "b/ibdata1.xbpartial"));
}

TEST(DecryptOnExtractTest, AStreamIsExtractedDecrypted) {
  TempDir t;
  util::UniqueFd out = testing::MemFd("");
  WriteEncrypted(MakeXbstreamSink(out.get()).value());
  ::lseek(out.get(), 0, SEEK_SET);
  auto ring = Ring('k');
  stream::ExtractOptions x;
  x.target_dir = t / "x";
  x.fsync = false;
  x.filter = DecryptingExtractFilter(ring);
  Status st = stream::ExtractStream(out.get(), x);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "x"), kFiles);
}

TEST(DecryptOnExtractTest, ADamagedFileInASoundStreamFailsAndIsLeftUnfinished) {
  // The .xbenc damaged, then put in a stream whose own checksums are right:
  // only the decryption can catch it.
  TempDir t;
  WriteEncryptedDir(t / "b");
  auto blob = util::ReadSmallFile(t / "b/db/a.ibd.xbenc", 64 << 20);
  ASSERT_TRUE(blob.ok());
  std::string bad = *blob;
  bad[200000] ^= 1;
  util::UniqueFd out = testing::MemFd("");
  {
    auto xb = MakeXbstreamSink(out.get());
    ASSERT_TRUE(xb.ok());
    auto f = (*xb)->Create("db/a.ibd.xbenc");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write(bad.data(), bad.size()).ok());
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE((*xb)->Flush().ok());
  }
  ::lseek(out.get(), 0, SEEK_SET);
  auto ring = Ring('k');
  stream::ExtractOptions x;
  x.target_dir = t / "x";
  x.fsync = false;
  x.filter = DecryptingExtractFilter(ring);
  Status st = stream::ExtractStream(out.get(), x);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("db/a.ibd.xbenc: chunk 3 at byte "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("fails authentication"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(t / "x/db/a.ibd"));
}

}  // namespace
}  // namespace xbak::sink
