#include "xbak/util/throttle.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace xbak::util {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Throttle, UnlimitedNeverWaits) {
  Throttle t(0);
  auto t0 = Clock::now();
  for (int i = 0; i < 1000; i++) t.Take(Throttle::kOpBytes);
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(100));
}

// 4 threads share 20 ops/s: 60 ops take about 3 s (minus at most the one
// second of banked idle time), never less.
TEST(Throttle, ThreadsShareOneRate) {
  Throttle t(20);
  auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int k = 0; k < 4; k++) {
    th.emplace_back([&] {
      for (int i = 0; i < 15; i++) t.Take(Throttle::kOpBytes);
    });
  }
  for (auto& x : th) x.join();
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(s, 1.9);
  EXPECT_LE(s, 4.5);
}

}  // namespace
}  // namespace xbak::util
