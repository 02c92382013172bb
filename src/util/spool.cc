#include "xbak/util/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "xbak/util/progress.h"

namespace xbak::util {
Spool::Spool(Options options) : o_(std::move(options)) {
  dir_ = o_.tmpdir;
  if (dir_.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir_ = (t != nullptr && *t != '\0') ? t : "/tmp";
  }
}

Spool::~Spool() {
  Abort();
  if (thread_.joinable()) thread_.join();
}

Status Spool::Start(Writer writer) {
  if (thread_.joinable() || !writer) return Error(ErrorCode::kInternal, "Spool::Start: bad call");
  writer_ = std::move(writer);
  thread_ = std::thread([this] { Drain(); });
  return Status::Ok();
}

void Spool::Fail(Status st) {
  if (error_.ok()) error_ = std::move(st);
  cv_.notify_all();
}

Status Spool::Append(const uint8_t* data, size_t n) {
  const size_t chunk = std::max<size_t>(o_.chunk, 4096);
  while (n > 0) {
    size_t take = std::min(n, chunk);
    bool to_disk = false;
    {
      std::lock_guard lk(mu_);
      if (!error_.ok()) return error_;
      if (aborted_) return Error(ErrorCode::kCancelled, "the " + o_.what + " spool was aborted");
      if (closed_) return Error(ErrorCode::kInternal, "Spool::Append after Finish");
      if (memory_ + take <= o_.memory_limit) {
        if (!queue_.empty() && !queue_.back().on_disk && queue_.back().mem.size() + take <= chunk) {
          queue_.back().mem.insert(queue_.back().mem.end(), data, data + take);
        } else {
          Segment s;
          s.mem.reserve(std::min<size_t>(chunk, std::max<size_t>(take, 64 * 1024)));
          s.mem.assign(data, data + take);
          queue_.push_back(std::move(s));
        }
        memory_ += take;
        stats_.appended += take;
        stats_.pending += take;
        stats_.peak_pending = std::max(stats_.peak_pending, stats_.pending);
        cv_.notify_all();
      } else {
        to_disk = true;
      }
    }
    if (to_disk) XBAK_RETURN_IF_ERROR(Spill(data, take));
    data += take;
    n -= take;
  }
  return Status::Ok();
}

Status Spool::OpenSpillFile() {
  // O_TMPFILE: the file has no name, so no crash or kill can leave it behind.
  int fd = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // File systems without O_TMPFILE: a named file, unlinked at once.
    std::string tmpl = dir_ + "/xbak-spool-XXXXXX";
    fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(tmpl.c_str());
  }
  if (fd < 0) {
    return ErrnoError("cannot create the " + o_.what + " spool file in --tmpdir", dir_, errno);
  }
  file_.emplace(File::Adopt(UniqueFd(fd), dir_ + "/(" + o_.what + " spool)"));
  return Status::Ok();
}

