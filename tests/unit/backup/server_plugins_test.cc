// ReadServerPlugins against private mariadbd servers: the page compression
// providers and the file_key_management plugin recorded for backup-my.cnf as
// mariabackup records them, and a key file's password never.
#include "xbak/backup/server_plugins.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "testing/server_fixture.h"

namespace xbak::backup {
namespace {

using ServerPluginsTest = xbak::testing::ServerTest;

TEST_F(ServerPluginsTest, APlainServerNeedsNoPluginAtPrepare) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  backupdir::ServerSettings s;
  ASSERT_TRUE(ReadServerPlugins(*c, {}, &s).ok());
  EXPECT_EQ(s.plugin_load, "");
  EXPECT_TRUE(s.plugin_options.empty());
}

TEST_F(ServerPluginsTest, ACompressionProviderIsLoadedByName) {
  std::string out;
  if (server_->Sql("INSTALL SONAME 'provider_lz4'", &out) != 0) {
    GTEST_SKIP() << "mariadb-plugin-provider-lz4 is not installed: " << out;
  }
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto vars = c->GlobalVariables();
  ASSERT_TRUE(vars.ok());
  backupdir::ServerSettings s;
  ASSERT_TRUE(ReadServerPlugins(*c, *vars, &s).ok());
  EXPECT_EQ(s.plugin_load, "provider_lz4=provider_lz4");
  EXPECT_EQ(s.plugin_dir, vars->at("plugin_dir"));
  EXPECT_FALSE(s.plugin_dir.empty());
  ASSERT_EQ(server_->Sql("UNINSTALL SONAME 'provider_lz4'"), 0);
}

// file_key_management needs its key file at startup: a server of its own.
TEST(ServerPluginsEncryptedTest, TheKeyManagementPluginAndItsSettingsAreRecordedButNoPassword) {
  xbak::testing::TempDir keys;
  const std::string key_file = keys / "keys.txt";
  std::ofstream(key_file) << "1;" << std::string(64, 'a') << "\n";
  ASSERT_EQ(::chmod(keys.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(key_file.c_str(), 0644), 0);
  std::string skip, error;
  auto server = xbak::testing::PrivateServer::Start(
      {"--plugin-load-add=file_key_management", "--file-key-management-filename=" + key_file,
       "--file-key-management-encryption-algorithm=aes_ctr", "--innodb-encrypt-tables=ON",
       "--innodb-encrypt-log=ON"},
      &skip, &error);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(server, nullptr) << error;
  mysql::ConnectOptions o;
  o.socket = server->socket();
  o.user = server->user();
  auto c = mysql::Connection::Open(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto vars = (*c)->GlobalVariables();
  ASSERT_TRUE(vars.ok());
  backupdir::ServerSettings s;
  ASSERT_TRUE(ReadServerPlugins(**c, *vars, &s).ok());
  EXPECT_EQ(s.plugin_load, "file_key_management=file_key_management");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"file_key_management_encryption_algorithm", "aes_ctr"},
      {"file_key_management_filename", key_file},
      {"innodb_encrypt_log", "ON"},
      {"innodb_encrypt_tables", "ON"}};
  EXPECT_EQ(s.plugin_options, want);

  // A key file's password (file_key_management_filekey given literally) is
  // never written into a backup; a FILE: reference is.
  auto with_password = *vars;
  with_password["file_key_management_filekey"] = "secret-password";
  backupdir::ServerSettings p;
  ASSERT_TRUE(ReadServerPlugins(**c, with_password, &p).ok());
  for (const auto& [k, v] : p.plugin_options) EXPECT_EQ(v.find("secret-password"), std::string::npos) << k;
  auto with_file = *vars;
  with_file["file_key_management_filekey"] = "FILE:/etc/mysql/filekey";
  backupdir::ServerSettings f;
  ASSERT_TRUE(ReadServerPlugins(**c, with_file, &f).ok());
  EXPECT_NE(std::find(f.plugin_options.begin(), f.plugin_options.end(),
                      std::make_pair(std::string("file_key_management_filekey"),
                                     std::string("FILE:/etc/mysql/filekey"))),
            f.plugin_options.end());
}

}  // namespace
}  // namespace xbak::backup
