#include "xbak/util/batch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace xbak {
namespace {

TEST(BatchQueue, TakesWhatIsWaitingUpToTheLimitInOrder) {
  BatchQueue<int> q;
  for (int i = 0; i < 5; i++) q.Push(i);
  std::vector<int> got;
  ASSERT_TRUE(q.PopSome(3, &got));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(q.PopSome(8, &got));
  EXPECT_EQ(got, (std::vector<int>{3, 4}));
  q.Close();
  EXPECT_FALSE(q.PopSome(8, &got));
  EXPECT_TRUE(got.empty());
}

TEST(BatchQueue, CloseLetsConsumersDrainCancelReturnsTheRest) {
  BatchQueue<int> q;
  q.Push(1);
  q.Close();
  std::vector<int> got;
  ASSERT_TRUE(q.PopSome(8, &got));  // closed, not empty: still handed out
  EXPECT_EQ(got, (std::vector<int>{1}));
  BatchQueue<int> c;
  c.Push(7);
  c.Push(8);
  EXPECT_EQ(c.Cancel(), (std::vector<int>{7, 8}));
  EXPECT_FALSE(c.PopSome(8, &got));
}

TEST(BatchQueue, EveryItemReachesExactlyOneConsumer) {
  BatchQueue<int> q;
  std::atomic<long> sum{0}, count{0};
  std::vector<std::thread> consumers;
  for (int t = 0; t < 3; t++) {
    consumers.emplace_back([&] {
      std::vector<int> got;
      while (q.PopSome(4, &got)) {
        for (int v : got) sum += v;
        count += static_cast<long>(got.size());
      }
    });
  }
  for (int i = 1; i <= 10000; i++) q.Push(i);
  q.Close();
  for (auto& t : consumers) t.join();
  EXPECT_EQ(count.load(), 10000);
  EXPECT_EQ(sum.load(), 10000L * 10001 / 2);
}

}  // namespace
}  // namespace xbak
