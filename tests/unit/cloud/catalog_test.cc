// xbcloud list and expire over the posix driver: backups found by walking
// the tree, chains linked by LSN, the retention policy, cuts and leftovers.
#include "xbak/cloud/catalog.h"

#include "cloud/cloud_test_util.h"
#include "xbak/cloud/expire.h"

namespace xbak::cloud {
namespace {

class CatalogTest : public CloudTest {
 protected:
  // A backup's stream: the sample files and its checkpoints and info.
  static std::string BackupStream(bool full, uint64_t from, uint64_t to) {
    const std::string cp = std::string("backup_type = ") + (full ? "full-backuped" : "incremental") +
                           "\nfrom_lsn = " + std::to_string(from) + "\nto_lsn = " + std::to_string(to) +
                           "\nlast_lsn = " + std::to_string(to) + "\n";
    const std::string info = "uuid = x\nstart_time = 2026-11-26 01:00:00\nend_time = 2026-11-26 01:05:00\n";
    return SampleStream() + PChunk("xtrabackup_info", info, 0) + EChunk("xtrabackup_info") +
           PChunk("xtrabackup_checkpoints", cp, 0) + EChunk("xtrabackup_checkpoints");
  }
  // Puts NAME as if its put started at `day` (days from 0).
  void PutAt(const std::string& name, int day, bool full, uint64_t from, uint64_t to) {
    auto fd = MemFd(BackupStream(full, from, to));
    auto o = PutOpts(name);
    o.started_unix = kDay0 + day * 86400;
    ASSERT_TRUE(CloudPut(loop_, *store_, {fd.get()}, {"s"}, o).ok()) << name;
  }
  Catalog Read(const std::string& prefix = "") {
    auto c = ReadCatalog(loop_, *store_, {prefix, 4});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? *c : Catalog();
  }
  const BackupRecord* Find(const Catalog& c, const std::string& name) {
    for (const auto& b : c.backups) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }
  // Two chains and a half: f1 <- i1 <- i2, f2 <- i3, f3.
  void ThreeChains(const std::string& p = "") {
    PutAt(p + "f1", 0, true, 0, 100);
    PutAt(p + "i1", 1, false, 100, 200);
    PutAt(p + "i2", 2, false, 200, 300);
    PutAt(p + "f2", 3, true, 0, 400);
    PutAt(p + "i3", 4, false, 400, 500);
    PutAt(p + "f3", 5, true, 0, 600);
  }
  std::vector<std::string> Names(const std::vector<ExpirePlan::Item>& items) {
    std::vector<std::string> out;
    for (const auto& i : items) out.push_back(i.name);
    return out;
  }
  Result<ExpirePlan> Expire(int retain_full, bool dry_run = false, int retain_days = -1, int64_t now = 0) {
    ExpireOptions o;
    o.retain_full = retain_full;
    o.retain_days = retain_days;
    o.dry_run = dry_run;
    o.now = now;
    ExpirePlan plan;
    Status s = CloudExpire(loop_, *store_, o, [&](const ExpirePlan& p) { plan = p; });
    if (!s.ok()) return s;
    return plan;
  }
  // Objects left under a directory of the store (the posix driver leaves
  // empty directories behind).
  size_t ObjectsUnder(const std::string& dir) {
    size_t n = 0;
    if (!util::PathExists(Path(dir))) return 0;
    for (auto& e : std::filesystem::recursive_directory_iterator(Path(dir))) n += e.is_regular_file() ? 1 : 0;
    return n;
  }
  static constexpr int64_t kDay0 = 1795000000;
};

TEST_F(CatalogTest, FindsBackupsAndLinksChains) {
  ThreeChains("host1/");
  PutAt("host2/only", 0, true, 0, 50);
  // A put under way, a deletion cut short, an object outside any backup.
  ASSERT_TRUE(util::MakeDirs(Path("host1/running")).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("host1/running/xbcloud.started"), "started 1\n").ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("host1/running/ibdata1.00000000000000000000"), "x").ok());
  ASSERT_TRUE(util::MakeDirs(Path("host1/gone")).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("host1/gone/xbcloud.manifest"), TombstoneText(1)).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("host1/README"), "not a backup").ok());

  Catalog c = Read();
  EXPECT_EQ(c.backups.size(), 9u);
  EXPECT_EQ(c.foreign_objects, 1u);
  const BackupRecord* i2 = Find(c, "host1/i2");
  ASSERT_NE(i2, nullptr);
  EXPECT_EQ(i2->state, BackupState::kComplete);
  EXPECT_EQ(i2->manifest_version, 3);
  EXPECT_TRUE(i2->incremental());
  EXPECT_EQ(i2->base, "host1/i1");
  EXPECT_EQ(i2->checkpoints->from_lsn, 200u);
  EXPECT_EQ(i2->start_time, "2026-11-26 01:00:00");
  EXPECT_EQ(i2->summary.started, kDay0 + 2 * 86400);
  EXPECT_GT(i2->summary.stored_bytes, 300u << 10);
  EXPECT_EQ(Find(c, "host1/i3")->base, "host1/f2");
  EXPECT_TRUE(Find(c, "host1/f1")->full());
  EXPECT_EQ(Find(c, "host1/running")->state, BackupState::kIncomplete);
  EXPECT_EQ(Find(c, "host1/gone")->state, BackupState::kDeleting);
  EXPECT_EQ(ChainOf(c.backups, "host1/f1"), (std::vector<std::string>{"host1/f1", "host1/i1", "host1/i2"}));

  // Under a prefix: that host only, and a request per level and manifest.
  Catalog h2 = Read("host2");
  ASSERT_EQ(h2.backups.size(), 1u);
  EXPECT_EQ(h2.backups[0].name, "host2/only");
  EXPECT_LE(h2.requests, 3u);
}

