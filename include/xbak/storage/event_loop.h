// A libev event loop owned by one thread, with a thread-safe way in.
//
// Object-store drivers start requests and complete them on this loop; the
// cloud commands run their pipelines on it. Other threads (stream readers,
// output writers) hand work to it with Post(), which wakes the loop through an
// ev_async watcher. Everything else (Run, After, the watchers of drivers) is
// for the loop thread only.
#pragma once

#include <ev.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace xbak::storage {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until Stop() is called from a callback (or through Post).
  void Run();
  void Stop();
  // Thread-safe: runs fn on the loop thread, soon.
  void Post(std::function<void()> fn);
  // Loop thread: runs fn once after `seconds`.
  void After(double seconds, std::function<void()> fn);

  struct ev_loop* raw() const {
    return loop_;
  }

 private:
  static void OnAsync(struct ev_loop* loop, ev_async* w, int revents);
  static void OnTimer(struct ev_loop* loop, ev_timer* w, int revents);
  struct Timer;

  struct ev_loop* loop_;
  ev_async async_;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;   // guarded by mu_
  std::vector<std::unique_ptr<Timer>> timers_;  // loop thread only
};

}  // namespace xbak::storage
