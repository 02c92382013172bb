// Asks the kernel to read files ahead of the threads that will read them: for a phase that reads
// a little of each of thousands of files (a backup's .meta files, each base tablespace's page 0,
// the small files an incremental replaces), whose reads, one per worker thread at a time, leave a
// cold disk mostly idle (issue 41: 20,000 tables, page cache dropped, xbak at 1.7-1.8x the floor of
// writing the deltas). A Prefetcher opens each file on its own threads, more of them than the
// phase's --parallel (opening and posix_fadvise(WILLNEED) cost the CPU almost nothing; the
// kernel queues the reads), while the phase runs; reads that reach a file first simply wait for the
// same page. Advice only: a file it cannot open is left to the phase, which reports it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xbak::util {

struct PrefetchRange {
  std::string path;
  uint64_t length = 0;  // from the start of the file; 0: the whole file; kInodeOnly: none of it
};
// Only the file's inode (what opening it for writing reads): no data.
constexpr uint64_t kInodeOnly = ~uint64_t{0};

class Prefetcher {
 public:
  // Starts reading `ranges` ahead, in their order, on `threads` threads.
  // `max_ahead` > 0: at most that many ranges are asked for beyond those the
  // phase has said it is done with (Consumed), so that reading ahead of a
  // phase that goes through more than the page cache holds never pushes
  // out what it is about to read. 0: no bound (a phase that reads a little
  // of each file).
  explicit Prefetcher(std::vector<PrefetchRange> ranges, int threads = kDefaultThreads, size_t max_ahead = 0);
  // Stops (the ranges not yet asked for are dropped) and joins the threads.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Waits until every range has been asked for (tests, and phases that want all of it in;
  // without max_ahead only, or after every range was Consumed).
  void Wait();
  // The phase is done with one more range (any of them: only the count matters).
  void Consumed();
  size_t asked() const { return asked_.load(std::memory_order_acquire); }

  // Enough requests in flight for an NVMe or a network block device, which serve many at once.
  static constexpr int kDefaultThreads = 32;

 private:
  void Work();
  size_t Next();  // the next range to ask for, once max_ahead allows it

  std::vector<PrefetchRange> ranges_;
  const size_t max_ahead_;
  std::mutex mu_;
  std::condition_variable moved_;  // consumed_ grew, or stop_ was set
  size_t consumed_ = 0;            // under mu_
  std::atomic<size_t> next_{0};
  std::atomic<size_t> asked_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Ahead of a phase that reads whole files in the order given (each range's
// length: its file's size), as a copy-back or a backup does: the first MiB of
// each (the kernel's own readahead follows a bigger file's reads), at most 64
// files beyond those the phase has Consumed.
std::unique_ptr<Prefetcher> PrefetchWholeFiles(std::vector<PrefetchRange> files);

}  // namespace xbak::util
