// --verify of an encrypted backup: with the key every X.xbenc is decrypted as
// it is read (nothing on disk) and checked as X would be, a damaged page
// inside the encryption is still named by page, a damaged chunk by chunk and
// byte; without the key the problem says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "testing/meta_files.h"
#include "testing/synthetic_chain.h"
#include "util/temp_dir.h"
#include "verify_test_util.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/crypt/stream.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/verify/verify.h"

namespace xbak::verify {
namespace {

using test::kCkpt;
using testing::kPs;
using testing::MakePage;

std::string Str(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

std::unique_ptr<crypt::Key> TestKey(char c) {
  return crypt::Key::FromBytes(std::string(crypt::kKeyBytes, c), "test key").value();
}

class VerifyEncryptedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    dir_ = tmp_->path();
    ASSERT_FALSE(dir_.empty());
    key_ = TestKey('k');
    backup_ = crypt::NewBackupId().value();
    backupdir::ServerSettings s;
    s.checksum_algorithm = "full_crc32";
    s.data_file_path = "ibdata1:12M:autoextend";
    s.page_size = kPs;
    Put(meta_files::kCheckpoints,
        backupdir::FormatCheckpoints({"full-backuped", 0, kCkpt, kCkpt + 16, false}));
    Put(backupdir::kBackupCnfFile, backupdir::FormatBackupCnf(s));
    Put(meta_files::kInfo, "uuid = x\nbinlog_pos = \n");
    Put("ib_logfile0", Str(test::BackupLog()));
    Put("ibdata1", Str(test::Tablespace(0, 8)));
    Put("db/a.ibd", Str(test::Tablespace(5, 6)));
    Put("db/a.frm", "frm");
  }
  void TearDown() override { tmp_.reset(); }

  // DIR/NAME.xbenc holding `content`, as the encrypting sink writes it (chunks of 5000 bytes).
  void Put(const std::string& name, const std::string& content) {
    std::string out;
    auto e = crypt::Encryptor::Create(*key_, crypt::Algorithm::kAes256Gcm, backup_, name, 5000,
                                      [&](const uint8_t* d, size_t n) {
                                        out.append(reinterpret_cast<const char*>(d), n);
                                        return Status::Ok();
                                      });
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE((*e)->Write(content.data(), content.size()).ok());
    ASSERT_TRUE((*e)->Finish().ok());
    const std::string path = dir_ + "/" + name + ".xbenc";
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << out;
  }

  VerifyResult Verify(const crypt::KeyRing* keys) {
    VerifyOptions o;
    o.target_dir = dir_;
    o.parallel = 2;
    o.keys = keys;
    auto r = VerifyBackup(o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : VerifyResult{};
  }
  static std::string All(const VerifyResult& r) { return test::All(r); }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string dir_;
  std::unique_ptr<crypt::Key> key_;
  crypt::BackupId backup_{};
};

TEST_F(VerifyEncryptedTest, WithTheKeyEveryPageIsCheckedAsIfInClear) {
  crypt::KeyRing ring;
  ring.Add(TestKey('k'));
  VerifyResult r = Verify(&ring);
  EXPECT_TRUE(r.sound()) << All(r);
  EXPECT_EQ(r.pages, 14u);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
    EXPECT_TRUE(e.is_directory() || e.path().string().ends_with(".xbenc")) << "left on disk: " << e.path();
  }
}

TEST_F(VerifyEncryptedTest, APageDamagedBeforeEncryptionIsNamedByPage) {
  std::string bad = Str(test::Tablespace(5, 6));
  bad[2 * kPs + 100] ^= 0xFF;
  Put("db/a.ibd", bad);
  crypt::KeyRing ring;
  ring.Add(TestKey('k'));
  VerifyResult r = Verify(&ring);
  ASSERT_EQ(r.problem_count, 1u) << All(r);
  EXPECT_NE(r.problems[0].find("db/a.ibd.xbenc: page 2"), std::string::npos) << r.problems[0];
}

TEST_F(VerifyEncryptedTest, ADamagedChunkIsNamedWithItsOffset) {
  const std::string path = dir_ + "/db/a.ibd.xbenc";
  auto blob = util::ReadSmallFile(path, 1 << 20);
  ASSERT_TRUE(blob.ok());
  std::string b = *blob;
  b[b.size() / 2] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << b;
  crypt::KeyRing ring;
  ring.Add(TestKey('k'));
  VerifyResult r = Verify(&ring);
  ASSERT_FALSE(r.sound());
  EXPECT_NE(All(r).find(path + ": chunk "), std::string::npos) << All(r);
  EXPECT_NE(All(r).find("fails authentication"), std::string::npos) << All(r);
}

TEST_F(VerifyEncryptedTest, WithoutTheKeyTheProblemSaysSo) {
  VerifyResult r = Verify(nullptr);
  ASSERT_FALSE(r.sound());
  EXPECT_NE(All(r).find("--verify needs the backup's key (--encrypt-key-file)"), std::string::npos) << All(r);
  crypt::KeyRing wrong;
  wrong.Add(TestKey('w'));
  VerifyResult w = Verify(&wrong);
  ASSERT_FALSE(w.sound());
  EXPECT_NE(All(w).find("was encrypted with key id"), std::string::npos) << All(w);
}

}  // namespace
}  // namespace xbak::verify
