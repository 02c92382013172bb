// RunRestore on the synthetic chain (synthetic_chain.h), and the rules of
// where restored files go (restore_places.h) and of a chain (metadata.h).
#include "xbak/restore/restore.h"

#include <gtest/gtest.h>

#include "testing/meta_files.h"
#include "testing/synthetic_chain.h"
#include "xbak/restore/restore_places.h"
#include "xbak/stream/xbstream.h"

namespace xbak::restore {
namespace {

using testing::kPs;

std::string Md5Tree(const std::string& dir) {
  // Names, sizes and bytes of every file: enough to see any change.
  std::string out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto bytes = util::ReadSmallFile(e.path().string(), 64 << 20);
    out += e.path().string() + ":" + (bytes.ok() ? *bytes : "?") + "\n";
  }
  return out;
}

class RestoreTest : public testing::SyntheticChainTest {
 protected:
  void SetUp() override {
    SyntheticChainTest::SetUp();
    // FULL is prepared: its ib_logfile0 is the prepared log at to_lsn.
    const auto log = innodb::MakePreparedLogFile(13000, "Backup test");
    ASSERT_TRUE(util::WriteFileAtomic(full_ + "/ib_logfile0", std::string(log.begin(), log.end())).ok());
    ASSERT_TRUE(
        util::WriteFileAtomic(full_ + "/xtrabackup_info", "server_version = 10.11.19-MariaDB\n").ok());
    WriteDelta("t", 5, 6, 0x22);  // grows t from 4 to 6 pages
    WriteDelta("new", 9, 3, 0x33);
    data_ = root_ + "/data";
  }
  RestoreOptions Options() {
    RestoreOptions o;
    o.full_dir = full_;
    o.incremental_dirs = {inc_};
    o.dirs.datadir = data_;
    o.parallel = 2;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  std::string data_;
};

TEST_F(RestoreTest, ChainGoesIntoTheDatadirAndTheBackupsStayAsTheyWere) {
  const std::string before = Md5Tree(full_) + Md5Tree(inc_);
  Status s = RunRestore(Options());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(before, Md5Tree(full_) + Md5Tree(inc_));
  ExpectTable("t", 5, 6, 0x22, data_);
  ExpectTable("new", 9, 3, 0x33, data_);
  for (const char* gone : {meta_files::kCheckpoints.c_str(), backupdir::kBackupCnfFile, "xtrabackup_info",
                           kRestoreMarkerFile, "ib_logfile0.xbak-restore", "xbak_incremental_in_progress"}) {
    EXPECT_FALSE(util::PathExists(data_ + "/" + gone)) << gone;
  }
  // The prepared log at the incremental's point, not the placeholder.
  auto log = util::ReadSmallFile(data_ + "/ib_logfile0", 1 << 20);
  ASSERT_TRUE(log.ok());
  const auto want = innodb::MakePreparedLogFile(20000, "Backup 10.11.19");
  EXPECT_EQ(*log, std::string(want.begin(), want.end()));
  // A finished restore is a datadir like any other: never written into again.
  EXPECT_FALSE(RunRestore(Options()).ok());
}

TEST_F(RestoreTest, AKillWhileTheFirstJournalWasWrittenDoesNotBlockTheRerun) {
  ASSERT_TRUE(util::MakeDirs(data_).ok());
  ASSERT_TRUE(util::WriteFileAtomic(data_ + "/" + kRestoreMarkerFile + ".tmp.x", "").ok());
  std::filesystem::rename(data_ + "/" + kRestoreMarkerFile + ".tmp.x",
                          data_ + "/" + kRestoreMarkerFile + ".tmp");
  Status s = RunRestore(Options());
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectTable("t", 5, 6, 0x22, data_);
}

TEST_F(RestoreTest, BrokenChainsAreRefusedBeforeAnythingIsWritten) {
  // Given twice.
  RestoreOptions o = Options();
  o.incremental_dirs = {inc_, inc_};
  Status s = RunRestore(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("given twice"), std::string::npos) << s.message();
  // A gap: the base ends before the incremental starts.
  ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/" + meta_files::kCheckpoints,
                                    backupdir::FormatCheckpoints({"incremental", 13500, 20000, 20016, false}))
                  .ok());
  s = RunRestore(Options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gap in the chain"), std::string::npos) << s.message();
  // The incremental as the full backup.
  o = Options();
  o.full_dir = inc_;
  o.incremental_dirs.clear();
  s = RunRestore(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is an incremental backup"), std::string::npos) << s.message();
  EXPECT_FALSE(util::PathExists(data_));
}

TEST_F(RestoreTest, NonEmptyDatadirAndAnotherChainsJournalAreRefused) {
  ASSERT_TRUE(util::MakeDirs(data_).ok());
  ASSERT_TRUE(util::WriteFileAtomic(data_ + "/precious", "x").ok());
  Status s = RunRestore(Options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is not empty"), std::string::npos) << s.message();
  std::filesystem::remove(data_ + "/precious");
  // An interrupted restore of the full backup alone: this chain may not take it over.
  RestoreOptions alone = Options();
  alone.incremental_dirs.clear();
  std::string id = "xbak restore\nchain: " + std::filesystem::canonical(full_).string() + " 0 13000 13010\n";
  ASSERT_TRUE(util::WriteFileAtomic(data_ + "/" + kRestoreMarkerFile, id + "done: copy\n").ok());
  s = RunRestore(Options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("another chain"), std::string::npos) << s.message();
}

TEST_F(RestoreTest, AFailedRestoreIsMarkedUnfinishedAndTheSameCommandFinishesIt) {
  Status s = RunRestore(Options());
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string clean = Md5Tree(data_);
  std::filesystem::remove_all(data_);
  // A damaged delta page: the copy of FULL went in, the incremental's step fails.
  const std::string path = inc_ + "/db/t.ibd.delta";
  auto good = util::ReadSmallFile(path, 64 << 20);
  ASSERT_TRUE(good.ok());
  std::string bad = *good;
  bad[kPs * 2 + 100] ^= 1;
  ASSERT_TRUE(util::WriteFileAtomic(path, bad).ok());
  s = RunRestore(Options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("t.ibd.delta"), std::string::npos) << s.message();
  auto journal = util::ReadSmallFile(data_ + "/" + kRestoreMarkerFile);
  ASSERT_TRUE(journal.ok());
  EXPECT_NE(journal->find("done: copy"), std::string::npos) << *journal;
  auto placeholder = util::ReadSmallFile(data_ + "/ib_logfile0", 1 << 20);
  ASSERT_TRUE(placeholder.ok());
  EXPECT_EQ(placeholder->rfind("xbak --restore is not finished", 0), 0u);
  // Repaired (say, downloaded again), the same command resumes and gives the same datadir.
  ASSERT_TRUE(util::WriteFileAtomic(path, *good).ok());
  s = RunRestore(Options());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(clean, Md5Tree(data_));
}

// DIR as one xbstream file, as xbak --backup --stream would send it.
void PackDir(const std::string& dir, const std::string& out) {
  auto f = util::File::CreateNew(out);
  ASSERT_TRUE(f.ok()) << f.status().message();
  stream::XbstreamWriter w(f->fd());
  std::string last;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), dir).string();
    if (rel == meta_files::kCheckpoints) {
      last = rel;  // at the end, as a backup writes it
      continue;
    }
    auto bytes = util::ReadSmallFile(e.path().string(), 64 << 20);
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(w.WritePayload(rel, 0, bytes->data(), bytes->size()).ok());
    ASSERT_TRUE(w.WriteEof(rel).ok());
  }
  auto cp = util::ReadSmallFile(util::JoinPath(dir, last));
  ASSERT_TRUE(cp.ok());
  ASSERT_TRUE(w.WritePayload(last, 0, cp->data(), cp->size()).ok());
  ASSERT_TRUE(w.WriteEof(last).ok());
  ASSERT_TRUE(f->Close().ok());
}

