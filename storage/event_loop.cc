#include "xbak/storage/event_loop.h"

#include <algorithm>
#include <stdexcept>

namespace xbak::storage {

struct EventLoop::Timer {
  ev_timer w;
  EventLoop* owner;
  std::function<void()> fn;
};

EventLoop::EventLoop() : loop_(ev_loop_new(EVFLAG_AUTO)) {
  if (loop_ == nullptr) throw std::runtime_error("libev: cannot create an event loop");
  ev_async_init(&async_, &EventLoop::OnAsync);
  async_.data = this;
  ev_async_start(loop_, &async_);
}

EventLoop::~EventLoop() {
  for (auto& t : timers_) ev_timer_stop(loop_, &t->w);
  ev_async_stop(loop_, &async_);
  ev_loop_destroy(loop_);
}

void EventLoop::Run() {
  // Work posted before Run() started must not wait for the next wake-up.
  ev_async_send(loop_, &async_);
  ev_run(loop_, 0);
}

void EventLoop::Stop() { ev_break(loop_, EVBREAK_ALL); }

void EventLoop::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(fn));
  }
  ev_async_send(loop_, &async_);
}

void EventLoop::After(double seconds, std::function<void()> fn) {
  auto t = std::make_unique<Timer>();
  t->owner = this;
  t->fn = std::move(fn);
  ev_timer_init(&t->w, &EventLoop::OnTimer, std::max(0.0, seconds), 0.0);
  t->w.data = t.get();
  ev_timer_start(loop_, &t->w);
  timers_.push_back(std::move(t));
}

void EventLoop::OnAsync(struct ev_loop*, ev_async* w, int) {
  auto* self = static_cast<EventLoop*>(w->data);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    work.swap(self->posted_);
  }
  for (auto& fn : work) fn();
}

void EventLoop::OnTimer(struct ev_loop* loop, ev_timer* w, int) {
  auto* t = static_cast<Timer*>(w->data);
  EventLoop* self = t->owner;
  ev_timer_stop(loop, w);
  std::function<void()> fn = std::move(t->fn);
  auto it =
      std::find_if(self->timers_.begin(), self->timers_.end(), [t](const auto& p) { return p.get() == t; });
  if (it != self->timers_.end()) self->timers_.erase(it);
  fn();
}

}  // namespace xbak::storage
