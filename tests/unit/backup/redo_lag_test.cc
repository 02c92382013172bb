#include "xbak/backup/redo_lag.h"

#include <gtest/gtest.h>

#include <atomic>

namespace xbak::backup {
namespace {

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(RedoLag, DescribesLagAsBytesAndShareOfTheLog) {
  RedoLagSample s;
  s.capacity = 32 << 20;
  s.head = 1000 + (8 << 20);
  s.copied = 1000;
  EXPECT_EQ(DescribeRedoLag(s), "redo 8.0 MiB behind (25% of the 32.0 MiB log)");
  s.spool.pending = 3 << 20;
  s.spool.on_disk = 1 << 20;
  EXPECT_TRUE(Has(DescribeRedoLag(s), "spool 3.0 MiB (1.0 MiB on disk)")) << DescribeRedoLag(s);
  s.copied = s.head + 10;  // the copy read past the sampled head: no lag, never negative
  EXPECT_EQ(s.lag(), 0u);
}

TEST(RedoLag, WarnsFromHalfTheCapacityWithRateAndTimeLeft) {
  RedoLagSample s;
  s.capacity = 32 << 20;
  s.copied = 5000;
  s.head = s.copied + (15 << 20);
  EXPECT_EQ(RedoLagWarning(s), "");
  s.head = s.copied + (16 << 20);
  s.rate = 4 << 20;
  std::string w = RedoLagWarning(s);
  EXPECT_TRUE(Has(w, "16.0 MiB behind the server, 50% of the 32.0 MiB")) << w;
  EXPECT_TRUE(Has(w, "writes 4.0 MiB/s")) << w;
  EXPECT_TRUE(Has(w, "overwritten in about 4 s")) << w;
  EXPECT_TRUE(Has(w, "innodb_log_file_size")) << w;
  s.rate = 0;  // unknown rate: no made-up time
  EXPECT_FALSE(Has(RedoLagWarning(s), "overwritten in")) << RedoLagWarning(s);
}

TEST(RedoLagMonitor, TracksTheLargestLagAndLimitsWarnings) {
  std::atomic<uint64_t> head{100}, copied{100};
  RedoLagMonitor::Sources src;
  src.server_lsn = [&]() -> Result<uint64_t> { return head.load(); };
  src.copied_lsn = [&] { return copied.load(); };
  util::Spool::Stats spool;
  spool.peak_pending = 5 << 20;
  spool.peak_on_disk = 2 << 20;
  src.spool = [&] { return spool; };
  util::Progress progress("test", std::chrono::milliseconds(0));
  RedoLagMonitor m(1 << 20, src, &progress, std::chrono::milliseconds(1000));
  m.Sample();
  EXPECT_EQ(m.max_lag(), 0u);
  head = 100 + 300000;
  m.Sample();
  EXPECT_EQ(m.max_lag(), 300000u);
  EXPECT_EQ(m.warnings(), 0u);
  head = 100 + 900000;  // 86%: warn, once within 10 s however often sampled
  m.Sample();
  m.Sample();
  m.Sample();
  EXPECT_EQ(m.warnings(), 1u);
  copied = head.load();
  m.Sample();
  EXPECT_EQ(m.max_lag(), 900000u);
  std::string sum = m.Summary();
  EXPECT_TRUE(Has(sum, "largest redo lag 878.9 KiB (86% of the 1.0 MiB log)")) << sum;
  EXPECT_TRUE(Has(sum, "output behind by up to 5.0 MiB of redo (up to 2.0 MiB spooled to disk)")) << sum;
}

TEST(RedoLagMonitor, AServerLsnThatCannotBeReadIsSaidOnce) {
  RedoLagMonitor::Sources src;
  int calls = 0;
  src.server_lsn = [&]() -> Result<uint64_t> {
    calls++;
    return Error(ErrorCode::kServer, "no such status variable");
  };
  src.copied_lsn = [] { return uint64_t{1}; };
  RedoLagMonitor m(1 << 20, src, nullptr, std::chrono::milliseconds(5));
  m.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  m.Stop();
  EXPECT_GT(calls, 1);
  EXPECT_EQ(m.Summary(), "redo lag not measured");
}

}  // namespace
}  // namespace xbak::backup
