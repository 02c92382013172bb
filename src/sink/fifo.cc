#include "xbak/sink/fifo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace xbak::sink {
namespace {

using Clock = std::chrono::steady_clock;

// How often the writer retries a FIFO that has no reader yet, and the reader
// looks for FIFOs that do not exist yet: every 1 ms at first, doubling up to
// 50 ms. The other side usually appears within milliseconds (a flat 50 ms
// made every multi-FIFO backup start 50 ms late); one that takes long is not
// spun on.
class Poller {
 public:
  explicit Poller(Clock::time_point deadline) : deadline_(deadline) {}
  void Sleep() {
    std::this_thread::sleep_until(std::min(Clock::now() + interval_, deadline_));
    interval_ = std::min(interval_ * 2, kMaxInterval);
  }

 private:
  static constexpr std::chrono::milliseconds kMaxInterval{50};
  const Clock::time_point deadline_;
  std::chrono::milliseconds interval_{1};
};

std::string Seconds(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }

// Removes the FIFOs a failed OpenFifosForWriting created, so that a retry (or
// Percona's writer, which refuses existing FIFOs) starts clean.
class CreatedFifos {
 public:
  ~CreatedFifos() {
    if (keep_) return;
    for (const auto& p : paths_) ::unlink(p.c_str());
  }
  void Add(std::string p) { paths_.push_back(std::move(p)); }
  void Keep() { keep_ = true; }

 private:
  std::vector<std::string> paths_;
  bool keep_ = false;
};

Status NotAFifo(const std::string& path) {
  return Error(ErrorCode::kAlreadyExists,
               path + " exists and is not a FIFO; remove it or choose another --fifo-dir");
}

// Checks that an existing `path` is a FIFO.
Status CheckFifo(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return ErrnoError("stat", path, errno);
  if (!S_ISFIFO(st.st_mode)) return NotAFifo(path);
  return Status::Ok();
}

Status ValidateCount(int n) {
  if (n < 1) {
    return Error(ErrorCode::kInvalidArgument, "--fifo-streams must be at least 1, got " + std::to_string(n));
  }
  return Status::Ok();
}

Status MakeBlocking(int fd, const std::string& path) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return ErrnoError("fcntl", path, errno);
  return Status::Ok();
}

}  // namespace

std::string FifoPath(const std::string& dir, int index) {
  return util::JoinPath(dir, "thread_" + std::to_string(index));
}

Result<std::vector<util::UniqueFd>> OpenFifosForWriting(const std::string& dir, int n,
                                                        std::chrono::seconds timeout) {
  XBAK_RETURN_IF_ERROR(ValidateCount(n));
  XBAK_RETURN_IF_ERROR(util::MakeDirs(dir));
  CreatedFifos created;
  for (int i = 0; i < n; ++i) {
    const std::string path = FifoPath(dir, i);
    if (::mkfifo(path.c_str(), 0600) == 0) {
      created.Add(path);
    } else if (errno == EEXIST) {
      XBAK_RETURN_IF_ERROR(CheckFifo(path));  // a leftover FIFO is as good as a new one
    } else {
      return ErrnoError("mkfifo", path, errno);
    }
  }

  // One deadline for all: the operator's --fifo-timeout is how long the
  // backup may wait for its readers, not that times n.
  const auto deadline = Clock::now() + timeout;
  std::vector<util::UniqueFd> fds;
  for (int i = 0; i < n; ++i) {
    const std::string path = FifoPath(dir, i);
    Poller poller(deadline);
    while (true) {
      // O_NONBLOCK: open fails with ENXIO while there is no reader instead of
      // blocking, so the wait can be bounded.
      int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
      if (fd >= 0) {
        util::UniqueFd owned(fd);
        struct stat st {};
        if (::fstat(fd, &st) != 0) return ErrnoError("stat", path, errno);
        if (!S_ISFIFO(st.st_mode)) return NotAFifo(path);  // replaced under us
        // Blocking from now on: a full pipe must wait for the reader, not fail.
        XBAK_RETURN_IF_ERROR(MakeBlocking(fd, path));
        fds.push_back(std::move(owned));
        break;
      }
      if (errno == EINTR) continue;
      if (errno != ENXIO) return ErrnoError("open", path, errno);
      if (Clock::now() >= deadline) {
        return Error(ErrorCode::kTimeout, "no reader opened fifo " + path + " within " + Seconds(timeout) +
                                              " (start the reader with the same --fifo-streams=" +
                                              std::to_string(n) + " and --fifo-dir=" + dir + ")");
      }
      poller.Sleep();
    }
  }
  created.Keep();
  return fds;
}

