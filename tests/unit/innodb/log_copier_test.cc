#include "xbak/innodb/log_copier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "log_copier_test_util.h"
#include "redo_synth.h"
#include "xbak/util/file.h"

namespace xbak::innodb {
namespace {

using namespace std::chrono_literals;
using namespace synth;
using namespace xbak::innodb::copier_test;

// ---------------------------------------------------------------------------
// LogCopier against synthetic circular logs

Bytes RandomMtrRecords(std::mt19937& rng) {
  Bytes r;
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; i++) {
    size_t len = rng() % 8 == 0 ? 1000 + rng() % 20000 : 1 + rng() % 200;
    Append(r, PageWrite(rng() % 50, rng() % 1000, len, rng()));
  }
  return r;
}

TEST(LogCopier, CopiesAWrappedLogWithAStraddlingMtr) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  const uint64_t first = 10 * 1024 * 1024 + 17;
  SynthLog log(dir / "ib_logfile0", cap, first);
  std::mt19937 rng(1);
  // Fill past the end of the first pass, so the copy starts near the end.
  while (log.lsn() < first + cap - 3000) log.Write(PageWrite(1, 1, 500, rng()));
  log.Checkpoint(log.lsn());
  const uint64_t start = log.checkpoint_lsn();
  // An mtr whose bytes straddle the end of the circular file (and so does its
  // terminator: it is on the next pass and carries sequence bit 0).
  Bytes straddle = FileRecord(kFileCreate, 11, "./db/straddle.ibd");
  Append(straddle, PageWrite(11, 0, 6000, 3));
  uint64_t straddle_lsn = log.Write(straddle);
  ASSERT_LT(LsnToOffset(straddle_lsn, first, cap), kLogStartOffset + cap);
  ASSERT_LT(LsnToOffset(log.lsn(), first, cap), LsnToOffset(straddle_lsn, first, cap)) << "must wrap";
  Bytes ren = Varint(11);
  ren.push_back(0);
  for (char c : std::string("./db/straddle.ibd")) ren.push_back(static_cast<uint8_t>(c));
  ren.push_back(0);
  for (char c : std::string("./db/moved.ibd")) ren.push_back(static_cast<uint8_t>(c));
  log.Write(Record(kFileRename, ren));
  log.Write(FileRecord(kFileDelete, 11, "./db/moved.ibd"));
  for (int i = 0; i < 20; i++) log.Write(RandomMtrRecords(rng));
  ASSERT_LT(log.lsn() - start, cap);

  auto c = LogCopier::Open(Opts(log, 5ms));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->checkpoint_lsn(), start);
  EXPECT_EQ((*c)->capacity(), cap);
  EXPECT_EQ((*c)->format(), kRedoFormat10_8);
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), OpsTo(&got)).ok());
  ASSERT_TRUE((*c)->WaitUntil(log.lsn(), 5s).ok());
  EXPECT_EQ((*c)->copied_lsn(), log.lsn());
  ASSERT_TRUE((*c)->Stop().ok());

  const Bytes& lin = log.linear();
  Bytes expect(lin.end() - static_cast<ptrdiff_t>(log.lsn() - start), lin.end());
  EXPECT_EQ(got.log, expect);
  ASSERT_EQ(got.ops.size(), 4u);  // the checkpoint's FILE_MODIFY (at start) + create, rename, delete
  EXPECT_EQ(got.ops[0].first.type, FileOp::Type::kModify);
  EXPECT_EQ(got.ops[1].first.type, FileOp::Type::kCreate);
  EXPECT_EQ(got.ops[1].second, straddle_lsn + straddle.size() + 5);
  EXPECT_EQ(got.ops[2].first.type, FileOp::Type::kRename);
  EXPECT_EQ(got.ops[2].first.new_name, "./db/moved.ibd");
  EXPECT_EQ(got.ops[3].first.type, FileOp::Type::kDelete);

  // Nothing more will come: a stall times out instead of hanging.
  auto c2 = LogCopier::Open(Opts(log, 5ms));
  ASSERT_TRUE(c2.ok());
  Collected got2;
  ASSERT_TRUE((*c2)->Start(CollectTo(&got2), nullptr).ok());
  Status st = (*c2)->WaitUntil(log.lsn() + 1, 200ms);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_TRUE((*c2)->Stop().ok());
  EXPECT_EQ((*c2)->WaitUntil(log.lsn() + 1, 200ms).code(), ErrorCode::kCancelled);
}

