#include "xbak/util/prefetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace xbak::util {

Prefetcher::Prefetcher(std::vector<PrefetchRange> ranges, int threads, size_t max_ahead)
    : ranges_(std::move(ranges)), max_ahead_(max_ahead) {
  const size_t n = std::min(ranges_.size(), static_cast<size_t>(std::max(1, threads)));
  threads_.reserve(n);
  for (size_t i = 0; i < n; i++) threads_.emplace_back([this] { Work(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_.store(true, std::memory_order_release);
  }
  moved_.notify_all();
  for (auto& t : threads_) t.join();
}

void Prefetcher::Wait() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Prefetcher::Consumed() {
  if (max_ahead_ == 0) return;
  bool wake = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    consumed_++;
    // One thread is woken only once half the window is free (and then one
    // more per range consumed while it stays so, in case that one waits on the
    // disk); it asks for ranges until the window is full again. A wake-up per
    // range consumed was a context switch per file: with 20,000 small files
    // on 2 cores the prefetch threads took a third of a backup's CPU.
    const size_t next = next_.load(std::memory_order_relaxed);
    wake = next < ranges_.size() && consumed_ + max_ahead_ >= next + std::max<size_t>(1, max_ahead_ / 2);
  }
  if (wake) moved_.notify_one();
}

size_t Prefetcher::Next() {
  if (max_ahead_ == 0) return next_.fetch_add(1, std::memory_order_relaxed);
  // Taken under the lock once within the bound, so that whichever thread
  // wakes takes the range that became allowed.
  std::unique_lock<std::mutex> l(mu_);
  moved_.wait(l, [&] {
    const size_t n = next_.load(std::memory_order_relaxed);
    return stop_.load(std::memory_order_acquire) || n >= ranges_.size() || n < consumed_ + max_ahead_;
  });
  return next_.fetch_add(1, std::memory_order_relaxed);
}

void Prefetcher::Work() {
  while (!stop_.load(std::memory_order_acquire)) {
    const size_t i = Next();
    if (i >= ranges_.size() || stop_.load(std::memory_order_acquire)) {
      moved_.notify_all();  // the others, waiting for a bound that no longer matters, end too
      return;
    }
    const PrefetchRange& r = ranges_[i];
    const int fd = ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
    const int fd2 = fd >= 0 ? fd : ::open(r.path.c_str(), O_RDONLY | O_CLOEXEC);  // O_NOATIME: owner only
    if (fd2 >= 0) {
      if (r.length != kInodeOnly)
        (void)::posix_fadvise(fd2, 0, static_cast<off_t>(r.length), POSIX_FADV_WILLNEED);
      ::close(fd2);
    }
    asked_.fetch_add(1, std::memory_order_release);
  }
}

std::unique_ptr<Prefetcher> PrefetchWholeFiles(std::vector<PrefetchRange> files) {
  constexpr uint64_t kHeadBytes = 1 << 20;
  constexpr size_t kAheadFiles = 64;
  for (PrefetchRange& f : files) f.length = std::min(f.length, kHeadBytes);
  return std::make_unique<Prefetcher>(std::move(files), Prefetcher::kDefaultThreads, kAheadFiles);
}

}  // namespace xbak::util
