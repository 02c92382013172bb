// RunBackup against a private mariadbd: a full backup into a directory and an
// incremental of it, with their metadata, and the refusals that come before
// anything is written. (Backups under load, streams, FIFOs and every layout:
// tests/integration.)
#include "xbak/backup/backup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>

#include "testing/meta_files.h"
#include "testing/server_fixture.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"

namespace xbak::backup {
namespace {

namespace fs = std::filesystem;

std::string ListTree(const std::string& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out += e.path().string().substr(dir.size() + 1) + " ";
  return out;
}

class BackupTest : public xbak::testing::ServerTest {
 protected:
  BackupOptions Options(const std::string& target) const {
    BackupOptions o;
    o.conn = ServerTest::Options();
    o.target_dir = target;
    o.parallel = 2;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  static backupdir::Checkpoints CheckpointsOf(const std::string& dir) {
    const std::string path = util::JoinPath(dir, meta_files::kCheckpoints);
    auto text = util::ReadSmallFile(path);
    EXPECT_TRUE(text.ok()) << text.status().message();
    if (!text.ok()) return {};
    auto cp = backupdir::ParseCheckpoints(*text, path);
    EXPECT_TRUE(cp.ok()) << cp.status().message();
    return cp.ok() ? *cp : backupdir::Checkpoints{};
  }
  void Sql(const std::string& sql) {
    std::string out;
    ASSERT_EQ(server_->Sql(sql, &out), 0) << sql << ": " << out;
  }
};

TEST_F(BackupTest, AFullBackupHoldsTheTablesAndSaysWhereItEnds) {
  Sql("CREATE DATABASE shop; USE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, v VARCHAR(100)) "
      "ENGINE=InnoDB; "
      "INSERT INTO shop.orders SELECT seq, REPEAT('x', 90) FROM seq_1_to_2000; "
      "CREATE TABLE shop.notes (id INT PRIMARY KEY) ENGINE=Aria");
  const std::string target = server_->Scratch("full");
  Status st = RunBackup(Options(target));
  ASSERT_TRUE(st.ok()) << st.message();

  const backupdir::Checkpoints cp = CheckpointsOf(target);
  EXPECT_EQ(cp.backup_type, "full-backuped");
  EXPECT_EQ(cp.from_lsn, 0u);
  EXPECT_GT(cp.to_lsn, 0u);
  EXPECT_GE(cp.last_lsn, cp.to_lsn);
  for (const char* f : {"ibdata1", "ib_logfile0", "shop/orders.ibd", "shop/orders.frm", "shop/notes.MAI",
                        "shop/notes.MAD", "mysql/global_priv.MAI", "backup-my.cnf", "xtrabackup_info"}) {
    EXPECT_TRUE(fs::exists(util::JoinPath(target, f))) << f << " missing; " << ListTree(target);
  }
  // No file is left half-written under its temporary name.
  for (const auto& e : fs::recursive_directory_iterator(target)) {
    EXPECT_FALSE(e.path().string().ends_with(".xbpartial")) << e.path();
  }
  auto info = util::ReadSmallFile(util::JoinPath(target, meta_files::kInfo));
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->find("innodb_to_lsn = " + std::to_string(cp.to_lsn)), std::string::npos) << *info;
}

// Waits until the server's checkpoint has caught up with its log: every page
// written so far is then on disk, below the next backup's to_lsn.
void WaitForCheckpoint(mysql::Connection& c) {
  ASSERT_TRUE(c.Execute("SET GLOBAL innodb_max_dirty_pages_pct = 0").ok());
  for (int i = 0; i < 600; i++) {
    auto cp = c.GlobalStatus("INNODB_LSN_LAST_CHECKPOINT");
    auto cur = c.GlobalStatus("INNODB_LSN_CURRENT");
    ASSERT_TRUE(cp.ok() && cur.ok() && cp->has_value() && cur->has_value());
    // A checkpoint leaves its own FILE_CHECKPOINT record (a few bytes) after it.
    if (std::stoull(**cur) - std::stoull(**cp) < 64) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL() << "the server's checkpoint did not catch up with its log within 60 s";
}

TEST_F(BackupTest, AnIncrementalTakesThePagesChangedSinceItsBase) {
  Sql("CREATE DATABASE inc; USE inc; CREATE TABLE inc.hot (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; "
      "CREATE TABLE inc.cold (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; "
      "INSERT INTO inc.hot SELECT seq, 0 FROM seq_1_to_20000; INSERT INTO inc.cold SELECT seq, 0 FROM "
      "seq_1_to_20000");
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  WaitForCheckpoint(*c);
  const std::string base = server_->Scratch("base"), inc = server_->Scratch("inc");
  ASSERT_TRUE(RunBackup(Options(base)).ok());
  const uint64_t base_lsn = CheckpointsOf(base).to_lsn;
  Sql("UPDATE inc.hot SET v = 1 WHERE id = 15000");
  WaitForCheckpoint(*c);

  BackupOptions o = Options(inc);
  o.incremental = true;
  o.incremental_lsn = base_lsn;
  Status st = RunBackup(o);
  ASSERT_TRUE(st.ok()) << st.message();
  const backupdir::Checkpoints cp = CheckpointsOf(inc);
  EXPECT_EQ(cp.backup_type, "incremental");
  EXPECT_EQ(cp.from_lsn, base_lsn);
  EXPECT_GT(cp.to_lsn, base_lsn);
  for (const char* t : {"inc/hot", "inc/cold"}) {
    const std::string rel = std::string(t) + ".ibd";
    ASSERT_TRUE(fs::exists(util::JoinPath(inc, rel + ".delta"))) << rel << ": " << ListTree(inc);
    EXPECT_TRUE(fs::exists(util::JoinPath(inc, rel + ".meta"))) << rel;
    EXPECT_FALSE(fs::exists(util::JoinPath(inc, rel))) << rel;
  }
  // A delta is a header page then the changed pages: the updated row's leaf
  // (and what the server touched with it) for hot, none for cold; either far
  // below the table's size.
  const auto page = 16384u;
  const auto hot = fs::file_size(util::JoinPath(inc, "inc/hot.ibd.delta"));
  const auto cold = fs::file_size(util::JoinPath(inc, "inc/cold.ibd.delta"));
  const auto table = fs::file_size(util::JoinPath(base, "inc/hot.ibd"));
  EXPECT_GE(hot, 2 * page);
  EXPECT_LE(hot, 6 * page) << "of a " << table << "-byte table";
  EXPECT_LE(cold, page);
}

TEST_F(BackupTest, ANonEmptyTargetIsRefusedAndLeftAsItWas) {
  const std::string target = server_->Scratch("busy");
  ASSERT_TRUE(util::MakeDirs(target).ok());
  ASSERT_TRUE(util::WriteFileAtomic(util::JoinPath(target, "keep.txt"), "mine").ok());
  Status st = RunBackup(Options(target));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("target directory " + target + " is not empty"), std::string::npos)
      << st.message();
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(target)) entries++;
  EXPECT_EQ(entries, 1u);
  EXPECT_EQ(*util::ReadSmallFile(util::JoinPath(target, "keep.txt")), "mine");
}

TEST_F(BackupTest, AUserWithoutThePrivilegesIsRefusedBeforeAnythingIsCopied) {
  const std::string target = server_->Scratch("weak");
  BackupOptions o = Options(target);
  o.conn = User("xbak_weak_backup", "PROCESS");
  Status st = RunBackup(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing required privilege RELOAD"), std::string::npos) << st.message();
  EXPECT_FALSE(fs::exists(util::JoinPath(target, meta_files::kCheckpoints)));
  // The target exists, empty, as mariabackup leaves it (scripts remove it).
  EXPECT_TRUE(!fs::exists(target) || fs::is_empty(target)) << "something was written into " << target;
  EXPECT_NE(st.message().find(target + " was left empty"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace xbak::backup
