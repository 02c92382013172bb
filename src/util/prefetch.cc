#include "xbak/util/prefetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace xbak::util {

Prefetcher::Prefetcher(std::vector<PrefetchRange> ranges, int threads) : ranges_(std::move(ranges)) {
  const size_t n = std::min(ranges_.size(), static_cast<size_t>(std::max(1, threads)));
  threads_.reserve(n);
  for (size_t i = 0; i < n; i++) threads_.emplace_back([this] { Work(); });
}

Prefetcher::~Prefetcher() {
  stop_.store(true, std::memory_order_release);
  for (auto& t : threads_) t.join();
}

void Prefetcher::Wait() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Prefetcher::Work() {
  while (!stop_.load(std::memory_order_acquire)) {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= ranges_.size()) return;
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

}  // namespace xbak::util