TEST(LogCopier, FollowsAGrowingLogThroughManyWraps) {
  TempDir dir;
  const uint64_t cap = 3 * 1024 * 1024 + 4096;  // larger than one read: exercises carry-over
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open(Opts(log, 2ms));
  ASSERT_TRUE(c.ok()) << c.status().message();
  LogCopier& copier = **c;
  Collected got;
  ASSERT_TRUE(copier.Start(CollectTo(&got), OpsTo(&got)).ok());

  // The "server": writes mtrs (some near the 1 MiB limit), checkpoints behind
  // itself, and never writes more than half the capacity past what the copier
  // has, as a server's own checkpointing would guarantee.
  std::atomic<bool> writer_ok{true};
  uint64_t final_lsn = 0;
  std::thread server([&] {
    std::mt19937 rng(42);
    auto deadline = std::chrono::steady_clock::now() + 60s;
    int n = 0;
    while (log.lsn() < kLogFirstLsn + 6 * cap) {
      while (log.lsn() - copier.copied_lsn() > cap / 2) {
        if (std::chrono::steady_clock::now() > deadline) {
          writer_ok = false;
          return;
        }
        std::this_thread::sleep_for(1ms);
      }
      if (++n % 50 == 0) {
        Bytes huge = PageWrite(3, 4, 900000 + rng() % 100000, rng());
        log.Write(huge);
      } else {
        log.Write(RandomMtrRecords(rng));
      }
      if (n % 97 == 0) log.Write(FileRecord(kFileCreate, n, "./db/t" + std::to_string(n) + ".ibd"));
      if (n % 20 == 0)
        log.Checkpoint(std::max(log.checkpoint_lsn(), log.lsn() - std::min(log.lsn(), cap * 3 / 4)));
    }
    final_lsn = log.lsn();
  });
  server.join();
  ASSERT_TRUE(writer_ok) << "copier did not keep up; copied_lsn=" << copier.copied_lsn();
  Status w = copier.WaitUntil(final_lsn, 10s);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_TRUE(copier.Stop().ok());
  EXPECT_EQ(copier.copied_lsn(), final_lsn);
  EXPECT_TRUE(got.log == log.linear()) << "backup log differs from what was written (" << got.log.size()
                                       << " vs " << log.linear().size() << " bytes)";
  Bytes full = MakeBackupLogHeader(kRedoFormat10_8, copier.checkpoint_lsn(), copier.checkpoint_end_lsn(),
                                   "Backup 10.11.19");
  Append(full, got.log);
  LinearScan scan;
  ASSERT_TRUE(ScanLinear(full, &scan));
  EXPECT_EQ(scan.end_lsn, final_lsn);
  size_t creates = 0;
  for (auto& [op, lsn] : got.ops) creates += op.type == FileOp::Type::kCreate;
  EXPECT_GT(creates, 3u);
  EXPECT_EQ(got.ops.size(), scan.ops.size());
}

// The race that failed real backups under heavy writes (issue 18): the bytes
// after the log's end in the block the server is writing can hold a whole,
// checksummed mtr that is not part of the log (stale buffer contents, or a
// block read halfway through a write). A copier that took it would then fail
// on the real log ("mtr checksum mismatch") or copy a wrong log. A test
// thread plays the server: every mtr is preceded by such a decoy at the log's
// end, and written() covers the real mtr only once it is written.
TEST(LogCopier, NeverTakesStaleMtrsBeyondTheWrittenLog) {
  TempDir dir;
  const uint64_t cap = 256 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open(Opts(log, 1ms));
  ASSERT_TRUE(c.ok()) << c.status().message();
  LogCopier& copier = **c;
  Collected got;
  ASSERT_TRUE(copier.Start(CollectTo(&got), OpsTo(&got)).ok());
  std::atomic<bool> writer_ok{true};
  std::thread server([&] {
    std::mt19937 rng(11);
    auto deadline = std::chrono::steady_clock::now() + 60s;
    for (int n = 1; log.lsn() < kLogFirstLsn + 5 * cap; n++) {
      while (log.lsn() - copier.copied_lsn() > cap / 2) {  // the server's own checkpoint limit
        if (std::chrono::steady_clock::now() > deadline) {
          writer_ok = false;
          return;
        }
        std::this_thread::sleep_for(100us);
      }
      Bytes decoy = PageWrite(7, rng() % 100, 1 + rng() % 300, rng());
      log.WriteOverDecoy(RandomMtrRecords(rng), decoy, std::chrono::microseconds(rng() % 1500));
      if (n % 40 == 0)
        log.Checkpoint(
            std::max(log.checkpoint_lsn(), log.lsn() - std::min(log.lsn() - kLogFirstLsn, cap / 4)));
    }
  });
  server.join();
  ASSERT_TRUE(writer_ok) << "copier did not keep up; copied_lsn=" << copier.copied_lsn();
  Status w = copier.WaitUntil(log.lsn(), 10s);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_TRUE(copier.Stop().ok());
  EXPECT_EQ(copier.copied_lsn(), log.lsn());
  EXPECT_TRUE(got.log == log.linear()) << "the copy took log that the server never wrote";
}

