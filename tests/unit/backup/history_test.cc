// --history and --incremental-history-name/-uuid against a private mariadbd:
// mariabackup's table, one row per backup, the base of the next incremental.
#include "xbak/backup/history.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/server_fixture.h"

namespace xbak::backup {
namespace {

class HistoryTest : public xbak::testing::ServerTest {
 protected:
  static backupdir::BackupInfo Row(const std::string& uuid, const std::string& name, const std::string& end,
                                   uint64_t to_lsn) {
    backupdir::BackupInfo i;
    i.uuid = uuid;
    i.name = name;
    i.tool_command = "--backup --history=" + name;
    i.tool_version = "0.1.0";
    i.server_version = "10.11";
    i.start_time = "2026-11-01 00:00:00";
    i.end_time = end;
    i.from_lsn = 0;
    i.to_lsn = to_lsn;
    return i;
  }
};

TEST_F(HistoryTest, TheTableIsMariabackupsAndCreatingItTwiceIsHarmless) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(EnsureHistoryTable(*c).ok());
  Status again = EnsureHistoryTable(*c);
  EXPECT_TRUE(again.ok()) << again.message();
  auto cols = c->QueryValue(
      "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS "
      "WHERE TABLE_SCHEMA = 'mysql' AND TABLE_NAME = 'mariadb_backup_history'");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(
      *cols,
      "uuid,name,tool_name,tool_command,tool_version,ibbackup_version,server_version,start_time,end_time,"
      "lock_time,binlog_pos,innodb_from_lsn,innodb_to_lsn,partial,incremental,format,compressed");
}

TEST_F(HistoryTest, TheNextIncrementalStartsAtTheLatestBackupOfItsSeries) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(EnsureHistoryTable(*c).ok());
  ASSERT_TRUE(AddHistoryRow(*c, Row("u-1", "nightly", "2026-11-01 01:00:00", 1000)).ok());
  ASSERT_TRUE(AddHistoryRow(*c, Row("u-3", "nightly", "2026-11-03 01:00:00", 3000)).ok());
  ASSERT_TRUE(AddHistoryRow(*c, Row("u-2", "nightly", "2026-11-02 01:00:00", 2000)).ok());
  ASSERT_TRUE(AddHistoryRow(*c, Row("u-9", "o'brien", "2026-11-09 01:00:00", 9000)).ok());  // quoted

  auto latest = HistoryBaseLsn(*c, "nightly", "");
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  EXPECT_EQ(*latest, 3000u);  // by end_time, not by insertion order
  auto by_uuid = HistoryBaseLsn(*c, "", "u-2");
  ASSERT_TRUE(by_uuid.ok());
  EXPECT_EQ(*by_uuid, 2000u);
  auto quoted = HistoryBaseLsn(*c, "o'brien", "");
  ASSERT_TRUE(quoted.ok()) << quoted.status().message();
  EXPECT_EQ(*quoted, 9000u);
  auto tool = c->QueryValue("SELECT tool_name FROM mysql.mariadb_backup_history WHERE uuid = 'u-1'");
  ASSERT_TRUE(tool.ok());
  EXPECT_EQ(*tool, "xbak");
}

TEST_F(HistoryTest, AnUnknownSeriesOrUuidIsNamedWithTheOptionToUse) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(EnsureHistoryTable(*c).ok());
  auto series = HistoryBaseLsn(*c, "weekly", "");
  ASSERT_FALSE(series.ok());
  EXPECT_EQ(series.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(series.status().message().find("has no backup series 'weekly' (--incremental-history-name)"),
            std::string::npos)
      << series.status().message();
  auto uuid = HistoryBaseLsn(*c, "", "no-such-uuid");
  ASSERT_FALSE(uuid.ok());
  EXPECT_NE(uuid.status().message().find("has no backup no-such-uuid (--incremental-history-uuid)"),
            std::string::npos)
      << uuid.status().message();
}

TEST_F(HistoryTest, AUserWhoMayNotCreateTheTableLearnsSoFirst) {
  ASSERT_EQ(server_->Sql("DROP TABLE IF EXISTS mysql.mariadb_backup_history"), 0);
  auto c = Connect(User("xbak_nohistory", "RELOAD, PROCESS"));
  ASSERT_NE(c, nullptr);
  Status st = EnsureHistoryTable(*c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--history: cannot create mysql.mariadb_backup_history (the backup user needs "
                              "CREATE and INSERT on it)"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace xbak::backup