// An idle server: its checkpoint LSN does not move, so every backup ends where
// the next starts, and two puts may start in the same second. Each incremental
// still gets the backup just before it, and no two are each other's base.
TEST_F(CatalogTest, BackupsOfAnIdleServerInOneSecondMakeOneChainWithoutACycle) {
  PutAt("h/full-b", 0, true, 0, 100);
  PutAt("h/full-c", 1, true, 0, 100);
  PutAt("h/inc-c-1", 2, false, 100, 100);
  PutAt("h/inc-c-2", 2, false, 100, 100);  // the same second as inc-c-1
  Catalog c = Read();
  ASSERT_EQ(c.backups.size(), 4u);
  EXPECT_EQ(Find(c, "h/inc-c-1")->base, "h/full-c");
  EXPECT_EQ(Find(c, "h/inc-c-2")->base, "h/inc-c-1");
  EXPECT_EQ(ChainOf(c.backups, "h/full-c"), (std::vector<std::string>{"h/full-c", "h/inc-c-1", "h/inc-c-2"}));
  EXPECT_EQ(ChainOf(c.backups, "h/full-b"), (std::vector<std::string>{"h/full-b"}));
}

TEST_F(CatalogTest, ExpireDeletesWholeChainsOldestFirst) {
  ThreeChains();
  auto dry = Expire(2, true);
  ASSERT_TRUE(dry.ok()) << dry.status().message();
  EXPECT_EQ(Names(dry->remove), (std::vector<std::string>{"i2", "i1", "f1"}));
  EXPECT_EQ(Names(dry->keep), (std::vector<std::string>{"f2", "i3", "f3"}));
  EXPECT_EQ(Read().backups.size(), 6u);  // the dry run deleted nothing

  auto plan = Expire(2);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Catalog c = Read();
  EXPECT_EQ(c.backups.size(), 3u);
  EXPECT_EQ(ObjectsUnder("f1"), 0u);
  EXPECT_EQ(ObjectsUnder("i2"), 0u);
  EXPECT_EQ(Find(c, "i3")->base, "f2");
  auto again = Expire(2);  // nothing more to do
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->remove.empty());
}

TEST_F(CatalogTest, RetainDaysKeepsRecentChains) {
  ThreeChains();
  const int64_t now = kDay0 + 10 * 86400;
  auto plan = Expire(1, true, 7, now);  // i3 finished on day 4, 6 days before now; i2 on day 2
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Names(plan->remove), (std::vector<std::string>{"i2", "i1", "f1"}));
  plan = Expire(1, true, 9, now);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->remove.empty());
  plan = Expire(1, true, 5, now);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Names(plan->remove), (std::vector<std::string>{"i2", "i1", "f1", "i3", "f2"}));
}

TEST_F(CatalogTest, ExpireLeavesAloneWhatItCannotPlace) {
  ThreeChains();
  PutAt("orphan", 6, false, 12345, 13000);  // no backup ends at 12345
  ASSERT_TRUE(util::MakeDirs(Path("running")).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("running/xbcloud.started"), "started 1\n").ok());
  auto plan = Expire(1);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Names(plan->remove), (std::vector<std::string>{"i2", "i1", "f1", "i3", "f2"}));
  Catalog c = Read();
  EXPECT_TRUE(Find(c, "orphan")->base_missing);
  EXPECT_NE(Find(c, "running"), nullptr);
  EXPECT_NE(Find(c, "f3"), nullptr);
  EXPECT_EQ(c.backups.size(), 3u);
  EXPECT_EQ(Expire(0).status().code(), ErrorCode::kInvalidArgument);
}

// A deletion cut short (here: after the tombstone and some objects) is
// never shown complete, and the next expire finishes it.
TEST_F(CatalogTest, ADeletionCutShortIsFinished) {
  ThreeChains();
  ASSERT_TRUE(util::WriteFileAtomic(Path("i2/xbcloud.manifest"), TombstoneText(1)).ok());
  ASSERT_TRUE(std::filesystem::remove(Path("i2/db/big.ibd.00000000000000000000")));
  Catalog c = Read();
  EXPECT_EQ(Find(c, "i2")->state, BackupState::kDeleting);
  auto plan = Expire(3);  // every full kept: only the cut deletion goes
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Names(plan->remove), (std::vector<std::string>{"i2"}));
  EXPECT_EQ(ObjectsUnder("i2"), 0u);
  EXPECT_EQ(Read().backups.size(), 5u);
}

