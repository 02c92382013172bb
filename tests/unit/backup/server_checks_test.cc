// CheckPrivileges and StatusLsn against a private mariadbd: each missing
// privilege named with what it is for, before anything is copied.
#include "xbak/backup/server_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/server_fixture.h"

namespace xbak::backup {
namespace {

using ServerChecksTest = xbak::testing::ServerTest;

TEST_F(ServerChecksTest, AnAccountWithAllPrivilegesPasses) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, true, true, true);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST_F(ServerChecksTest, EveryMissingPrivilegeIsNamedAtOnce) {
  auto c = Connect(User("xbak_none", ""));
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, true, true, true);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("lacks privileges: RELOAD, PROCESS, BINLOG MONITOR, SLAVE MONITOR, "
                              "REPLICATION SLAVE ADMIN ("),
            std::string::npos)
      << st.message();
}

TEST_F(ServerChecksTest, OnlyWhatTheOptionsNeedIsAskedFor) {
  auto c = Connect(User("xbak_basic", "RELOAD, PROCESS"));
  ASSERT_NE(c, nullptr);
  Status plain = CheckPrivileges(*c, false, false, false);
  EXPECT_TRUE(plain.ok()) << plain.message();
  Status binlog = CheckPrivileges(*c, true, false, false);
  ASSERT_FALSE(binlog.ok());
  EXPECT_NE(binlog.message().find("lacks privileges: BINLOG MONITOR ("), std::string::npos)
      << binlog.message();
  EXPECT_EQ(binlog.message().find("RELOAD, "), std::string::npos) << binlog.message();
}

TEST_F(ServerChecksTest, SuperCoversEverything) {
  auto c = Connect(User("xbak_super", "SUPER"));
  ASSERT_NE(c, nullptr);
  Status st = CheckPrivileges(*c, true, true, true);
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
