#include "xbak/util/batch_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace xbak::util {
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

TEST(BatchQueue, LingeringWaitsForTheWantedBatch) {
  using namespace std::chrono_literals;
  BatchQueue<int> q;
  q.SetWant(3);
  std::vector<int> got;
  std::thread producer([&] {
    q.Push(1);
    std::this_thread::sleep_for(20ms);
    q.Push(2);
    std::this_thread::sleep_for(20ms);
    q.Push(3);
  });
  // Items arriving one by one within the linger come out as one batch.
  ASSERT_TRUE(q.PopSome(8, &got, std::chrono::microseconds(5s)));
  producer.join();
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3}));
  // Fewer than wanted: what is there once the linger has passed.
  q.Push(4);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(q.PopSome(8, &got, std::chrono::microseconds(30ms)));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 25ms);
  EXPECT_EQ(got, (std::vector<int>{4}));
  // Wanting fewer releases a lingering consumer at once.
  q.Push(5);
  std::thread lower([&] {
    std::this_thread::sleep_for(20ms);
    q.SetWant(1);
  });
  t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(q.PopSome(8, &got, std::chrono::microseconds(10s)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  lower.join();
  EXPECT_EQ(got, (std::vector<int>{5}));
  // Close ends the linger too.
  q.SetWant(4);
  q.Push(6);
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    q.Close();
  });
  ASSERT_TRUE(q.PopSome(8, &got, std::chrono::microseconds(10s)));
  EXPECT_EQ(got, (std::vector<int>{6}));
  closer.join();
  EXPECT_FALSE(q.PopSome(8, &got, std::chrono::microseconds(10s)));
}

}  // namespace
}  // namespace xbak::util
