// A rate limit shared by threads: xtrabackup's --throttle (I/O operations per
// second, each op a 1 MiB read and its write). Callers Take() the bytes they
// are about to read and sleep until the shared budget allows them.
//
// A virtual clock rather than a token bucket with a refill thread: each Take
// reserves the next slot of bytes/rate seconds, so N threads together never
// exceed the rate and none starves. Idle time is not banked beyond one second,
// so a long pause is not followed by an unthrottled burst.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace xbak::util {

class Throttle {
 public:
  static constexpr size_t kOpBytes = size_t{1} << 20;  // one "I/O operation" of --throttle
  // ops_per_second 0: unlimited (Take returns at once).
  explicit Throttle(uint64_t ops_per_second) : bytes_per_second_(ops_per_second * kOpBytes) {}
  Throttle(const Throttle&) = delete;
  Throttle& operator=(const Throttle&) = delete;

  void Take(size_t bytes);
  uint64_t bytes_per_second() const { return bytes_per_second_; }

 private:
  const uint64_t bytes_per_second_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_{};  // when the budget is free again
};

}  // namespace xbak::util
