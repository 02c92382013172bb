#include "xbak/backupdir/server.h"

#include <gtest/gtest.h>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::backupdir {
namespace {

ServerVersion Parse(std::string_view text, std::string_view comment = {}) {
  auto v = ParseServerVersion(text, "test", comment);
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : ServerVersion{};
}

TEST(ServerVersion, ParsesWhatServersReport) {
  ServerVersion v = Parse("10.11.19-MariaDB-0+deb12u1-log");
  EXPECT_EQ(v.flavor, Flavor::kMariaDB);
  EXPECT_EQ(v.Name(), "MariaDB 10.11.19");
  EXPECT_EQ(Parse("11.8.9-MariaDB-0+deb13u1 from Debian-log").Name(), "MariaDB 11.8.9");
  EXPECT_EQ(Parse("5.5.5-10.11.6-MariaDB").Name(), "MariaDB 10.11.6");  // the protocol's prefix
  EXPECT_EQ(Parse("9.7.4").Name(), "MySQL 9.7.4");
  EXPECT_EQ(Parse("8.0.36-28").Name(), "MySQL 8.0.36");
  EXPECT_EQ(Parse("10.11.2-log", "mariadb.org binary distribution").flavor, Flavor::kMariaDB);
}

TEST(ServerVersion, GarbageIsRefusedNamingTheOrigin) {
  for (std::string_view bad : {"", "MariaDB", "10.11", "10.x.3", "-MariaDB"}) {
    auto v = ParseServerVersion(bad, "B/xtrabackup_info: server_version");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("B/xtrabackup_info: server_version"), std::string::npos);
  }
}

TEST(ServerDescription, TestedUntestedAndUnreadable) {
  EXPECT_EQ(Describe(Parse("10.11.19-MariaDB")).support, Support::kTested);
  EXPECT_EQ(Describe(Parse("11.8.9-MariaDB")).support, Support::kTested);
  for (auto v : {"10.8.8-MariaDB", "11.4.5-MariaDB", "12.0.2-MariaDB", "13.0.1-MariaDB"})
    EXPECT_EQ(Describe(Parse(v)).support, Support::kUntested) << v;
  for (auto v : {"10.6.21-MariaDB", "10.5.23-MariaDB", "9.7.4", "8.0.36"})
    EXPECT_EQ(Describe(Parse(v)).support, Support::kUnreadable) << v;
  EXPECT_EQ(TestedSeries(), "MariaDB 10.11, MariaDB 11.8");
}

TEST(ServerDescription, MetadataNamesAsTheServersOwnTool) {
  EXPECT_EQ(Describe(Parse("10.11.19-MariaDB")).meta_scheme, MetaScheme::kXtrabackup);
  EXPECT_EQ(Describe(Parse("11.0.6-MariaDB")).meta_scheme, MetaScheme::kXtrabackup);
  EXPECT_EQ(Describe(Parse("11.1.2-MariaDB")).meta_scheme, MetaScheme::kMariadbBackup);
  EXPECT_EQ(Describe(Parse("11.8.9-MariaDB")).meta_scheme, MetaScheme::kMariadbBackup);
}

TEST(VersionPolicy, TestedPassesUntestedIsRefusedUnlessTold) {
  EXPECT_TRUE(CheckServerVersion(Parse("11.8.9-MariaDB"), false, "the server at S").ok());
  Status st = CheckServerVersion(Parse("12.0.2-MariaDB-log"), false, "the server at S");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_EQ(st.message(),
            "MariaDB 12.0.2 (the server at S) is refused: xbak has not been tested against it (tested: "
            "MariaDB 10.11, MariaDB 11.8). Nothing was written. --no-server-version-check goes on at "
            "your own risk");
  EXPECT_TRUE(CheckServerVersion(Parse("12.0.2-MariaDB-log"), true, "the server at S").ok());
}

TEST(VersionPolicy, UnreadableIsRefusedEvenWhenTold) {
  Status st = CheckServerVersion(Parse("10.6.21-MariaDB"), true, "the server at S");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "MariaDB 10.6.21 (the server at S) is not supported: its redo log format (before MariaDB "
            "10.8) is not one xbak reads; use mariabackup 10.6. Nothing was written");
  st = CheckServerVersion(Parse("9.7.4"), true, "the server at S");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("MySQL 9.7.4 (the server at S) is not supported: xbak does not read MySQL", 0),
            0u)
      << st.message();
}

TEST(VersionPolicy, ABackupsRecordedVersionUnderEitherName) {
  const testing::TempDir tmp;
  const std::string old_names = tmp / "old", new_names = tmp / "new", none = tmp / "none";
  ASSERT_TRUE(util::MakeDirs(old_names).ok() && util::MakeDirs(new_names).ok() && util::MakeDirs(none).ok());
  ASSERT_TRUE(
      util::WriteFileAtomic(old_names + "/xtrabackup_info", "server_version = 10.11.19-MariaDB-log\n").ok());
  ASSERT_TRUE(util::WriteFileAtomic(new_names + "/mariadb_backup_info",
                                    "tool_name = x\nserver_version = 12.3.1-MariaDB\n")
                  .ok());
  EXPECT_TRUE(CheckBackupServerVersion(old_names, false).ok());
  Status st = CheckBackupServerVersion(new_names, false);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("MariaDB 12.3.1 (the backup in " + new_names + ") is refused"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(CheckBackupServerVersion(new_names, true).ok());
  EXPECT_TRUE(CheckBackupServerVersion(none, false).ok());  // no version recorded: a warning
}

}  // namespace
}  // namespace xbak::backupdir
