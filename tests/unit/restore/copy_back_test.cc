// RunCopyBack on a small synthetic prepared backup: what it refuses before
// writing anything, what it restores, and the interrupted restore it resumes.
#include "xbak/restore/copy_back.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/meta_files.h"
#include "util/temp_dir.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"

namespace xbak::restore {
namespace {

using testing::TempDir;

class CopyBackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("backup/" + meta_files::kCheckpoints,
        backupdir::FormatCheckpoints({"log-applied", 0, 5000, 5000, false}));
    Put("backup/backup-my.cnf", "[mysqld]\ninnodb_page_size=16384\n");
    Put("backup/ibdata1", std::string(65536, 'i'));
    Put("backup/ib_logfile0", std::string(12288, 'l'));
    Put("backup/db/t.ibd", std::string(98304, 't'));
    Put("backup/db/t.frm", "frm");
    ASSERT_TRUE(util::MakeDirs(t_ / "backup/empty_db").ok());
  }
  void Put(const std::string& rel, const std::string& content) {
    ASSERT_TRUE(util::MakeDirs((t_ / rel).substr(0, (t_ / rel).rfind('/'))).ok());
    ASSERT_TRUE(util::WriteFileAtomic(t_ / rel, content).ok());
  }
  CopyBackOptions Options() {
    CopyBackOptions o;
    o.backup_dir = t_ / "backup";
    o.datadir = t_ / "data";
    o.parallel = 2;
    return o;
  }
  TempDir t_;
};

TEST_F(CopyBackTest, RestoresEveryFileAndLeavesNoMarker) {
  Status st = RunCopyBack(Options());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/db/t.ibd", 1 << 20), std::string(98304, 't'));
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/db/t.frm"), "frm");
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/ib_logfile0"), std::string(12288, 'l'));
  EXPECT_TRUE(util::IsDirectory(t_ / "data/empty_db"));  // a database without tables
  EXPECT_FALSE(util::PathExists(t_ / "data/xbak_copy_back_in_progress"));
  EXPECT_FALSE(util::PathExists(t_ / "data/db/t.ibd.xbtmp"));
  EXPECT_TRUE(util::PathExists(t_ / "backup/db/t.ibd"));  // a copy: the backup keeps its files
}

TEST_F(CopyBackTest, RefusesAnUnpreparedBackupAndAFullDatadirBeforeWriting) {
  Put("backup/" + meta_files::kCheckpoints,
      backupdir::FormatCheckpoints({"full-backuped", 0, 5000, 5000, false}));
  Status st = RunCopyBack(Options());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not prepared"), std::string::npos) << st.message();
  EXPECT_FALSE(util::PathExists(t_ / "data"));

  Put("backup/" + meta_files::kCheckpoints,
      backupdir::FormatCheckpoints({"log-applied", 0, 5000, 5000, false}));
  Put("data/someone.ibd", "theirs");
  st = RunCopyBack(Options());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is not empty"), std::string::npos) << st.message();
  EXPECT_FALSE(util::PathExists(t_ / "data/db"));
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/someone.ibd"), "theirs");

  // Forced into a non-empty datadir, an existing file of the backup's is
  // still never overwritten.
  Put("data/db/t.frm", "theirs too");
  CopyBackOptions o = Options();
  o.force_non_empty = true;
  st = RunCopyBack(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exists already"), std::string::npos) << st.message();
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/db/t.frm"), "theirs too");
}

// A copy-back killed midway leaves its marker and no redo log (the server
// refuses such a datadir); the same command resumes it over its own partial
// files, another backup's is refused.
TEST_F(CopyBackTest, AnInterruptedCopyBackIsResumedByTheSameCommandOnly) {
  Put("data/xbak_copy_back_in_progress", "copy-back of " + (t_ / "backup") + "\n");
  Put("data/db/t.ibd", "partial");
  CopyBackOptions other = Options();
  Put("other/" + meta_files::kCheckpoints,
      backupdir::FormatCheckpoints({"log-applied", 0, 5000, 5000, false}));
  other.backup_dir = t_ / "other";
  Status st = RunCopyBack(other);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("an interrupted restore is in"), std::string::npos) << st.message();

  st = RunCopyBack(Options());
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(*util::ReadSmallFile(t_ / "data/db/t.ibd", 1 << 20), std::string(98304, 't'));
  EXPECT_TRUE(util::PathExists(t_ / "data/ib_logfile0"));
  EXPECT_FALSE(util::PathExists(t_ / "data/xbak_copy_back_in_progress"));
}

}  // namespace
}  // namespace xbak::restore
