#include "xbak/util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace xbak::util {
namespace {

TEST(RunParallel, RunsEveryJobOnceAndReturnsTheFirstError) {
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<bool> cancel{false};
  ASSERT_TRUE(RunParallel(
                  hits.size(), 4,
                  [&](size_t i) {
                    hits[i]++;
                    return Status::Ok();
                  },
                  &cancel)
                  .ok());
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  std::atomic<bool> cancel2{false};
  Status st = RunParallel(
      1000, 4, [&](size_t i) { return i == 10 ? Error(ErrorCode::kIo, "job 10") : Status::Ok(); }, &cancel2);
  EXPECT_EQ(st.code(), ErrorCode::kIo);
  EXPECT_TRUE(cancel2.load());
}

TEST(RunParallel, AFlagLeftSetByAnEarlierPhaseIsNotSuccess) {
  std::atomic<bool> cancel{true};
  int ran = 0;
  Status st = RunParallel(
      5, 2,
      [&](size_t) {
        ran++;
        return Status::Ok();
      },
      &cancel);
  EXPECT_EQ(st.code(), ErrorCode::kCancelled);
  EXPECT_EQ(ran, 0);
  EXPECT_TRUE(RunParallel(
                  0, 2, [&](size_t) { return Status::Ok(); }, &cancel)
                  .ok());  // nothing to do
}

}  // namespace
}  // namespace xbak::util