// Log the server has finished writing that does not parse is damage, not the
// tail: reported as corrupt, with the checkpoint and the written LSN named.
TEST(LogCopier, ReportsDamagedWrittenLogAsCorrupt) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  std::mt19937 rng(12);
  for (int i = 0; i < 10; i++) log.Write(RandomMtrRecords(rng));
  const uint64_t bad = log.Write(PageWrite(1, 2, 100, 3));
  for (int i = 0; i < 10; i++) log.Write(RandomMtrRecords(rng));
  {
    auto f = util::File::OpenWrite(log.path());
    ASSERT_TRUE(f.ok());
    uint8_t x = 0xEE;  // inside the record bytes: the CRC no longer matches
    ASSERT_TRUE(f->PWrite(&x, 1, LsnToOffset(bad + 20, kLogFirstLsn, cap)).ok());
  }
  auto c = LogCopier::Open(Opts(log, 1ms));
  ASSERT_TRUE(c.ok());
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt) << st.message();
  EXPECT_TRUE(Contains(st.message(), "does not parse at LSN " + std::to_string(bad))) << st.message();
  EXPECT_TRUE(Contains(st.message(), "checksum mismatch")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "checkpoint LSN " + std::to_string(kLogFirstLsn))) << st.message();
  EXPECT_FALSE(Contains(st.message(), "overwritten")) << st.message();
  EXPECT_EQ(got.log.size(), bad - kLogFirstLsn) << "everything before the damage is copied";
}

// A server that wrote more than its log holds past its checkpoint (MariaDB
// warns "Crash recovery is broken due to insufficient innodb_log_file_size")
// has overwritten log whose checkpoint has not passed it: the next pass's
// sequence bit tells an overrun from damage.
TEST(LogCopier, ReportsAnOverrunWithoutACheckpointAsOverwritten) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  std::mt19937 rng(13);
  auto c = LogCopier::Open(Opts(log, 1ms));
  ASSERT_TRUE(c.ok());
  while (log.lsn() < kLogFirstLsn + cap + cap / 3) log.Write(PageWrite(1, 1, 40 + rng() % 60, rng()));
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(Contains(st.message(), "was overwritten by the server before it could be copied"))
      << st.message();
  EXPECT_TRUE(Contains(st.message(), "innodb_log_file_size")) << st.message();
}

TEST(LogCopier, DetectsLogOverwrittenTwoPassesAhead) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open(Opts(log, 2ms));
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(7);
  while (log.lsn() < kLogFirstLsn + 2 * cap + cap / 2) {
    log.Write(RandomMtrRecords(rng));
    log.Checkpoint(log.lsn() - std::min(log.lsn() - kLogFirstLsn, cap / 2));
  }
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(Contains(st.message(), "was overwritten by the server before it could be copied"))
      << st.message();
  EXPECT_TRUE(Contains(st.message(), "innodb_log_file_size"));
  EXPECT_EQ((*c)->Stop().code(), ErrorCode::kServer);
  EXPECT_TRUE(got.log.empty());
}

TEST(LogCopier, DetectsLogOverwrittenByTheNextPass) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open(Opts(log, 2ms));
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(8);
  // One pass and a half: the start is overwritten once (sequence bit shows it),
  // and the checkpoint is past the start but less than a capacity ahead.
  while (log.lsn() < kLogFirstLsn + cap + cap / 2) log.Write(RandomMtrRecords(rng));
  log.Checkpoint(log.lsn() - cap / 2);
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(
      Contains(st.message(), "redo log from LSN " + std::to_string(kLogFirstLsn) + " was overwritten"))
      << st.message();
}

