#include "xbak/util/parallel.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

namespace xbak::util {

Status RunParallel(size_t jobs, int threads, const std::function<Status(size_t job)>& fn,
                   std::atomic<bool>* cancel) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto worker = [&] {
    for (;;) {
      if (cancel->load(std::memory_order_acquire)) return;
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= jobs) return;
      Status st = fn(i);
      if (!st.ok()) {
        std::lock_guard<std::mutex> l(mu);
        // Keep the root cause, not the "cancelled" echoes of other workers.
        if (first.ok() || first.code() == ErrorCode::kCancelled) first = st;
        cancel->store(true, std::memory_order_release);
        return;
      }
    }
  };
  // A flag left set by an earlier, failed phase must not make this one
  // "succeed" without running anything.
  if (jobs > 0 && cancel->load(std::memory_order_acquire)) {
    return Error(ErrorCode::kCancelled, "cancelled before it started");
  }
  int n = std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(jobs, 1))));
  std::vector<std::thread> pool;
  pool.reserve(n - 1);
  for (int t = 1; t < n; t++) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first.ok() && cancel->load(std::memory_order_acquire) && next.load(std::memory_order_relaxed) < jobs) {
    return Error(ErrorCode::kCancelled, "cancelled");  // stopped from outside before every job ran
  }
  return first;
}

}  // namespace xbak::util
