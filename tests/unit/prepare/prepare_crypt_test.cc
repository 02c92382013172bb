#include "xbak/prepare/prepare_crypt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {

class PrepareCryptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/prepare_crypt_" + std::to_string(::getpid());
    ASSERT_TRUE(util::MakeDirs(dir_).ok());
    keys_ = util::JoinPath(dir_, "keys.txt");
    ASSERT_TRUE(
        util::WriteFileAtomic(keys_, "1;00112233445566778899aabbccddeeff\n7;" + std::string(64, 'a') + "\n")
            .ok());
  }
  void Cnf(const std::string& extra) {
    ASSERT_TRUE(util::WriteFileAtomic(util::JoinPath(dir_, "backup-my.cnf"),
                                      "[mysqld]\ninnodb_page_size=16384\n" + extra)
                    .ok());
  }
  std::string dir_, keys_;
};

innodb::CryptData Crypt(uint32_t key_id) {
  innodb::CryptData c;
  c.scheme = 1;
  c.key_id = key_id;
  return c;
}

TEST_F(PrepareCryptTest, NoPluginNoKeys) {
  Cnf("");
  auto c = PrepareCrypt::Load(dir_, {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c, nullptr);
}

TEST_F(PrepareCryptTest, TakesTheSettingsOfBackupMyCnf) {
  Cnf("plugin_load=file_key_management=file_key_management\nfile_key_management_filename=" + keys_ +
      "\nfile_key_management_encryption_algorithm=aes_ctr\ninnodb_encrypt_tables=FORCE\n");
  auto c = PrepareCrypt::Load(dir_, {});
  ASSERT_TRUE(c.ok() && *c != nullptr);
  EXPECT_EQ((*c)->mode(), innodb::CryptMode::kCtr);
  EXPECT_TRUE((*c)->encrypt_tables());
  EXPECT_TRUE((*c)->SpaceKey(Crypt(7), 1).ok());
  auto missing = (*c)->SpaceKey(Crypt(3), 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("key id 3"), std::string::npos) << missing.status().message();
}

TEST_F(PrepareCryptTest, TheCommandLineOverridesAndErrorsNameTheKeyFile) {
  Cnf("plugin_load_add=file_key_management\nfile_key_management_filename=/nonexistent/keys.txt\n"
      "innodb_encrypt_tables=OFF\n");
  // Nothing encrypted needs no key: loading succeeds, asking for a key fails by name.
  auto c = PrepareCrypt::Load(dir_, {});
  ASSERT_TRUE(c.ok() && *c != nullptr);
  EXPECT_EQ((*c)->mode(), innodb::CryptMode::kCbc);  // the plugin's default
  EXPECT_FALSE((*c)->encrypt_tables());
  auto k = (*c)->SpaceKey(Crypt(1), 1);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("/nonexistent/keys.txt"), std::string::npos);
  EXPECT_NE(k.status().message().find("--file-key-management-filename"), std::string::npos);

  auto o = PrepareCrypt::Load(dir_, {keys_, "", "aes_ctr"});
  ASSERT_TRUE(o.ok() && *o != nullptr);
  EXPECT_TRUE((*o)->SpaceKey(Crypt(1), 1).ok());
  EXPECT_EQ((*o)->mode(), innodb::CryptMode::kCtr);
  auto bad = PrepareCrypt::Load(dir_, {keys_, "", "aes_gcm"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--file-key-management-encryption-algorithm"), std::string::npos);
}

}  // namespace
}  // namespace xbak::prepare
