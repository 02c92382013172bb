#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

#include "xbak/stream/xbstream.h"
#include "xbak/util/file.h"

namespace xbak::stream {
namespace {

// Blocks SIGPIPE in this thread for its lifetime and, if a write under it hit
// EPIPE, swallows the SIGPIPE that write raised. SIGPIPE from a pipe write is
// directed at the writing thread, so a per-thread mask is enough and no
// process-wide handler (global state) is touched.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_) == 0;
  }
  ~SigpipeGuard() {
    if (!blocked_) return;
    if (got_epipe_ && !was_pending_) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_set_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  void NoteEpipe() { got_epipe_ = true; }

 private:
  sigset_t pipe_set_{}, old_{};
  bool was_pending_ = false, blocked_ = false, got_epipe_ = false;
};

}  // namespace

XbstreamWriter::XbstreamWriter(int fd, std::string description)
    : fd_(fd), description_(std::move(description)) {}

Status XbstreamWriter::CheckPath(std::string_view path) const {
  if (path.empty() || path.size() > kXbstreamMaxWritePathLen) {
    return Error(ErrorCode::kUnsupported, "cannot stream '" + std::string(path.substr(0, 200)) +
                                              "': path length " + std::to_string(path.size()) +
                                              " is outside 1.." + std::to_string(kXbstreamMaxWritePathLen) +
                                              " (mbstream's limit)");
  }
  return Status::Ok();
}

Status XbstreamWriter::WritePayload(std::string_view path, uint64_t offset, const void* data, size_t n) {
  XBAK_RETURN_IF_ERROR(CheckPath(path));
  const auto* p = static_cast<const uint8_t*>(data);
  do {
    size_t len = std::min(n, kXbstreamMaxPayloadLen);
    // Header and CRC are built outside the lock; only the write serialises.
    std::string header = EncodePayloadChunkHeader(path, len, offset, XbstreamCrc32(p, len));
    XBAK_RETURN_IF_ERROR(WriteChunk(header, p, len));
    p += len;
    offset += len;
    n -= len;
  } while (n > 0);
  return Status::Ok();
}

Status XbstreamWriter::WritePayload(std::string_view path, uint64_t offset, const void* data, size_t n,
                                    uint32_t crc) {
  XBAK_RETURN_IF_ERROR(CheckPath(path));
  if (n > kXbstreamMaxPayloadLen) return Error(ErrorCode::kInternal, "xbstream chunk above its size limit");
  return WriteChunk(EncodePayloadChunkHeader(path, n, offset, crc), data, n);
}

Status XbstreamWriter::WriteEof(std::string_view path) {
  XBAK_RETURN_IF_ERROR(CheckPath(path));
  return WriteChunk(EncodeEofChunk(path), nullptr, 0);
}

Status XbstreamWriter::WriteChunk(const std::string& header, const void* payload, size_t n) {
  iovec iov[2];
  iov[0].iov_base = const_cast<char*>(header.data());
  iov[0].iov_len = header.size();
  iov[1].iov_base = const_cast<void*>(payload);
  iov[1].iov_len = n;
  int iovcnt = n > 0 ? 2 : 1;
  iovec* cur = iov;
  const size_t total = header.size() + n;

  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  SigpipeGuard guard;
  while (iovcnt > 0) {
    ssize_t w = ::writev(fd_, cur, iovcnt);
    if (w < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      if (err == EPIPE) {
        guard.NoteEpipe();
        broken_ = Error(ErrorCode::kIo, "write " + description_ + ": stream reader went away (broken pipe)");
      } else {
        broken_ = ErrnoError("write", description_, err);
      }
      return broken_;
    }
    // Advance past what was written; writev may stop anywhere, e.g. when a
    // pipe's buffer fills.
    auto done = static_cast<size_t>(w);
    util::AdvanceIovec(&cur, &iovcnt, done);
  }
  bytes_written_.fetch_add(total, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace xbak::stream
