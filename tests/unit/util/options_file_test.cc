#include "xbak/util/options_file.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace xbak::util {
namespace {

TEST(OptionFile, GroupsOrderCommentsAndQuotes) {
  std::string text =
      "# comment\n[mysqld]\ndatadir=/srv/db\n[client]\nuser = root\npassword=\"p#ss word\"\n"
      "socket=/tmp/a.sock # trailing\n[xbak]\nuser=backup\nno_value_key\n[other]\nuser=nobody\n";
  auto r = ParseOptionText(text, "test.cnf", {"client", "xbak"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const OptionMap& m = r.value();
  EXPECT_EQ(m.at("user").value, "backup");  // [xbak] listed after [client] wins
  EXPECT_EQ(m.at("password").value, "p#ss word");
  EXPECT_EQ(m.at("socket").value, "/tmp/a.sock");
  EXPECT_EQ(m.at("no-value-key").value, "");
  EXPECT_EQ(m.count("datadir"), 0u);
  EXPECT_EQ(m.at("socket").origin, "test.cnf:7");
}

TEST(OptionFile, BadGroupHeaderNamesLine) {
  auto r = ParseOptionText("[client\nuser=x\n", "f.cnf", {"client"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("f.cnf:1"), std::string::npos);
}

TEST(OptionFile, MissingFile) {
  EXPECT_FALSE(ReadOptionFile("/nonexistent/x.cnf", {"client"}).ok());
  EXPECT_TRUE(ReadOptionFile("/nonexistent/x.cnf", {"client"}, false).ok());
}

TEST(OptionFile, ChooseOptionFileAsTheMysqlClientsDo) {
  const char* explicit_file[] = {"prog", "--user=u", "--defaults-file=/etc/x.cnf"};
  auto c = ChooseOptionFile(3, explicit_file);
  EXPECT_EQ(c.path, "/etc/x.cnf");
  EXPECT_TRUE(c.must_exist);
  const char* none[] = {"prog", "--defaults-file=/etc/x.cnf", "--no-defaults"};
  EXPECT_TRUE(ChooseOptionFile(3, none).path.empty());
  const char* plain[] = {"prog", "--user=u"};
  c = ChooseOptionFile(2, plain);
  if (std::getenv("HOME") != nullptr) {
    EXPECT_EQ(c.path, std::string(std::getenv("HOME")) + "/.my.cnf");
    EXPECT_FALSE(c.must_exist);
  }
}

}  // namespace
}  // namespace xbak::util
