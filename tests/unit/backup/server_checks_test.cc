// CheckPrivileges and StatusLsn against a private mariadbd: each missing
// privilege named with what it is for, before anything is copied.
#include "xbak/backup/server_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/server_fixture.h"

namespace xbak::backup {
namespace {

using ServerChecksTest = xbak::testing::ServerTest;

PrivilegeNeeds Everything() { return PrivilegeNeeds{true, true, true, true}; }

TEST_F(ServerChecksTest, AnAccountWithAllPrivilegesPasses) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, Everything());
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST_F(ServerChecksTest, EveryMissingPrivilegeIsNamedAtOnceWithTheGrants) {
  auto c = Connect(User("xbak_none", ""));
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, Everything());
  ASSERT_FALSE(st.ok());
  // A line each, in mariabackup's words, which scripts grep for.
  for (const char* p : {"RELOAD", "PROCESS", "BINLOG MONITOR", "SLAVE MONITOR", "REPLICATION SLAVE ADMIN"}) {
    EXPECT_NE(st.message().find(std::string("\n  missing required privilege ") + p + " on *.* ("),
              std::string::npos)
        << p << ": " << st.message();
  }
  EXPECT_NE(st.message().find("SHOW GRANTS:\n  GRANT USAGE ON *.* TO `xbak_none`@"), std::string::npos)
      << st.message();
}

TEST_F(ServerChecksTest, TheGrantsShownHideThePasswordHash) {
  auto c = Connect(User("xbak_pw", ""));
  ASSERT_NE(c, nullptr);
  auto admin = Connect();
  ASSERT_NE(admin, nullptr);
  auto hash = admin->QueryValue("SELECT authentication_string FROM mysql.user WHERE user = 'xbak_pw'");
  ASSERT_TRUE(hash.ok() && hash->has_value() && !(**hash).empty());
  Status st = CheckPrivileges(*c, Everything());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("PASSWORD '<hidden>'"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find(**hash), std::string::npos) << st.message();
}

TEST_F(ServerChecksTest, OnlyWhatTheOptionsNeedIsAskedFor) {
  auto c = Connect(User("xbak_basic", "RELOAD, PROCESS"));
  ASSERT_NE(c, nullptr);
  Status plain = CheckPrivileges(*c, PrivilegeNeeds{});
  EXPECT_TRUE(plain.ok()) << plain.message();
  PrivilegeNeeds with_binlog;
  with_binlog.binlog = true;
  Status binlog = CheckPrivileges(*c, with_binlog);
  ASSERT_FALSE(binlog.ok());
  EXPECT_NE(binlog.message().find("missing required privilege BINLOG MONITOR"), std::string::npos)
      << binlog.message();
  EXPECT_EQ(binlog.message().find("privilege RELOAD"), std::string::npos) << binlog.message();
}

TEST_F(ServerChecksTest, NoLockNeedsNeitherReloadNorProcess) {
  auto c = Connect(User("xbak_nolock", ""));
  ASSERT_NE(c, nullptr);
  PrivilegeNeeds no_lock;
  no_lock.locks = false;
  Status st = CheckPrivileges(*c, no_lock);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(CheckPrivileges(*c, PrivilegeNeeds{}).ok());
}

TEST_F(ServerChecksTest, SuperCoversEverything) {
  auto c = Connect(User("xbak_super", "SUPER"));
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, Everything());
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST_F(ServerChecksTest, TheLsnsComeFromTheServersStatus) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto current = StatusLsn(*c, "INNODB_LSN_CURRENT");
  auto flushed = StatusLsn(*c, "INNODB_LSN_FLUSHED");
  ASSERT_TRUE(current.ok()) << current.status().message();
  ASSERT_TRUE(flushed.ok()) << flushed.status().message();
  EXPECT_GT(*flushed, 0u);
  EXPECT_GE(*current, *flushed);
  // The head moves with writes.
  ASSERT_TRUE(c->Execute("CREATE TABLE test_lsn.t (id INT PRIMARY KEY) ENGINE=InnoDB").ok() ||
              (c->Execute("CREATE DATABASE test_lsn").ok() &&
               c->Execute("CREATE TABLE test_lsn.t (id INT PRIMARY KEY) ENGINE=InnoDB").ok()));
  ASSERT_TRUE(c->Execute("INSERT INTO test_lsn.t VALUES (1), (2), (3)").ok());
  auto later = StatusLsn(*c, "INNODB_LSN_CURRENT");
  ASSERT_TRUE(later.ok());
  EXPECT_GT(*later, *current);

  auto none = StatusLsn(*c, "INNODB_NO_SUCH_LSN");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("the server has no status variable INNODB_NO_SUCH_LSN"),
            std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace xbak::backup