Status Spool::Spill(const uint8_t* data, size_t n) {
  {
    std::lock_guard lk(mu_);
    if (o_.disk_limit != 0 && stats_.on_disk + n > o_.disk_limit) {
      Status st(ErrorCode::kNoSpace, "the " + o_.what + " spool in " + dir_ + " reached its limit of " +
                                         HumanBytes(o_.disk_limit) + " pending on disk (the output is " +
                                         HumanBytes(stats_.pending) +
                                         " behind); the output is too slow for the "
                                         "server's write rate, or give --tmpdir more room");
      Fail(st);
      return st;
    }
  }
  if (!file_) {
    Status st = OpenSpillFile();
    if (!st.ok()) {
      std::lock_guard lk(mu_);
      Fail(st);
      return st;
    }
  }
  Status st = file_->PWrite(data, n, file_end_);
  if (!st.ok()) {
    std::lock_guard lk(mu_);
    Status named(st.code(), "the " + o_.what + " spool in " + dir_ + " could not take " + std::to_string(n) +
                                " more bytes (" + HumanBytes(stats_.on_disk) +
                                " pending on disk, the output " + HumanBytes(stats_.pending) +
                                " behind): " + st.message() +
                                "; free space there or point --tmpdir at a larger file system");
    Fail(named);
    return named;
  }
  std::lock_guard lk(mu_);
  if (!error_.ok()) return error_;
  if (!queue_.empty() && queue_.back().on_disk && queue_.back().off + queue_.back().len == file_end_ &&
      queue_.back().len + n <= o_.chunk * 8) {
    queue_.back().len += n;
  } else {
    Segment s;
    s.on_disk = true;
    s.off = file_end_;
    s.len = n;
    queue_.push_back(std::move(s));
  }
  file_end_ += n;
  stats_.appended += n;
  stats_.pending += n;
  stats_.on_disk += n;
  stats_.spilled += n;
  stats_.peak_pending = std::max(stats_.peak_pending, stats_.pending);
  stats_.peak_on_disk = std::max(stats_.peak_on_disk, stats_.on_disk);
  cv_.notify_all();
  return Status::Ok();
}

Status Spool::WriteSegment(const Segment& s, std::vector<uint8_t>* buf) {
  if (!s.on_disk) return writer_(s.mem.data(), s.mem.size());
  const size_t chunk = std::max<size_t>(o_.chunk, 4096);
  buf->resize(chunk);
  uint64_t done = 0;
  while (done < s.len) {
    {
      std::lock_guard lk(mu_);
      if (aborted_) return Error(ErrorCode::kCancelled, "the " + o_.what + " spool was aborted");
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, s.len - done));
    XBAK_ASSIGN_OR_RETURN(size_t got, file_->PRead(buf->data(), want, s.off + done));
    if (got != want) {
      return Error(ErrorCode::kIo, "the " + o_.what + " spool file in " + dir_ + " lost data at offset " +
                                       std::to_string(s.off + done));
    }
    XBAK_RETURN_IF_ERROR(writer_(buf->data(), got));
    done += got;
  }
  // Give the space back: the file only ever holds what is still pending.
  // Best effort: a file system without hole punching just keeps it until exit.
  file_->PunchHole(s.off, s.len);
  return Status::Ok();
}

void Spool::Drain() {
  std::vector<uint8_t> buf;
  for (;;) {
    Segment s;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [this] { return (!queue_.empty() && !paused_) || closed_ || aborted_ || !error_.ok(); });
      if (aborted_ || !error_.ok()) break;
      if (queue_.empty()) break;  // closed and everything written
      s = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st = WriteSegment(s, &buf);
    std::lock_guard lk(mu_);
    uint64_t n = s.on_disk ? s.len : s.mem.size();
    if (!s.on_disk) memory_ -= n;
    if (s.on_disk) stats_.on_disk -= n;
    if (!st.ok()) {
      Fail(st.With("writing the " + o_.what));
      break;
    }
    stats_.written += n;
    stats_.pending -= n;
  }
  // Whatever is left will never be written: free it now.
  std::lock_guard lk(mu_);
  for (auto& s : queue_) {
    if (!s.on_disk) memory_ -= s.mem.size();
  }
  queue_.clear();
  cv_.notify_all();
}

Status Spool::Finish() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
    paused_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lk(mu_);
  if (!error_.ok()) return error_;
  if (aborted_) return Error(ErrorCode::kCancelled, "the " + o_.what + " spool was aborted");
  if (!queue_.empty()) return Error(ErrorCode::kInternal, "the " + o_.what + " spool was never started");
  return Status::Ok();
}

void Spool::Abort() {
  std::lock_guard lk(mu_);
  aborted_ = true;
  closed_ = true;
  paused_ = false;
  cv_.notify_all();
}

void Spool::Pause(bool paused) {
  std::lock_guard lk(mu_);
  paused_ = paused && !closed_;
  cv_.notify_all();
}

Spool::Stats Spool::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace xbak::util
