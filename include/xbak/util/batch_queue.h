// A thread-safe FIFO whose consumers take every item waiting at once (up to a
// limit), for work that is cheaper in batches: xbcloud's MD5 threads hash all
// the objects waiting together (storage/md5_multi.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace xbak::util {

template <typename T>
class BatchQueue {
 public:
  void Push(T item) {
    bool wake;
    {
      std::lock_guard<std::mutex> l(mu_);
      items_.push_back(std::move(item));
      // A consumer waits for a first item, then (lingering) for the wanted
      // number: waking it for the items in between would only cost a
      // context switch each.
      wake = items_.size() == 1 || items_.size() >= want_;
    }
    if (wake) cv_.notify_one();
  }

  // Waits for at least one item and moves up to `max` of those waiting into
  // *out (cleared first). With a `linger`, it then waits up to that long for
  // the batch to fill to the wanted size (SetWant), so that work arriving
  // item by item is still taken in batches. False once closed and drained,
  // or cancelled.
  bool PopSome(size_t max, std::vector<T>* out, std::chrono::microseconds linger = {}) {
    out->clear();
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return cancelled_ || closed_ || !items_.empty(); });
    if (linger.count() > 0) {
      cv_.wait_for(l, linger, [&] { return cancelled_ || closed_ || items_.size() >= std::min(want_, max); });
    }
    if (cancelled_ || items_.empty()) return false;
    while (!items_.empty() && out->size() < max) {
      out->push_back(std::move(items_.front()));
      items_.pop_front();
    }
    return true;
  }

  // How many items a lingering PopSome waits for (at least 1).
  void SetWant(size_t want) {
    want = std::max<size_t>(want, 1);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (want_ == want) return;
      bool fewer = want < want_;
      want_ = want;
      if (!fewer) return;  // a lingering consumer waits on
    }
    cv_.notify_all();
  }

  // No more items will come: consumers drain what is left, then stop.
  void Close() {
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  // Consumers stop at once; returns the items no consumer took (so that the
  // caller can release what they hold).
  std::vector<T> Cancel() {
    std::vector<T> left;
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled_ = true;
      for (auto& item : items_) left.push_back(std::move(item));
      items_.clear();
    }
    cv_.notify_all();
    return left;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;     // guarded by mu_
  bool closed_ = false;     // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
  size_t want_ = 1;         // guarded by mu_
};

}  // namespace xbak::util
