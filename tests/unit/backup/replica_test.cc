// --slave-info, --galera-info and --safe-slave-backup against a private
// mariadbd made a replica of a primary that is not there (the replication
// state is all these read; the IO thread is never started). A real primary
// and replica, and Galera: tests/integration/t_slave_info.sh, t_galera.sh.
#include "xbak/backup/replica.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/server_fixture.h"

namespace xbak::backup {
namespace {

class ReplicaTest : public xbak::testing::ServerTest {
 protected:
  void Sql(const std::string& sql) {
    std::string out;
    ASSERT_EQ(server_->Sql(sql, &out), 0) << sql << ": " << out;
  }
  std::string SqlRunning(mysql::Connection& c, const std::string& name) {
    auto rows = c.QueryNamed("SHOW ALL SLAVES STATUS");
    EXPECT_TRUE(rows.ok());
    for (auto& r : *rows) {
      if (r["Connection_name"] == name) return r["Slave_SQL_Running"];
    }
    return "(no such connection)";
  }
};

TEST_F(ReplicaTest, AServerThatIsNoReplicaGivesNothingToWrite) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto info = SlaveInfo(*c);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(*info, "");
  auto galera = GaleraInfo(*c);
  ASSERT_TRUE(galera.ok()) << galera.status().message();
  EXPECT_EQ(*galera, "");
  auto safe = SafeSlave::Stop(*c, std::chrono::seconds(5));
  ASSERT_TRUE(safe.ok()) << safe.status().message();
  EXPECT_TRUE((*safe)->Restart().ok());
}

TEST_F(ReplicaTest, SlaveInfoGivesTheStatementsThatResumeReplication) {
  // A named connection by binlog file and position, the default one by GTID.
  Sql("CHANGE MASTER 'east' TO master_host='127.0.0.1', master_port=9, master_user='r', "
      "master_use_gtid=no, master_log_file='east-bin.000007', master_log_pos=1234");
  Sql("SET GLOBAL gtid_slave_pos = '0-1-5'");
  // Each connection its own (absent) primary: two on one host:port conflict.
  Sql("CHANGE MASTER TO master_host='127.0.0.1', master_port=10, master_user='r', master_use_gtid=slave_pos");
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto info = SlaveInfo(*c);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_NE(info->find("SET GLOBAL gtid_slave_pos = '0-1-5';\n"), std::string::npos) << *info;
  EXPECT_NE(info->find("CHANGE MASTER TO master_use_gtid = slave_pos;\n"), std::string::npos) << *info;
  EXPECT_NE(info->find("CHANGE MASTER 'east' TO MASTER_LOG_FILE='east-bin.000007', MASTER_LOG_POS=1234;\n"),
            std::string::npos)
      << *info;
  Sql("RESET SLAVE 'east' ALL; RESET SLAVE ALL");
}

TEST_F(ReplicaTest, SafeSlaveStopsOnlyTheRunningSqlThreadsAndStartsThemAgain) {
  Sql("CHANGE MASTER 'west' TO master_host='127.0.0.1', master_port=9, master_user='r', master_use_gtid=no");
  Sql("CHANGE MASTER 'north' TO master_host='127.0.0.1', master_port=11, master_user='r', "
      "master_use_gtid=no");
  Sql("START SLAVE 'west' SQL_THREAD");  // runs without its primary: it applies the (empty) relay log
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(SqlRunning(*c, "west"), "Yes");
  ASSERT_EQ(SqlRunning(*c, "north"), "No");
  {
    auto safe = SafeSlave::Stop(*c, std::chrono::seconds(10));
    ASSERT_TRUE(safe.ok()) << safe.status().message();
    EXPECT_EQ(SqlRunning(*c, "west"), "No");
    ASSERT_TRUE((*safe)->Restart().ok());
    EXPECT_EQ(SqlRunning(*c, "west"), "Yes");
    EXPECT_EQ(SqlRunning(*c, "north"), "No");  // it was not running: left alone
    EXPECT_TRUE((*safe)->Restart().ok());      // idempotent
  }
  {
    // On a failure path the destructor starts them again.
    auto safe = SafeSlave::Stop(*c, std::chrono::seconds(10));
    ASSERT_TRUE(safe.ok());
    EXPECT_EQ(SqlRunning(*c, "west"), "No");
  }
  EXPECT_EQ(SqlRunning(*c, "west"), "Yes");
  Sql("STOP SLAVE 'west' SQL_THREAD; RESET SLAVE 'west' ALL; RESET SLAVE 'north' ALL");
}

}  // namespace
}  // namespace xbak::backup