TEST_F(RestoreTest, FromStreamsTheSameFilesAsFromDirectoriesAndAFailedRunStartsOver) {
  Status s = RunRestore(Options());
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string from_dirs = Md5Tree(data_);
  std::filesystem::remove_all(data_);
  PackDir(full_, root_ + "/full.xb");
  PackDir(inc_, root_ + "/inc.xb");
  RestoreOptions o = Options();
  o.full_dir.clear();
  o.incremental_dirs.clear();
  // The incremental's stream first: refused when it is whole, the datadir left marked.
  o.streams = {root_ + "/inc.xb", root_ + "/full.xb"};
  s = RunRestore(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is an incremental backup"), std::string::npos) << s.message();
  EXPECT_TRUE(util::PathExists(data_ + "/" + kRestoreMarkerFile));
  // In order: started over, the same datadir as from the directories, no staging left.
  o.streams = {root_ + "/full.xb", root_ + "/inc.xb"};
  s = RunRestore(o);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(from_dirs, Md5Tree(data_));
  EXPECT_FALSE(util::PathExists(data_ + "/" + kStagingDir));
}

TEST(RestorePlaces, EachFileGoesWhereTheServerLooksForIt) {
  RestoreDirs d = RestoreDirs{"/d", "/log", "", "/undo", false, "/aria", "", {}}.Resolved();
  std::map<std::string, std::string> remote = {{"db/r.ibd", "/remote/db/r.ibd"}};
  EXPECT_EQ(RestoreDestination("ib_logfile0", d, remote), "/log/ib_logfile0");
  EXPECT_EQ(RestoreDestination("ibdata1", d, remote), "/d/ibdata1");  // data home defaults to the datadir
  EXPECT_EQ(RestoreDestination("undo001", d, remote), "/undo/undo001");
  EXPECT_EQ(RestoreDestination("db/t.ibd", d, remote), "/d/db/t.ibd");
  EXPECT_EQ(RestoreDestination("db/r.ibd", d, remote), "/remote/db/r.ibd");
  EXPECT_EQ(RestoreDestination("db/r.isl", d, remote), "/d/db/r.isl");
  for (const char* meta : {"xtrabackup_checkpoints", "backup-my.cnf", "xtrabackup_info", "ibdata1.delta"}) {
    EXPECT_EQ(RestoreDestination(meta, d, remote), "") << meta;
  }
  EXPECT_EQ(RestoreDestination("db/t.ibd.delta", d, remote), "");
  EXPECT_EQ(RestoreDestination("aria_log_control", d, remote), "/aria/aria_log_control");
  EXPECT_EQ(RestoreDestination("aria_log.00000001", d, remote), "/aria/aria_log.00000001");
  EXPECT_EQ(RestoreDestination("db/aria_log.frm", d, remote), "/d/db/aria_log.frm");
  // A relative directory is the datadir's, as the server resolves it.
  RestoreDirs rel =
      RestoreDirs{"/d", "./", "logs", "./undo", false, "", "/abs/sys1:6M;sys2:1M:autoextend", {}}.Resolved();
  EXPECT_EQ(rel.log_dir, "/d");
  EXPECT_EQ(rel.data_home_dir, "/d/logs");
  EXPECT_EQ(rel.undo_dir, "/d/undo");
  EXPECT_EQ(rel.aria_log_dir, "/d");
  // innodb_data_file_path given for the restore: each system file where it names.
  EXPECT_EQ(RestoreDestination("sys1", rel, remote), "/abs/sys1");
  EXPECT_EQ(RestoreDestination("sys2", rel, remote), "/d/logs/sys2");
  d.remote_to_datadir = true;
  EXPECT_EQ(RestoreDestination("db/r.ibd", d, remote), "/d/db/r.ibd");
  EXPECT_EQ(RestoreDestination("db/r.isl", d, remote), "");
}

TEST(ChainLink, SaysWhichWayTheChainIsBroken) {
  backupdir::Checkpoints full{"full-backuped", 0, 100, 120, false};
  EXPECT_TRUE(backupdir::CheckChainLink(full, "F", {"incremental", 100, 200, 210, false}, "I").ok());
  Status gap = backupdir::CheckChainLink(full, "F", {"incremental", 150, 200, 210, false}, "I");
  EXPECT_NE(gap.message().find("gap in the chain: F ends at LSN 100 but I starts at LSN 150"),
            std::string::npos);
  Status order = backupdir::CheckChainLink(full, "F", {"incremental", 50, 200, 210, false}, "I");
  EXPECT_NE(order.message().find("wrong order"), std::string::npos);
}

}  // namespace
}  // namespace xbak::restore
