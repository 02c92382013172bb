#include "get_output.h"

#include <unistd.h>

#include <cerrno>

#include "xbak/util/file.h"

namespace xbak::cloud {
namespace {

Status WriteAll(int fd, const std::string& name, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) return Error(ErrorCode::kIo, "the reader of " + name + " went away (broken pipe)");
      return ErrnoError("write", name, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

void OutputQueue::Push(size_t pos, Ready r) {
  {
    std::lock_guard<std::mutex> l(mu_);
    ready_[pos].push_back(std::move(r));
  }
  cv_.notify_all();
}

bool OutputQueue::Take(size_t pos, Ready* out) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return cancelled_ || !ready_[pos].empty(); });
  if (cancelled_) return false;
  auto it = ready_.find(pos);
  *out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) ready_.erase(it);
  return true;
}

void OutputQueue::Cancel() {
  {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

Status WriteOutput(OutputQueue& queue, size_t count, int fd, const std::string& name,
                   std::atomic<uint64_t>& written, const std::function<void(Ready)>& written_back) {
  // Into a pipe (`| xbak -x`, or a named pipe `xbak --restore` reads): a
  // 1 MiB buffer, not 64 KiB, so that writer and reader wake each other 16
  // times less often.
  util::EnlargePipe(fd);
  Status s;
  for (size_t pos = 0; pos < count && s.ok(); pos++) {
    Ready r;  // verified
    do {
      if (!queue.Take(pos, &r)) return Error(ErrorCode::kCancelled, "cancelled");
      for (const auto& part : r.parts) {
        s = WriteAll(fd, name, part.data(), part.size());
        if (!s.ok()) break;
        written += part.size();
      }
      bool last = r.last;
      written_back(std::move(r));
      if (last) break;
    } while (s.ok());
  }
  return s;
}

}  // namespace xbak::cloud
