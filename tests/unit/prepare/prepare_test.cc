// RunPrepare on small synthetic backups: the DDL markers a backup leaves
// (.del, .ren, .new, as mariabackup writes them) are carried out, and the
// log then goes to the files as they are after the markers.
#include "xbak/prepare/prepare.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "testing/meta_files.h"
#include "testing/redo_test_util.h"
#include "util/temp_dir.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {

using testing::redo::kPs;
using testing::redo::kSpace;
using testing::redo::kStartLsn;
using testing::redo::LogBuilder;
using testing::redo::MakePage;

class PrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    dir_ = tmp_->path();
    ASSERT_FALSE(dir_.empty());
    ASSERT_TRUE(util::MakeDirs(dir_ + "/db").ok());
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/backup-my.cnf", "[mysqld]\ninnodb_page_size=4096\n").ok());
  }
  void TearDown() override { tmp_.reset(); }

  // A tablespace of 8 pages of space `id` (kSpace's page layout, its id patched).
  static std::string Tablespace(uint32_t id) {
    std::string ts;
    for (uint32_t no = 0; no < 8; no++) {
      auto p = MakePage(no, 15000);
      util::StoreBE32(p.data() + innodb::kFilPageSpaceId, id);
      if (no == 0) util::StoreBE32(p.data() + innodb::kFspSpaceId, id);
      innodb::StampPageChecksum(p.data(), testing::redo::Flags());
      ts.append(p.begin(), p.end());
    }
    return ts;
  }
  void Put(const std::string& rel, const std::string& content) {
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/" + rel, content).ok());
  }
  uint8_t ByteOfPage(const std::string& rel, uint32_t no, size_t off) {
    auto f = util::File::OpenRead(dir_ + "/" + rel);
    EXPECT_TRUE(f.ok()) << rel;
    if (!f.ok()) return 0;
    uint8_t b = 0;
    EXPECT_TRUE(f->PRead(&b, 1, uint64_t{no} * kPs + off).ok());
    return b;
  }
  // The backup: its log writes 0x42 at byte 100 of page 3 of kSpace.
  void MakeBackup() {
    LogBuilder b;
    b.Rec(0x30, 3, {100, 0x42});
    end_ = b.End();
    Put("ib_logfile0", b.File(end_));
    Put(meta_files::kCheckpoints, backupdir::FormatCheckpoints({"full-backuped", 0, end_, end_, false}));
  }
  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string dir_;
  uint64_t end_ = 0;
};

TEST_F(PrepareTest, DdlMarkersRunBeforeTheLogAndTheLogFindsTheirFiles) {
  // kSpace was rebuilt during the backup: the old copy is db/t.ibd (another
  // space id), the new one db/t.new, which the log must reach.
  Put("db/t.ibd", Tablespace(99));
  Put("db/t.new", Tablespace(kSpace));
  Put("db/gone.ibd", Tablespace(20));  // dropped during the backup
  Put("db/gone.del", "");
  Put("db/a.ibd", Tablespace(21));  // renamed during the backup
  Put("db/a.ren", "db/b");
  MakeBackup();
  PrepareOptions o;
  o.target_dir = dir_;
  o.progress_interval = std::chrono::milliseconds(0);
  Status st = RunPrepare(o);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const char* gone : {"db/t.new", "db/gone.ibd", "db/gone.del", "db/a.ibd", "db/a.ren"}) {
    EXPECT_FALSE(util::PathExists(dir_ + "/" + gone)) << gone;
  }
  EXPECT_TRUE(util::PathExists(dir_ + "/db/b.ibd"));
  EXPECT_EQ(ByteOfPage("db/t.ibd", 3, 100), 0x42);  // the log went to the installed .new
  auto cp = util::ReadSmallFile(dir_ + "/" + meta_files::kCheckpoints);
  ASSERT_TRUE(cp.ok());
  EXPECT_NE(cp->find("backup_type = log-applied"), std::string::npos) << *cp;

  // Prepared: a second run changes nothing.
  EXPECT_TRUE(RunPrepare(o).ok());
  EXPECT_EQ(ByteOfPage("db/t.ibd", 3, 100), 0x42);
}

TEST_F(PrepareTest, ABrokenLogIsRefusedBeforeAnyMarkerRuns) {
  Put("db/t.new", Tablespace(kSpace));
  Put("db/gone.ibd", Tablespace(20));
  Put("db/gone.del", "");
  MakeBackup();
  // The checkpoints promise more log than there is.
  Put(meta_files::kCheckpoints,
      backupdir::FormatCheckpoints({"full-backuped", 0, end_ + 1000, end_ + 1000, false}));
  PrepareOptions o;
  o.target_dir = dir_;
  o.progress_interval = std::chrono::milliseconds(0);
  Status st = RunPrepare(o);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(util::PathExists(dir_ + "/db/t.new"));
  EXPECT_TRUE(util::PathExists(dir_ + "/db/gone.ibd"));
  EXPECT_TRUE(util::PathExists(dir_ + "/db/gone.del"));
}

}  // namespace
}  // namespace xbak::prepare
