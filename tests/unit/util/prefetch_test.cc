#include "xbak/util/prefetch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::util {
namespace {

using testing::TempDir;

// How many of the file's pages are in the page cache (mincore over a mapping of it).
size_t CachedPages(const std::string& path, size_t bytes) {
  auto f = File::OpenRead(path);
  if (!f.ok()) return 0;
  void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, f->fd(), 0);
  if (m == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  size_t n = 0;
  if (::mincore(m, bytes, in.data()) == 0)
    for (unsigned char c : in) n += c & 1;
  ::munmap(m, bytes);
  return n;
}

TEST(Prefetcher, AsksForEveryRangeAndSkipsWhatItCannotOpen) {
  TempDir t;
  std::vector<PrefetchRange> ranges;
  for (int i = 0; i < 100; i++) {
    const std::string p = t / ("f" + std::to_string(i));
    ASSERT_TRUE(WriteFileAtomic(p, std::string(8192, 'x')).ok());
    ranges.push_back({p, i % 3 == 0 ? 0 : (i % 3 == 1 ? 4096 : kInodeOnly)});
  }
  ranges.push_back({t / "missing", 0});  // advice only: no error, no stop
  Prefetcher p(std::move(ranges), 4);
  p.Wait();
  EXPECT_EQ(p.asked(), 101u);
}

// Never more than max_ahead ranges beyond those consumed; refilled once half of
// that window is free (a wake-up per range consumed cost a context switch per
// file), so at least max_ahead - max_ahead / 2 ahead while there are any.
TEST(Prefetcher, StaysWithinItsBoundAheadOfWhatWasConsumed) {
  TempDir t;
  std::vector<PrefetchRange> ranges;
  for (int i = 0; i < 50; i++) {
    const std::string p = t / ("f" + std::to_string(i));
    ASSERT_TRUE(WriteFileAtomic(p, "x").ok());
    ranges.push_back({p, 0});
  }
  Prefetcher p(std::move(ranges), 8, 5);
  for (int consumed = 0; consumed <= 45; consumed += 15) {
    const size_t most = std::min(consumed + 5, 50), least = std::min(consumed + 3, 50);
    for (int i = 0; i < 2000 && p.asked() < least; i++) ::usleep(1000);
    EXPECT_GE(p.asked(), least) << "consumed " << consumed;
    ::usleep(20000);
    EXPECT_LE(p.asked(), most) << "consumed " << consumed;
    EXPECT_GE(p.asked(), least) << "consumed " << consumed;
    for (int i = 0; i < 15; i++) p.Consumed();
  }
  // All consumed (60 of 50): the last ones are asked for too.
  for (int i = 0; i < 2000 && p.asked() < 50; i++) ::usleep(1000);
  EXPECT_EQ(p.asked(), 50u);
}

TEST(Prefetcher, AnUnconsumedBoundedPrefetcherStillEndsWhenDestroyed) {
  TempDir t;
  std::vector<PrefetchRange> ranges;
  for (int i = 0; i < 20; i++) ranges.push_back({t / ("none" + std::to_string(i)), 0});
  { Prefetcher p(std::move(ranges), 4, 2); }  // joins its threads, waiting at the bound
  SUCCEED();
}

TEST(Prefetcher, BringsTheRangeIntoThePageCache) {
  TempDir t;
  const std::string path = t / "data";
  const size_t bytes = 1 << 20;
  ASSERT_TRUE(WriteFileAtomic(path, std::string(bytes, 'y')).ok());
  {
    auto f = File::OpenRead(path);
    ASSERT_TRUE(f.ok());
    ASSERT_EQ(::fdatasync(f->fd()), 0);
    // Out of the cache (clean pages: DONTNEED drops them), unless the file system keeps them.
    (void)::posix_fadvise(f->fd(), 0, 0, POSIX_FADV_DONTNEED);
  }
  if (CachedPages(path, bytes) != 0) GTEST_SKIP() << "this file system keeps the pages (tmpfs?)";
  Prefetcher p({{path, 0}}, 1);
  p.Wait();
  // WILLNEED starts the reads; they complete soon after.
  size_t cached = 0;
  for (int i = 0; i < 200 && cached * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) < bytes; i++) {
    cached = CachedPages(path, bytes);
    ::usleep(10000);
  }
  EXPECT_EQ(cached * static_cast<size_t>(::sysconf(_SC_PAGESIZE)), bytes);
}

}  // namespace
}  // namespace xbak::util