TEST_F(CatalogTest, AManifestEditedByHandIsReported) {
  ThreeChains();
  std::string m = *util::ReadSmallFile(Path("f3/xbcloud.manifest"));
  m.replace(m.find("started "), 8, "begun   ");
  ASSERT_TRUE(util::WriteFileAtomic(Path("f3/xbcloud.manifest"), m).ok());
  Catalog c = Read();
  const BackupRecord* f3 = Find(c, "f3");
  ASSERT_NE(f3, nullptr);
  EXPECT_NE(f3->problem.find("f3/xbcloud.manifest: manifest line 2"), std::string::npos) << f3->problem;
  auto plan = Expire(1, true);
  ASSERT_TRUE(plan.ok());
  // f3's chain is unknown now, and its start too: it might depend on any
  // backup, so nothing of its group is expired, and the plan says why.
  EXPECT_TRUE(plan->remove.empty());
  bool said = false;
  for (const auto& k : plan->keep)
    said = said || k.why.find("f3, whose chain is unknown") != std::string::npos;
  EXPECT_TRUE(said);
}

// Encrypted checkpoints (not in the summary): such a backup may depend on
// what started before it, not on what started after.
TEST_F(CatalogTest, AnUnknownChainKeepsWhatItMayDependOn) {
  ThreeChains();
  {
    auto fd = MemFd(SampleStream());  // no xtrabackup_checkpoints in the clear
    auto o = PutOpts("enc");
    o.started_unix = kDay0 + 3 * 86400 + 3600;  // after f2, before i3
    ASSERT_TRUE(CloudPut(loop_, *store_, {fd.get()}, {"s"}, o).ok());
  }
  auto plan = Expire(1, true);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->remove.empty());  // f1's and f2's chains started before enc
  // Groups: another host's backups neither link to these nor count.
  PutAt("other/f1", 0, true, 0, 100);
  PutAt("other/f2", 1, true, 0, 100);
  PutAt("other/i1", 2, false, 100, 150);
  Catalog c = Read();
  EXPECT_EQ(Find(c, "other/i1")->base, "other/f2");
  plan = Expire(1, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Names(plan->remove), (std::vector<std::string>{"other/f1"}));
}

// A backup under S3 Object Lock: expire keeps its whole chain and says why,
// delete refuses it before writing anything.
TEST_F(CatalogTest, LockedBackupsAreSkipped) {
  PutAt("f1", 0, true, 0, 100);
  {
    auto fd = MemFd(BackupStream(false, 100, 200));
    auto o = PutOpts("i1");
    o.started_unix = kDay0 + 86400;
    o.lock_mode = "GOVERNANCE";
    o.lock_until = ::time(nullptr) + 86400;
    ASSERT_TRUE(CloudPut(loop_, *store_, {fd.get()}, {"s"}, o).ok());
  }
  PutAt("f2", 2, true, 0, 300);
  auto plan = Expire(1);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->remove.empty());
  ASSERT_EQ(plan->keep.size(), 3u);
  EXPECT_NE(plan->keep[0].why.find("under S3 Object Lock (i1 until"), std::string::npos) << plan->keep[0].why;
  Status s = CloudDelete(loop_, *store_, "i1");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("under S3 Object Lock (GOVERNANCE)"), std::string::npos) << s.message();
  EXPECT_EQ(Read().backups.size(), 3u);
  EXPECT_TRUE(Find(Read(), "i1")->locked(::time(nullptr)));
}

// A manifest the store will not hand over (SSE-C without its key, an
// archived class) makes that one backup unreadable, not the listing fail.
TEST_F(CatalogTest, AnUnreadableManifestIsOneBackupsProblem) {
  struct Refusing final : ForwardingStore {
    using ForwardingStore::ForwardingStore;
    void GetFirst(const std::string& key, uint64_t max_bytes,
                  std::function<void(Result<std::string>)> done) override {
      if (key != "f2/xbcloud.manifest") return ForwardingStore::GetFirst(key, max_bytes, std::move(done));
      inner_.GetFirst(key, max_bytes, [done = std::move(done)](Result<std::string>) {
        done(Error(ErrorCode::kUnreadable, "GET f2/xbcloud.manifest: HTTP 400 (an SSE-C backup)"));
      });
    }
  };
  ThreeChains();
  Refusing store(*store_);
  auto c = ReadCatalog(loop_, store, {"", 4});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->backups.size(), 6u);
  const BackupRecord* f2 = Find(*c, "f2");
  ASSERT_NE(f2, nullptr);
  EXPECT_NE(f2->problem.find("SSE-C"), std::string::npos);
  EXPECT_FALSE(f2->known());
}

}  // namespace
}  // namespace xbak::cloud
