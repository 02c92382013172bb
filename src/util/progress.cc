#include "xbak/util/progress.h"

#include <cstdio>

#include "xbak/util/log.h"

namespace xbak::util {

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

Progress::Progress(std::string what, std::chrono::milliseconds interval)
    : what_(std::move(what)), interval_(interval), start_(std::chrono::steady_clock::now()) {
  if (interval_.count() > 0) thread_ = std::thread([this] { Run(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Progress::SetNote(std::string note) {
  std::lock_guard<std::mutex> l(mu_);
  note_ = std::move(note);
}

std::string Progress::Line() const {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  uint64_t done = done_bytes(), total = total_bytes_.load(std::memory_order_relaxed);
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  char buf[256];
  std::string eta = "";
  if (rate > 0 && total > done) {
    std::snprintf(buf, sizeof buf, ", ETA %.0f s", static_cast<double>(total - done) / rate);
    eta = buf;
  }
  std::snprintf(buf, sizeof buf, "%s: %s of %s, %llu of %llu files, %s/s%s", what_.c_str(),
                HumanBytes(done).c_str(), HumanBytes(total).c_str(),
                static_cast<unsigned long long>(done_files()),
                static_cast<unsigned long long>(total_files_.load(std::memory_order_relaxed)),
                HumanBytes(static_cast<uint64_t>(rate)).c_str(), eta.c_str());
  std::string line = buf;
  std::lock_guard<std::mutex> l(mu_);
  if (!note_.empty()) line += ", " + note_;
  return line;
}

void Progress::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (cv_.wait_for(l, interval_, [this] { return stop_; })) break;
    l.unlock();
    LogInfo(Line());
    l.lock();
  }
}

void Progress::Finish(bool ok) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, " in %.2f s", secs);
  if (ok)
    LogInfo(what_ + " completed: " + HumanBytes(done_bytes()) + ", " + std::to_string(done_files()) +
            " files" + buf);
}

}  // namespace xbak::util
