#include "xbak/util/spool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "util/temp_dir.h"

namespace xbak::util {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

using testing::TempDir;

// How many names the directory holds: a spill file must have none.
size_t Entries(const TempDir& dir) {
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir.path()); it != std::filesystem::directory_iterator();
       ++it)
    n++;
  return n;
}

// A consumer that collects what it is given, and can be held shut (a reader
// that stopped reading) until released.
struct Sink {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  Bytes got;
  Spool::Writer Writer() {
    return [this](const uint8_t* d, size_t n) {
      std::unique_lock lk(mu);
      cv.wait(lk, [this] { return open; });
      got.insert(got.end(), d, d + n);
      return Status::Ok();
    };
  }
  void Hold() {
    std::lock_guard lk(mu);
    open = false;
  }
  void Release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};

Bytes RandomBytes(std::mt19937& rng, size_t n) {
  Bytes b(n);
  for (auto& c : b) c = static_cast<uint8_t>(rng());
  return b;
}

TEST(Spool, DeliversEverythingInOrderFromMemory) {
  TempDir dir;
  Spool spool({.memory_limit = 64 << 20, .tmpdir = dir.path()});
  Sink sink;
  ASSERT_TRUE(spool.Start(sink.Writer()).ok());
  std::mt19937 rng(1);
  Bytes all;
  for (int i = 0; i < 500; i++) {
    Bytes b = RandomBytes(rng, 1 + rng() % 20000);
    ASSERT_TRUE(spool.Append(b.data(), b.size()).ok());
    all.insert(all.end(), b.begin(), b.end());
  }
  ASSERT_TRUE(spool.Finish().ok());
  EXPECT_EQ(sink.got, all);
  auto st = spool.stats();
  EXPECT_EQ(st.appended, all.size());
  EXPECT_EQ(st.written, all.size());
  EXPECT_EQ(st.pending, 0u);
  EXPECT_EQ(st.spilled, 0u);
  EXPECT_TRUE(spool.Finish().ok());  // idempotent
}

// The property the redo log copy needs: a consumer that does not read at all
// never makes the producer wait; beyond the memory bound the bytes go to an
// unnamed file, and come out in order once the consumer reads again.
TEST(Spool, ProducerNeverWaitsForAStalledConsumerAndSpillsInOrder) {
  TempDir dir;
  Spool spool({.memory_limit = 256 * 1024, .tmpdir = dir.path(), .chunk = 64 * 1024});
  Sink sink;
  sink.Hold();
  ASSERT_TRUE(spool.Start(sink.Writer()).ok());
  std::mt19937 rng(2);
  Bytes all;
  auto t0 = std::chrono::steady_clock::now();
  while (all.size() < (size_t{24} << 20)) {
    Bytes b = RandomBytes(rng, 1 + rng() % 300000);
    ASSERT_TRUE(spool.Append(b.data(), b.size()).ok());
    all.insert(all.end(), b.begin(), b.end());
  }
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 20s) << "appending must not wait for the consumer";
  auto mid = spool.stats();
  EXPECT_EQ(mid.appended, all.size());
  EXPECT_LE(mid.written, size_t{64} * 1024);  // at most the one piece the consumer holds
  EXPECT_GT(mid.on_disk, all.size() - (size_t{512} << 10));
  EXPECT_EQ(Entries(dir), 0u) << "the spill file must have no name";
  sink.Release();
  ASSERT_TRUE(spool.Finish().ok());
  EXPECT_TRUE(sink.got == all) << "got " << sink.got.size() << " of " << all.size()
                               << " bytes, or out of order";
  auto st = spool.stats();
  EXPECT_EQ(st.pending, 0u);
  EXPECT_EQ(st.on_disk, 0u);
  EXPECT_GT(st.spilled, all.size() / 2);
  EXPECT_EQ(st.peak_pending, all.size());
}

// Memory and disk interleave when the consumer keeps up part of the time.
TEST(Spool, InterleavesMemoryAndDiskUnderAJitteryConsumer) {
  TempDir dir;
  Spool spool({.memory_limit = 100 * 1000, .tmpdir = dir.path(), .chunk = 8192});
  Bytes got;
  std::mt19937 slow_rng(3);
  // The consumer first waits until more than the memory limit was appended,
  // so that the spool spills at least once however fast or slow the machine
  // (a slow producer, under TSan, once let a jittery consumer keep up).
  std::atomic<size_t> appended{0};
  bool waited = false;
  ASSERT_TRUE(spool
                  .Start([&](const uint8_t* d, size_t n) {
                    const auto deadline = std::chrono::steady_clock::now() + 10s;
                    while (!waited && appended.load() < 150 * 1000 &&
                           std::chrono::steady_clock::now() < deadline)
                      std::this_thread::sleep_for(1ms);
                    waited = true;
                    if (slow_rng() % 16 == 0) std::this_thread::sleep_for(1ms);
                    got.insert(got.end(), d, d + n);
                    return Status::Ok();
                  })
                  .ok());
  std::mt19937 rng(4);
  Bytes all;
  for (int i = 0; i < 4000; i++) {
    Bytes b = RandomBytes(rng, 1 + rng() % 5000);
    ASSERT_TRUE(spool.Append(b.data(), b.size()).ok());
    appended += b.size();
    all.insert(all.end(), b.begin(), b.end());
    if (i % 100 == 0) std::this_thread::sleep_for(2ms);
  }
  ASSERT_TRUE(spool.Finish().ok());
  EXPECT_TRUE(got == all);
  EXPECT_GT(spool.stats().spilled, 0u);
}

