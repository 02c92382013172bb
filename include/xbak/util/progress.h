// Progress of a long operation, reported on stderr at a fixed interval by a
// background thread: done/total bytes, files, rate and ETA. Counters are
// atomics bumped by the worker threads; nothing else is shared.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace xbak::util {

class Progress {
 public:
  // `what` names the operation ("backup", "copy-back"); interval 0 disables
  // the periodic line (the summary is still printed by Finish()).
  Progress(std::string what, std::chrono::milliseconds interval);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void AddTotal(uint64_t bytes, uint64_t files) {
    total_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    total_files_.fetch_add(files, std::memory_order_relaxed);
  }
  void AddDone(uint64_t bytes) { done_bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void FileDone() { done_files_.fetch_add(1, std::memory_order_relaxed); }
  // Extra text shown at the end of each line (e.g. "redo LSN 1234").
  void SetNote(std::string note);

  uint64_t done_bytes() const { return done_bytes_.load(std::memory_order_relaxed); }
  uint64_t done_files() const { return done_files_.load(std::memory_order_relaxed); }
  // Stops the reporter and prints the summary line.
  void Finish(bool ok);
  std::string Line() const;

 private:
  void Run();
  std::string what_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> total_bytes_{0}, total_files_{0}, done_bytes_{0}, done_files_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string note_;
  std::thread thread_;
};

std::string HumanBytes(uint64_t bytes);

}  // namespace xbak::util
