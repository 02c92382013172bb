// How close the redo log copy is to losing the race with the server.
//
// The server overwrites log at LSN L when its log head reaches L + capacity.
// So the margin of the copy is capacity - (head - copied): "lag" below is
// head - copied, and lag / capacity is the share of the margin used up. The
// monitor samples the server's head (a status variable, on its own
// connection), the copier's position and the spool, every interval:
//  * each sample becomes the progress line's note;
//  * a lag of half the capacity or more logs a warning (at most every 10 s)
//    with the server's write rate and the time left at that rate;
//  * Summary() names the largest lag seen, for the end of the backup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "xbak/util/progress.h"
#include "xbak/util/spool.h"
#include "xbak/util/status.h"

namespace xbak::backup {

struct RedoLagSample {
  uint64_t head = 0;      // the server's current LSN
  uint64_t copied = 0;    // the copier's position
  uint64_t capacity = 0;  // bytes of the circular log
  uint64_t rate = 0;      // server redo bytes/s (0: unknown yet)
  util::Spool::Stats spool;
  uint64_t lag() const { return head > copied ? head - copied : 0; }
};

// "2.1 MiB behind the server (6% of the 32 MiB log); spool 12 MiB, 8 MiB on disk"
std::string DescribeRedoLag(const RedoLagSample& s);
// The warning for a lag of half the capacity or more, else "".
std::string RedoLagWarning(const RedoLagSample& s);

class RedoLagMonitor {
 public:
  struct Sources {
    std::function<Result<uint64_t>()> server_lsn;  // from the monitor's thread
    std::function<uint64_t()> copied_lsn;
    std::function<util::Spool::Stats()> spool;
  };
  RedoLagMonitor(uint64_t capacity, Sources sources, util::Progress* progress,
                 std::chrono::milliseconds interval);
  ~RedoLagMonitor();  // stops the thread
  RedoLagMonitor(const RedoLagMonitor&) = delete;
  RedoLagMonitor& operator=(const RedoLagMonitor&) = delete;

  void Start();
  void Stop();
  // Takes one sample now (the thread calls this every interval).
  void Sample();
  uint64_t max_lag() const;
  uint64_t warnings() const;
  // "largest redo lag 3.1 MiB (9% of the 32 MiB log) at 4.2 MiB/s of redo; spool peak 40 MiB (32 MiB on
  // disk)"
  std::string Summary() const;

 private:
  void Run();
  const uint64_t capacity_;
  const Sources src_;
  util::Progress* const progress_;
  const std::chrono::milliseconds interval_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t max_lag_ = 0;
  uint64_t max_rate_ = 0;
  uint64_t warnings_ = 0;
  bool head_failed_ = false;  // the status variable could not be read: reported once
  uint64_t last_head_ = 0;
  std::chrono::steady_clock::time_point last_time_{};
  std::chrono::steady_clock::time_point last_warning_{};
  double rate_ = 0;
  std::thread thread_;
};

}  // namespace xbak::backup
