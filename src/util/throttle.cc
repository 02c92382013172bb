#include "xbak/util/throttle.h"

#include <thread>

namespace xbak::util {

void Throttle::Take(size_t bytes) {
  if (bytes_per_second_ == 0 || bytes == 0) return;
  using Clock = std::chrono::steady_clock;
  const auto cost = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) / static_cast<double>(bytes_per_second_)));
  Clock::time_point at;
  {
    std::lock_guard lk(mu_);
    auto now = Clock::now();
    if (next_ < now - std::chrono::seconds(1)) next_ = now - std::chrono::seconds(1);
    at = next_;
    next_ += cost;
  }
  std::this_thread::sleep_until(at + cost);
}

}  // namespace xbak::util
