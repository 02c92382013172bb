#include "xbak/backupdir/metadata.h"

#include <gtest/gtest.h>

namespace xbak::backupdir {
namespace {

// The exact bytes mariabackup 10.11.19 wrote in the lab (lab-notes.md section 4).
constexpr const char* kMariabackupCheckpoints =
    "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 252739344\nlast_lsn = 252739360\n"
    "recover_binlog_info = 0\n";

TEST(Checkpoints, FormatMatchesMariabackupByteForByte) {
  Checkpoints c{"full-backuped", 0, 252739344, 252739360, false};
  EXPECT_EQ(FormatCheckpoints(c), kMariabackupCheckpoints);
}

TEST(Checkpoints, ParseRoundTrip) {
  auto r = ParseCheckpoints(kMariabackupCheckpoints, "x/xtrabackup_checkpoints");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->backup_type, "full-backuped");
  EXPECT_EQ(r->to_lsn, 252739344u);
  EXPECT_EQ(r->last_lsn, 252739360u);
}

TEST(Checkpoints, BadInputNamesFileAndField) {
  auto r =
      ParseCheckpoints("backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 12x\nlast_lsn = 1\n", "B/cp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("to_lsn"), std::string::npos);
  EXPECT_NE(r.status().message().find("B/cp"), std::string::npos);
  EXPECT_FALSE(ParseCheckpoints("backup_type = weird\nfrom_lsn=0\nto_lsn=0\nlast_lsn=0\n", "f").ok());
  EXPECT_FALSE(ParseCheckpoints("from_lsn=0\nto_lsn=0\nlast_lsn=0\n", "f").ok());
  EXPECT_FALSE(ParseCheckpoints("backup_type = incremental\nfrom_lsn=9\nto_lsn=3\nlast_lsn=9\n", "f").ok());
}

TEST(BinlogInfo, TabSeparated) {
  EXPECT_EQ(FormatBinlogInfo({"mysql-bin.000001", 158717941, "0-13306-4344"}),
            "mysql-bin.000001\t158717941\t0-13306-4344\n");
}

TEST(BinlogInfo, ParsesWhatEitherToolWrites) {
  auto b = ParseBinlogInfo("mysql-bin.000001\t158717941\t0-13306-4344,1-2-3\n", "x");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->file, "mysql-bin.000001");
  EXPECT_EQ(b->position, 158717941u);
  EXPECT_EQ(b->gtid, "0-13306-4344,1-2-3");
  // An empty GTID column, and a file without a binlog.
  b = ParseBinlogInfo("mysql-bin.000002\t4\t\n", "x");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->gtid, "");
  b = ParseBinlogInfo("", "x");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->file, "");
  // Round trip.
  b = ParseBinlogInfo(FormatBinlogInfo({"a.000009", 77, "0-1-2"}), "x");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->position, 77u);
  for (const char* bad : {"mysql-bin.000001\n", "mysql-bin.000001\tx\t0-1-2\n", "\t4\t0-1-2\n",
                          "f\t99999999999999999999\t\n"}) {
    auto r = ParseBinlogInfo(bad, "B/xtrabackup_binlog_info");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("B/xtrabackup_binlog_info"), std::string::npos);
  }
}

TEST(Info, BinlogPosLine) {
  BackupInfo i;
  i.binlog = {"mysql-bin.000001", 158717941, "0-13306-4344"};
  std::string s = FormatInfo(i);
  EXPECT_NE(s.find("binlog_pos = filename 'mysql-bin.000001', position '158717941', GTID of the last change "
                   "'0-13306-4344'\n"),
            std::string::npos);
}

TEST(Uuid, Shape) {
  std::string u = NewUuid();
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[14], '4');
  EXPECT_NE(NewUuid(), u);
}

}  // namespace
}  // namespace xbak::backupdir
