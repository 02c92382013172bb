// DdlWatch: what --no-lock takes for DDL during a backup. Table definition
// files changed, added or removed between Arm and Check, and file-per-table
// operations in the redo log at or after the armed LSN, fail the backup;
// earlier operations, undo tablespaces and rows written to data files do not.
#include "xbak/backup/ddl_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::backup {
namespace {

class DdlWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    layout_.datadir = dir_.path();
    layout_.aria_log_dir = dir_.path();
    ASSERT_TRUE(util::MakeDirs(dir_ / "db").ok());
    Write("db/db.opt", "default-character-set=utf8mb4\n");
    Write("db/t.frm", "frm v1");
    Write("db/t.ibd", std::string(16384, 'x'));
    Write("db/m.MYD", "rows");
  }
  void Write(const std::string& rel, const std::string& bytes) {
    std::ofstream(dir_ / rel, std::ios::binary | std::ios::trunc) << bytes;
  }
  Status Check() { return watch_.Check(layout_, filter_); }
  static innodb::FileOp Op(innodb::FileOp::Type t, const std::string& name) {
    innodb::FileOp op;
    op.type = t;
    op.name = name;
    op.new_name = "./db/t2.ibd";
    return op;
  }

  testing::TempDir dir_;
  backupdir::ServerLayout layout_;
  backupdir::TableFilter filter_;
  DdlWatch watch_;
};

TEST_F(DdlWatchTest, NothingChangedPassesAndRowsWrittenDoNotCount) {
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  Write("db/m.MYD", "more rows");  // data, not a definition
  watch_.OnFileOp(Op(innodb::FileOp::Type::kModify, "./db/t.ibd"), 2000);
  EXPECT_TRUE(Check().ok()) << Check().message();
}

TEST_F(DdlWatchTest, AChangedDefinitionFileFailsNamingIt) {
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Write("db/t.frm", "frm v2, a comment changed");
  Status st = Check();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("DDL ran during a --no-lock backup (db/t.frm was changed)"), std::string::npos)
      << st.message();
}

TEST_F(DdlWatchTest, AnAddedOrRemovedDefinitionFails) {
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  Write("db/new.frm", "frm");
  EXPECT_NE(Check().message().find("db/new.frm was created"), std::string::npos) << Check().message();
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  ASSERT_TRUE(std::filesystem::remove(dir_ / "db/new.frm"));
  EXPECT_NE(Check().message().find("db/new.frm was removed"), std::string::npos) << Check().message();
}

TEST_F(DdlWatchTest, TableFileOperationsFromTheArmedLsnOnFail) {
  watch_.OnFileOp(Op(innodb::FileOp::Type::kCreate, "./db/early.ibd"), 5000);  // before Arm: not counted
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  watch_.OnFileOp(Op(innodb::FileOp::Type::kDelete, "./db/old.ibd"), 999);  // read late, logged before
  watch_.OnFileOp(Op(innodb::FileOp::Type::kCreate, "./undo001"), 1500);    // the server's own
  EXPECT_TRUE(Check().ok()) << Check().message();
  watch_.OnFileOp(Op(innodb::FileOp::Type::kDelete, "./undo_db/t.ibd"),
                  1600);  // a table, in database undo_db
  EXPECT_NE(Check().message().find("./undo_db/t.ibd was dropped"), std::string::npos) << Check().message();
}

TEST_F(DdlWatchTest, AnOrphanOfACrashedAlterIsNoDdlButOneMadeDuringTheBackupIs) {
  Write("db/#sql-1f-2.frm", "left by an ALTER that crashed long ago");
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  EXPECT_TRUE(Check().ok()) << Check().message();
  Write("db/#sql-alter-1f-3.frm", "an ALTER begun during the backup");
  Status st = Check();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("db/#sql-alter-1f-3.frm was created, an ALTER TABLE's temporary file"),
            std::string::npos)
      << st.message();
}

TEST_F(DdlWatchTest, ATableOperationFromTheArmedLsnOnFailsNamingIt) {
  ASSERT_TRUE(watch_.Arm(1000, layout_, filter_).ok());
  watch_.OnFileOp(Op(innodb::FileOp::Type::kRename, "./db/t.ibd"), 1000);
  Status st = Check();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("./db/t.ibd was renamed to ./db/t2.ibd at LSN 1000"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace xbak::backup
