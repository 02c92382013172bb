// The writing side of `xbcloud get`: verified bytes wait in one queue per
// output, by their object's place in that output's order, and one writer
// thread per output takes them in that order and writes them to its fd.
// Internal to `xbcloud get` (get.cc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::cloud {

// Verified bytes of an object for its output's writer, in the pieces they
// were fetched in: all of the object, or (checked piece by piece) its next
// pieces.
struct Ready {
  size_t index = 0;  // the object
  std::vector<std::string> parts;
  bool last = true;  // the object's last bytes
};

// What is ready for one output, by the object's place in that output's
// order. Thread-safe.
class OutputQueue {
 public:
  void Push(size_t pos, Ready r);
  // Waits for the next bytes of object `pos`; false when cancelled.
  bool Take(size_t pos, Ready* out);
  void Cancel();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, std::deque<Ready>> ready_;
  bool cancelled_ = false;
};

// A writer thread's work: writes the `count` objects of `queue` in order to
// `fd` (blocking; `name` describes it in messages), adding what it writes to
// `written` and handing each Ready's buffers back through `written_back`
// (from this thread) once written. Ends at the first error or when the
// queue is cancelled (kCancelled).
Status WriteOutput(OutputQueue& queue, size_t count, int fd, const std::string& name,
                   std::atomic<uint64_t>& written, const std::function<void(Ready)>& written_back);

}  // namespace xbak::cloud
