#include "xbak/sink/xbstream_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <set>
#include <string>

#include "xbak/stream/xbstream.h"

namespace xbak {
namespace {

class XbstreamFile;

// Everything the sink and its files share. Files hold a shared_ptr to it, so a
// file may outlive the Sink object without dangling.
struct Shared {
  std::vector<std::unique_ptr<XbstreamWriter>> writers;
  std::mutex mu;
  std::set<std::string> paths;             // guarded by mu: every path ever created
  std::set<XbstreamFile*> open;            // guarded by mu: for Flush
  std::vector<size_t> open_per_writer;     // guarded by mu
  size_t next = 0;                         // guarded by mu: round-robin tie-break
};

class XbstreamFile : public SinkFile {
 public:
  XbstreamFile(std::shared_ptr<Shared> shared, size_t writer, std::string path)
      : shared_(std::move(shared)), writer_(*shared_->writers[writer]), index_(writer), path_(std::move(path)) {}

  ~XbstreamFile() override { Deregister(); }
  XbstreamFile(const XbstreamFile&) = delete;
  XbstreamFile& operator=(const XbstreamFile&) = delete;

  Status Write(const void* data, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error(ErrorCode::kInternal, "write to closed stream file " + path_);
    const auto* p = static_cast<const uint8_t*>(data);
    if (buf_.size() + n < kXbstreamSinkCoalesceBytes) {
      if (buf_.capacity() == 0) buf_.reserve(kXbstreamSinkCoalesceBytes);
      buf_.insert(buf_.end(), p, p + n);
      return Status::Ok();
    }
    XBAK_RETURN_IF_ERROR(FlushLocked());
    if (n >= kXbstreamSinkCoalesceBytes) {
      // Big enough to be a chunk on its own: no copy.
      XBAK_RETURN_IF_ERROR(writer_.WritePayload(path_, offset_, p, n));
      offset_ += n;
      return Status::Ok();
    }
    if (buf_.capacity() == 0) buf_.reserve(kXbstreamSinkCoalesceBytes);
    buf_.insert(buf_.end(), p, p + n);
    return Status::Ok();
  }

  Status Close() override {
    Status st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return Error(ErrorCode::kInternal, "stream file " + path_ + " closed twice");
      closed_ = true;
      st = FlushLocked();
      if (st.ok()) st = writer_.WriteEof(path_);
      buf_ = std::vector<uint8_t>();  // give the 1 MiB back now, not at destruction
    }
    // Outside mu_: Flush() locks the sink first and then the file.
    Deregister();
    return st;
  }

  // Emits buffered bytes as a chunk (Sink::Flush calls it from another thread).
  Status FlushLocked() {
    if (buf_.empty()) return Status::Ok();
    XBAK_RETURN_IF_ERROR(writer_.WritePayload(path_, offset_, buf_.data(), buf_.size()));
    offset_ += buf_.size();
    buf_.clear();
    return Status::Ok();
  }
  std::mutex& mu() { return mu_; }

 private:
  void Deregister() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->open.erase(this) != 0) --shared_->open_per_writer[index_];
  }

  std::shared_ptr<Shared> shared_;
  XbstreamWriter& writer_;
  const size_t index_;
  const std::string path_;
  std::mutex mu_;  // Write is single-threaded per file, but Sink::Flush is not
  std::vector<uint8_t> buf_;
  uint64_t offset_ = 0;
  bool closed_ = false;
};

class XbstreamSink : public Sink {
 public:
  explicit XbstreamSink(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  Result<std::unique_ptr<SinkFile>> Create(const std::string& relpath) override {
    Result<std::string> norm = NormalizeXbstreamPath(relpath);
    if (!norm.ok()) {
      return Error(ErrorCode::kInvalidArgument, "refusing unsafe backup path: " + norm.status().message());
    }
    const std::string& path = norm.value();
    if (path.size() > kXbstreamMaxWritePathLen) {
      return Error(ErrorCode::kUnsupported, "cannot stream " + path + ": paths longer than " +
                                                std::to_string(kXbstreamMaxWritePathLen) +
                                                " bytes cannot be extracted by mbstream");
    }
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->paths.insert(path).second) {
      // A second copy would restart at offset 0 and break extraction.
      return Error(ErrorCode::kAlreadyExists, "backup file " + path + " was already written to the stream");
    }
    // Least-loaded fd: fewest files in flight (they are what is still to
    // come), then fewest bytes so far, then round-robin.
    const size_t n = shared_->writers.size();
    size_t best = shared_->next % n;
    for (size_t k = 0; k < n; ++k) {
      size_t i = (shared_->next + k) % n;
      auto key = [&](size_t j) {
        return std::make_pair(shared_->open_per_writer[j], shared_->writers[j]->bytes_written());
      };
      if (key(i) < key(best)) best = i;
    }
    shared_->next = best + 1;
    auto file = std::make_unique<XbstreamFile>(shared_, best, path);
    shared_->open.insert(file.get());
    ++shared_->open_per_writer[best];
    return std::unique_ptr<SinkFile>(std::move(file));
  }

  Status Flush() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      for (XbstreamFile* f : shared_->open) {
        std::lock_guard<std::mutex> flock(f->mu());
        XBAK_RETURN_IF_ERROR(f->FlushLocked());
      }
    }
    // Chunks are written straight to the fd, so only a regular file target has
    // anything left to make durable; a pipe's durability is the reader's job.
    for (const auto& w : shared_->writers) {
      struct stat st {};
      if (::fstat(w->fd(), &st) == 0 && S_ISREG(st.st_mode) && ::fdatasync(w->fd()) != 0) {
        return ErrnoError("fsync", w->description(), errno);
      }
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    const auto& ws = shared_->writers;
    if (ws.size() == 1) return "xbstream on fd " + std::to_string(ws[0]->fd());
    std::string s = "xbstream on " + std::to_string(ws.size()) + " fds (";
    for (size_t i = 0; i < ws.size(); ++i) s += (i ? ", " : "") + std::to_string(ws[i]->fd());
    return s + ")";
  }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeXbstreamSink(std::vector<int> fds) {
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "xbstream sink needs at least one output fd");
  auto shared = std::make_shared<Shared>();
  for (int fd : fds) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0) return ErrnoError("xbstream output", "fd " + std::to_string(fd), errno);
    if ((fl & O_ACCMODE) == O_RDONLY) {
      return Error(ErrorCode::kInvalidArgument, "xbstream output fd " + std::to_string(fd) + " is not open for writing");
    }
    shared->writers.push_back(std::make_unique<XbstreamWriter>(fd, "xbstream output (fd " + std::to_string(fd) + ")"));
  }
  shared->open_per_writer.assign(fds.size(), 0);
  return std::unique_ptr<Sink>(std::make_unique<XbstreamSink>(std::move(shared)));
}

}  // namespace xbak
