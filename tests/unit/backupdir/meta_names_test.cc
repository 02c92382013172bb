#include "xbak/backupdir/meta_names.h"

#include <gtest/gtest.h>

#include "util/temp_dir.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"

namespace xbak::backupdir {
namespace {

// The names mariabackup 10.11 and mariadb-backup 11.8 write (checked with the
// strings of both binaries).
TEST(MetaNames, BothSchemes) {
  EXPECT_EQ(MetaName(Meta::kCheckpoints, MetaScheme::kXtrabackup), "xtrabackup_checkpoints");
  EXPECT_EQ(MetaName(Meta::kCheckpoints, MetaScheme::kMariadbBackup), "mariadb_backup_checkpoints");
  EXPECT_EQ(MetaName(Meta::kInfo, MetaScheme::kMariadbBackup), "mariadb_backup_info");
  EXPECT_EQ(MetaName(Meta::kBinlogInfo, MetaScheme::kMariadbBackup), "mariadb_backup_binlog_info");
  EXPECT_EQ(MetaName(Meta::kSlaveInfo, MetaScheme::kMariadbBackup), "mariadb_backup_slave_info");
  EXPECT_EQ(MetaName(Meta::kGaleraInfo, MetaScheme::kXtrabackup), "xtrabackup_galera_info");
  EXPECT_TRUE(IsMeta("mariadb_backup_checkpoints", Meta::kCheckpoints));
  EXPECT_TRUE(IsMeta("xtrabackup_checkpoints", Meta::kCheckpoints));
  EXPECT_FALSE(IsMeta("xtrabackup_checkpoints", Meta::kInfo));
  EXPECT_FALSE(IsMeta("db/xtrabackup_checkpoints", Meta::kCheckpoints));
  EXPECT_TRUE(IsToolFile("mariadb_backup_binlog_pos_innodb"));
  EXPECT_TRUE(IsToolFile("xtrabackup_tablespaces"));
  EXPECT_FALSE(IsToolFile("ibdata1"));
}

TEST(MetaNames, ADirectoryIsReadUnderTheNameItHas) {
  const testing::TempDir tmp;
  const std::string cp =
      "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 5\nlast_lsn = 9\nrecover_binlog_info = 0\n";
  ASSERT_TRUE(util::WriteFileAtomic(tmp / "mariadb_backup_checkpoints", cp).ok());
  EXPECT_EQ(SchemeOf(tmp.path()), MetaScheme::kMariadbBackup);
  EXPECT_EQ(MetaPath(tmp.path(), Meta::kCheckpoints), tmp / "mariadb_backup_checkpoints");
  // A file not there yet takes the directory's scheme.
  EXPECT_EQ(MetaPath(tmp.path(), Meta::kBinlogInfo), tmp / "mariadb_backup_binlog_info");
  auto c = ReadCheckpoints(tmp.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->last_lsn, 9u);
  auto base = IncrementalBaseLsn(tmp.path());
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(*base, 5u);

  const testing::TempDir old;
  EXPECT_EQ(SchemeOf(old.path()), MetaScheme::kXtrabackup);  // empty: mariabackup 10's
  auto missing = ReadCheckpoints(old.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(
      missing.status().message().find("no readable xtrabackup_checkpoints or mariadb_backup_checkpoints"),
      std::string::npos)
      << missing.status().message();
  // Without checkpoints (an interrupted incremental apply removed them), the
  // other files say which names the backup has.
  ASSERT_TRUE(util::WriteFileAtomic(old / "mariadb_backup_info", "x = y\n").ok());
  EXPECT_EQ(SchemeOf(old.path()), MetaScheme::kMariadbBackup);
  EXPECT_EQ(InfoServerVersion(old.path()), "");
  ASSERT_TRUE(util::WriteFileAtomic(old / "mariadb_backup_info", "server_version = 11.8.9-MariaDB\n").ok());
  EXPECT_EQ(InfoServerVersion(old.path()), "11.8.9-MariaDB");
}

TEST(MetaNames, AnEncryptedBackupsNameIsFoundByItsSuffix) {
  const testing::TempDir tmp;
  ASSERT_TRUE(util::WriteFileAtomic(tmp / "xtrabackup_checkpoints.xbenc", "x").ok());
  EXPECT_EQ(StoredMetaName(tmp.path(), Meta::kCheckpoints, ".xbenc"), "xtrabackup_checkpoints");
  EXPECT_EQ(StoredMetaName(tmp.path(), Meta::kCheckpoints), "");
  ASSERT_TRUE(util::WriteFileAtomic(tmp / "mariadb_backup_checkpoints.xbenc", "x").ok());
  EXPECT_EQ(StoredMetaName(tmp.path(), Meta::kCheckpoints, ".xbenc"), "mariadb_backup_checkpoints");
  EXPECT_EQ(StoredMetaName(tmp.path(), Meta::kInfo, ".xbenc"), "");
}

TEST(MetaNames, ExtraLsnDirKeepsOneScheme) {
  const testing::TempDir tmp;
  ASSERT_TRUE(WriteExtraLsnDir(tmp.path(), MetaScheme::kXtrabackup, "cp-old\n", "info-old\n").ok());
  ASSERT_TRUE(WriteExtraLsnDir(tmp.path(), MetaScheme::kMariadbBackup, "cp-new\n", "info-new\n").ok());
  EXPECT_FALSE(util::PathExists(tmp / "xtrabackup_checkpoints"));
  EXPECT_FALSE(util::PathExists(tmp / "xtrabackup_info"));
  EXPECT_EQ(*util::ReadSmallFile(tmp / "mariadb_backup_checkpoints"), "cp-new\n");
}

}  // namespace
}  // namespace xbak::backupdir