TEST(Spool, AConsumerErrorStopsTheProducer) {
  TempDir dir;
  Spool spool({.memory_limit = 1 << 20, .tmpdir = dir.path(), .what = "redo log"});
  std::atomic<size_t> seen{0};
  ASSERT_TRUE(spool
                  .Start([&](const uint8_t*, size_t n) {
                    if (seen.fetch_add(n) > 100000) return Error(ErrorCode::kIo, "write stdout: Broken pipe");
                    return Status::Ok();
                  })
                  .ok());
  Bytes b(4096, 7);
  Status st;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (st.ok() && std::chrono::steady_clock::now() < deadline) {
    st = spool.Append(b.data(), b.size());
    std::this_thread::sleep_for(100us);
  }
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Broken pipe"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("writing the redo log"), std::string::npos) << st.message();
  Status fin = spool.Finish();
  EXPECT_EQ(fin.message(), st.message());
}

TEST(Spool, DiskLimitAndBadTmpdirAreNamed) {
  TempDir dir;
  {
    Spool spool({.memory_limit = 4096, .tmpdir = dir.path(), .disk_limit = 100000, .what = "redo log"});
    Sink sink;
    sink.Hold();
    ASSERT_TRUE(spool.Start(sink.Writer()).ok());
    Bytes b(10000, 1);
    Status st;
    for (int i = 0; i < 100 && st.ok(); i++) st = spool.Append(b.data(), b.size());
    EXPECT_EQ(st.code(), ErrorCode::kNoSpace) << st.message();
    EXPECT_NE(st.message().find("redo log spool in " + dir.path()), std::string::npos) << st.message();
    EXPECT_EQ(spool.Append(b.data(), 1).code(), ErrorCode::kNoSpace);  // sticky
    sink.Release();
    EXPECT_EQ(spool.Finish().code(), ErrorCode::kNoSpace);
  }
  {
    std::string missing = dir.path() + "/no/such/dir";
    Spool spool({.memory_limit = 0, .tmpdir = missing, .what = "redo log"});
    Sink sink;
    ASSERT_TRUE(spool.Start(sink.Writer()).ok());
    Bytes b(10, 1);
    Status st = spool.Append(b.data(), b.size());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(missing), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--tmpdir"), std::string::npos) << st.message();
    EXPECT_FALSE(spool.Finish().ok());
  }
}

// A real write failure of the spill file (the file system is full): here the
// per-process file size limit stands in for a full disk, so the pwrite fails
// with EFBIG as it would with ENOSPC.
TEST(Spool, AFailedSpillWriteIsNamedAndSticky) {
  TempDir dir;
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_sig = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 256 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  Status st;
  {
    Spool spool({.memory_limit = 0, .tmpdir = dir.path(), .what = "redo log"});
    Sink sink;
    sink.Hold();
    ASSERT_TRUE(spool.Start(sink.Writer()).ok());
    Bytes b(64 * 1024, 3);
    for (int i = 0; i < 10 && st.ok(); i++) st = spool.Append(b.data(), b.size());
    sink.Release();
    (void)spool.Finish();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_sig);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("redo log spool in " + dir.path() + " could not take"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("larger file system"), std::string::npos) << st.message();
}

// Paused, the spool writes nothing new (the backup pauses the redo log's drain
// while the server is held, so the files copied then go out first); Append
// goes on; resuming, or Finish, writes everything in order.
TEST(Spool, PauseHoldsTheConsumerButNotTheProducer) {
  TempDir dir;
  Spool spool({.memory_limit = 1 << 20, .tmpdir = dir.path(), .chunk = 64 * 1024});
  Sink sink;
  ASSERT_TRUE(spool.Start(sink.Writer()).ok());
  std::mt19937 rng(7);
  Bytes all = RandomBytes(rng, 3 << 20);  // beyond memory_limit: spills too
  spool.Pause(true);
  ASSERT_TRUE(spool.Append(all.data(), all.size() / 2).ok());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(spool.stats().written, 0u);
  {
    std::lock_guard lk(sink.mu);
    EXPECT_TRUE(sink.got.empty());
  }
  spool.Pause(false);
  ASSERT_TRUE(spool.Append(all.data() + all.size() / 2, all.size() - all.size() / 2).ok());
  for (int i = 0; i < 500 && spool.stats().written == 0; i++) std::this_thread::sleep_for(2ms);
  EXPECT_GT(spool.stats().written, 0u);
  spool.Pause(true);  // Finish resumes a paused spool
  ASSERT_TRUE(spool.Finish().ok());
  EXPECT_EQ(sink.got, all);
}

TEST(Spool, AbortReleasesAFinishAndTheDestructorJoins) {
  TempDir dir;
  auto spool = std::make_unique<Spool>(Spool::Options{.memory_limit = 1 << 20, .tmpdir = dir.path()});
  std::atomic<bool> stop{false};
  ASSERT_TRUE(spool
                  ->Start([&](const uint8_t*, size_t) {
                    while (!stop) std::this_thread::sleep_for(1ms);
                    return Status::Ok();
                  })
                  .ok());
  Bytes b(1000, 1);
  ASSERT_TRUE(spool->Append(b.data(), b.size()).ok());
  ASSERT_TRUE(spool->Append(b.data(), b.size()).ok());
  spool->Abort();
  EXPECT_EQ(spool->Append(b.data(), b.size()).code(), ErrorCode::kCancelled);
  stop = true;
  EXPECT_EQ(spool->Finish().code(), ErrorCode::kCancelled);
  spool.reset();
}

}  // namespace
}  // namespace xbak::util