namespace {

// The writer creates the FIFOs, so the reader may well start first. Each
// one is then pinned with an O_PATH fd: it names the inode without opening
// the FIFO (it counts as neither reader nor writer), so a FIFO that the
// writer unlinks or replaces meanwhile cannot make us wait on a new one or
// lose the way to release the old one.
Result<std::vector<util::UniqueFd>> PinFifos(const std::string& dir, int n, Clock::time_point deadline,
                                             std::chrono::seconds timeout) {
  std::vector<util::UniqueFd> pins;
  for (int i = 0; i < n; ++i) {
    const std::string path = FifoPath(dir, i);
    Poller poller(deadline);
    while (true) {
      int fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        util::UniqueFd pin(fd);
        struct stat st {};
        if (::fstat(fd, &st) != 0) return ErrnoError("stat", path, errno);
        if (!S_ISFIFO(st.st_mode)) return NotAFifo(path);
        pins.push_back(std::move(pin));
        break;
      }
      if (errno == EINTR) continue;
      if (errno != ENOENT) return ErrnoError("open", path, errno);
      if (Clock::now() >= deadline) {
        return Error(ErrorCode::kTimeout, "fifo " + path + " did not appear within " + Seconds(timeout) +
                                              " (is the backup running with --fifo-dir=" + dir + "?)");
      }
      poller.Sleep();
    }
  }
  return pins;
}

// A blocking open for reading returns exactly when a writer opens the FIFO,
// which is the event to wait for; a non-blocking one would return at once
// and the first read would then see end-of-file if the writer is not there
// yet. The blocking opens run on helper threads so that all FIFOs wait at
// once (the writer may open them in any order) and the wait can be bounded.
Result<std::vector<util::UniqueFd>> OpenPinnedForReading(const std::string& dir,
                                                         const std::vector<util::UniqueFd>& pins,
                                                         Clock::time_point deadline,
                                                         std::chrono::seconds timeout) {
  const int n = static_cast<int>(pins.size());
  struct Slot {
    std::string path;  // for messages
    std::string via;   // /proc/self/fd/<pin>: the pinned inode
    int fd = -1;
    int err = 0;
    bool done = false;
  };
  std::vector<Slot> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i) {
    slots[i].path = FifoPath(dir, i);
    slots[i].via = "/proc/self/fd/" + std::to_string(pins[i].get());
    threads.emplace_back([&, i] {
      int fd;
      do {
        fd = ::open(slots[i].via.c_str(), O_RDONLY | O_CLOEXEC);
      } while (fd < 0 && errno == EINTR);
      int err = fd < 0 ? errno : 0;
      std::lock_guard<std::mutex> lock(mu);
      slots[i].fd = fd;
      slots[i].err = err;
      slots[i].done = true;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_until(lock, deadline, [&] {
      return std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return s.done; });
    });
  }
  // Releases the opens still blocked: opening the write side ourselves is
  // the one thing that ends a blocking FIFO open. A thread that has not
  // reached open() yet is no reader (our open fails with ENXIO) and would
  // not notice a writer that came and went before it, so retry until done.
  Status timed_out;
  for (int i = 0; i < n; ++i) {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (slots[i].done) break;
      }
      if (timed_out.ok()) {
        timed_out = Error(ErrorCode::kTimeout,
                          "no writer opened fifo " + slots[i].path + " within " + Seconds(timeout) +
                              " (is the backup running with --fifo-streams=" + std::to_string(n) + "?)");
      }
      int w = ::open(slots[i].via.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (w >= 0) ::close(w);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto& t : threads) t.join();

  std::vector<util::UniqueFd> fds;
  Status first = timed_out;
  for (Slot& s : slots) {
    util::UniqueFd fd(s.fd);  // owned either way: closed on any failure below
    if (first.ok() && s.fd < 0) first = ErrnoError("open", s.path, s.err);
    fds.push_back(std::move(fd));
  }
  if (!first.ok()) return first;
  return fds;
}

}  // namespace

Result<std::vector<util::UniqueFd>> OpenFifosForReading(const std::string& dir, int n,
                                                        std::chrono::seconds timeout) {
  XBAK_RETURN_IF_ERROR(ValidateCount(n));
  const auto deadline = Clock::now() + timeout;
  XBAK_ASSIGN_OR_RETURN(const std::vector<util::UniqueFd> pins, PinFifos(dir, n, deadline, timeout));
  return OpenPinnedForReading(dir, pins, deadline, timeout);
}

Result<std::unique_ptr<BufferedStreamSink>> MakeFifoSink(const std::string& dir, int n,
                                                         std::chrono::seconds timeout, size_t queue_chunks) {
  XBAK_ASSIGN_OR_RETURN(std::vector<util::UniqueFd> owned, OpenFifosForWriting(dir, n, timeout));
  StreamBufferOptions options;
  options.queue_chunks = queue_chunks;
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    fds.push_back(owned[i].get());
    options.names.push_back("fifo " + FifoPath(dir, i));
  }
  options.owned = std::move(owned);
  return MakeBufferedXbstreamSink(std::move(fds), std::move(options));
}

}  // namespace xbak::sink