TEST(LogCopier, DetectsOverwriteWhenTheCopyFallsBehind) {
  TempDir dir;
  const uint64_t cap = 256 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open(Opts(log, 2ms));
  ASSERT_TRUE(c.ok());
  // A slow target: the server outruns the copy and checkpoints past it.
  Collected got;
  auto slow = [&got](const uint8_t* d, size_t n) {
    std::this_thread::sleep_for(30ms);
    std::lock_guard lk(got.mu);
    got.log.insert(got.log.end(), d, d + n);
    return Status::Ok();
  };
  ASSERT_TRUE((*c)->Start(slow, nullptr).ok());
  std::mt19937 rng(9);
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    log.Write(RandomMtrRecords(rng));
    log.Checkpoint(log.lsn() - std::min(log.lsn() - kLogFirstLsn, cap / 4));
    if ((*c)->WaitUntil(UINT64_MAX, 0ms).code() == ErrorCode::kServer) break;
  }
  Status st = (*c)->Stop();
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(Contains(st.message(), "overwritten")) << st.message();
  // What was copied before the failure is still a valid prefix.
  std::lock_guard lk(got.mu);
  EXPECT_TRUE(std::equal(got.log.begin(), got.log.end(), log.linear().begin()));
}

TEST(LogCopier, FailsClearlyWhenTheLogIsReplacedOrItsHeaderChanges) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  {
    SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
    log.Write(PageWrite(1, 1, 100, 1));
    auto c = LogCopier::Open(Opts(log, 2ms));
    ASSERT_TRUE(c.ok());
    Collected got;
    ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
    ASSERT_TRUE((*c)->WaitUntil(log.lsn(), 5s).ok());
    // Online resize: the server renames ib_logfile101 over ib_logfile0.
    SynthLog resized(dir / "ib_logfile101", 2 * cap, log.lsn());
    ASSERT_EQ(::rename(resized.path().c_str(), log.path().c_str()), 0);
    Status st = (*c)->WaitUntil(UINT64_MAX, 5s);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.message();
    EXPECT_TRUE(Contains(st.message(), "was replaced")) << st.message();
    auto live = (*c)->ReadLiveCheckpoint();
    EXPECT_FALSE(live.ok());
  }
  {
    SynthLog log(dir / "second_logfile0", cap, kLogFirstLsn);
    auto c = LogCopier::Open(Opts(log, 2ms));
    ASSERT_TRUE(c.ok());
    auto live = (*c)->ReadLiveCheckpoint();
    ASSERT_TRUE(live.ok()) << live.status().message();
    EXPECT_EQ(live->checkpoint_lsn, kLogFirstLsn);
    ASSERT_TRUE((*c)->Start([](const uint8_t*, size_t) { return Status::Ok(); }, nullptr).ok());
    auto f = util::File::OpenWrite(log.path());
    ASSERT_TRUE(f.ok());
    Bytes h = ServerHeader(kRedoFormat10_8, kLogFirstLsn + 4096, "MariaDB 10.11.19");
    ASSERT_TRUE(f->PWrite(h.data(), h.size(), 0).ok());
    Status st = (*c)->WaitUntil(UINT64_MAX, 5s);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.message();
    EXPECT_TRUE(Contains(st.message(), "header changed")) << st.message();
  }
}

TEST(LogCopier, OpenRejectsOldLogs) {
  TempDir dir;
  for (uint32_t fmt : {kRedoFormat10_5}) {
    std::string path = dir / ("log" + std::to_string(fmt));
    Bytes f = FileStart(kLogFirstLsn, {{kLogFirstLsn, kLogFirstLsn}}, std::nullopt);
    Bytes h = ServerHeader(fmt, kLogFirstLsn, "MariaDB");
    std::copy(h.begin(), h.end(), f.begin());
    f.resize(f.size() + 65536);
    ASSERT_TRUE(util::WriteFileAtomic(path, std::string(f.begin(), f.end())).ok());
    auto c = LogCopier::Open(OptsFor(path));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(Contains(c.status().message(), path));
  }
  EXPECT_EQ(LogCopier::Open(OptsFor(dir / "missing")).status().code(), ErrorCode::kNotFound);
  LogCopier::Options none = OptsFor(dir / "missing");
  none.written_lsn = nullptr;
  EXPECT_EQ(LogCopier::Open(none).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace xbak::innodb
