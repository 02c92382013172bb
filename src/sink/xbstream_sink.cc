#include "xbak/sink/xbstream_sink.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "xbak/sink/fifo.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/file.h"

namespace xbak::sink {
namespace {

// Where the chunks of one output fd go: straight onto the fd from the calling
// thread (DirectOutput), or through a bounded queue and a writer thread
// (QueuedOutput). Thread-safe.
class Output {
 public:
  virtual ~Output() = default;
  // Writes (or queues) n bytes of `path` at `offset`.
  virtual Status Payload(const std::string& path, uint64_t offset, const uint8_t* p, size_t n) = 0;
  // Same for a whole buffer, which the output may take over instead of
  // copying; *buf is left empty either way.
  virtual Status Payload(const std::string& path, uint64_t offset, std::vector<uint8_t>* buf) = 0;
  // n (<= util::kZeroBlockLen) zero bytes of `path` at `offset`, from the
  // shared zero block: neither copied nor summed.
  virtual Status Zeros(const std::string& path, uint64_t offset, size_t n) = 0;
  virtual Status Eof(const std::string& path) = 0;
  // Returns once everything accepted so far has reached the fd.
  virtual Status Drain() = 0;
  // Bytes that reached the fd: the sink's load measure, so that a slow reader
  // is given fewer new files.
  virtual uint64_t bytes_written() const = 0;
  virtual StreamBufferStats Stats() const = 0;
  virtual int fd() const = 0;
  virtual const std::string& name() const = 0;
};

class DirectOutput : public Output {
 public:
  DirectOutput(int fd, std::string name)
      : writer_(fd, "xbstream output (" + name + ")"), name_(std::move(name)) {}
  Status Payload(const std::string& path, uint64_t offset, const uint8_t* p, size_t n) override {
    return writer_.WritePayload(path, offset, p, n);
  }
  Status Payload(const std::string& path, uint64_t offset, std::vector<uint8_t>* buf) override {
    Status st = writer_.WritePayload(path, offset, buf->data(), buf->size());
    buf->clear();  // keeps the capacity: the file reuses its buffer
    return st;
  }
  Status Zeros(const std::string& path, uint64_t offset, size_t n) override {
    return writer_.WritePayload(path, offset, util::ZeroBlock(), n, stream::XbstreamZerosCrc32(n));
  }
  Status Eof(const std::string& path) override { return writer_.WriteEof(path); }
  Status Drain() override { return Status::Ok(); }
  uint64_t bytes_written() const override { return writer_.bytes_written(); }
  StreamBufferStats Stats() const override {
    StreamBufferStats s;
    s.written_bytes = writer_.bytes_written();
    return s;
  }
  int fd() const override { return writer_.fd(); }
  const std::string& name() const override { return name_; }

 private:
  stream::XbstreamWriter writer_;
  const std::string name_;
};

// Most header bytes one queued chunk can carry.
constexpr size_t kMaxChunkHeaderLen =
    stream::kXbstreamFixedHeaderLen + stream::kXbstreamMaxWritePathLen + stream::kXbstreamPayloadHeaderLen;

class QueuedOutput : public Output {
 public:
  QueuedOutput(int fd, std::string name, size_t max_items)
      : fd_(fd), name_(std::move(name)), max_items_(max_items) {
    util::EnlargePipe(fd_);
    thread_ = std::thread([this] { Run(); });
  }
  ~QueuedOutput() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    // The thread writes out what is still queued first (a Sink user that
    // skipped Flush still gets what it wrote), or stops at the first error.
    thread_.join();
  }
  QueuedOutput(const QueuedOutput&) = delete;
  QueuedOutput& operator=(const QueuedOutput&) = delete;

  Status Payload(const std::string& path, uint64_t offset, const uint8_t* p, size_t n) override {
    // Copies in pieces no bigger than a coalesced chunk, so every queue entry
    // has the same size bound and bound_bytes holds for any write size.
    do {
      size_t len = std::min(n, kXbstreamSinkCoalesceBytes);
      XBAK_RETURN_IF_ERROR(Push(path, offset, std::vector<uint8_t>(p, p + len)));
      p += len;
      offset += len;
      n -= len;
    } while (n > 0);
    return Status::Ok();
  }
  Status Payload(const std::string& path, uint64_t offset, std::vector<uint8_t>* buf) override {
    if (buf->size() > kXbstreamSinkCoalesceBytes) {
      Status st = Payload(path, offset, buf->data(), buf->size());
      buf->clear();
      return st;
    }
    std::vector<uint8_t> data = std::move(*buf);  // zero-copy hand-over
    buf->clear();
    return Push(path, offset, std::move(data));
  }
  Status Zeros(const std::string& path, uint64_t offset, size_t n) override {
    XBAK_RETURN_IF_ERROR(CheckPath(path));
    Item item{stream::EncodePayloadChunkHeader(path, n, offset, stream::XbstreamZerosCrc32(n)), {}};
    item.zeros = n;
    return Enqueue(std::move(item));
  }
  Status Eof(const std::string& path) override {
    XBAK_RETURN_IF_ERROR(CheckPath(path));
    return Enqueue(Item{stream::EncodeEofChunk(path), {}});
  }
  Status Drain() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return items_ == 0 || !error_.ok(); });
    return error_;
  }
  uint64_t bytes_written() const override { return written_.load(std::memory_order_relaxed); }
  StreamBufferStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    StreamBufferStats s;
    s.buffered_bytes = buffered_;
    s.peak_buffered_bytes = peak_;
    s.bound_bytes = max_items_ * (kXbstreamSinkCoalesceBytes + kMaxChunkHeaderLen);
    s.written_bytes = written_.load(std::memory_order_relaxed);
    return s;
  }
  int fd() const override { return fd_; }
  const std::string& name() const override { return name_; }

 private:
  struct Item {
    std::string header;
    std::vector<uint8_t> payload;
    size_t zeros = 0;  // or this many bytes of the shared zero block (not held in memory)
    size_t size() const { return header.size() + payload.size(); }
  };

  static Status CheckPath(const std::string& path) {
    if (path.empty() || path.size() > stream::kXbstreamMaxWritePathLen) {
      return Error(ErrorCode::kUnsupported, "cannot stream '" + path.substr(0, 200) + "': bad path length");
    }
    return Status::Ok();
  }

  Status Push(const std::string& path, uint64_t offset, std::vector<uint8_t> data) {
    XBAK_RETURN_IF_ERROR(CheckPath(path));
    // The CRC is computed here, on the copy threads, not on the one writer.
    std::string header = stream::EncodePayloadChunkHeader(path, data.size(), offset,
                                                          stream::XbstreamCrc32(data.data(), data.size()));
    return Enqueue(Item{std::move(header), std::move(data)});
  }

  Status Enqueue(Item item) {
    std::unique_lock<std::mutex> lock(mu_);
    // items_ counts the entry being written too, so at most max_items_
    // chunks are ever held in memory.
    cv_.wait(lock, [&] { return items_ < max_items_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    buffered_ += item.size();
    peak_ = std::max(peak_, buffered_);
    ++items_;
    queue_.push_back(std::move(item));
    lock.unlock();
    cv_.notify_all();
    return Status::Ok();
  }

  void Run() {
    // Blocked for this thread's whole life: a reader that goes away gives
    // EPIPE here, and the SIGPIPE raised for this thread stays pending
    // until the thread ends, when it is discarded. No process-wide handler.
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
      if (queue_.empty()) return;  // stop_ and nothing left
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Status st = WriteItem(item);
      lock.lock();
      buffered_ -= item.size();
      --items_;
      if (!st.ok()) {
        error_ = st;
        // Nothing queued can reach the reader any more: free it now.
        for (const Item& i : queue_) buffered_ -= i.size();
        items_ -= queue_.size();
        queue_.clear();
        lock.unlock();
        cv_.notify_all();
        return;
      }
      cv_.notify_all();
    }
  }

  Status WriteItem(const Item& item) {
    iovec iov[2];
    iov[0].iov_base = const_cast<char*>(item.header.data());
    iov[0].iov_len = item.header.size();
    iov[1].iov_base = const_cast<uint8_t*>(item.zeros > 0 ? util::ZeroBlock() : item.payload.data());
    iov[1].iov_len = item.zeros > 0 ? item.zeros : item.payload.size();
    iovec* cur = iov;
    int iovcnt = iov[1].iov_len == 0 ? 1 : 2;
    while (iovcnt > 0) {
      ssize_t w = ::writev(fd_, cur, iovcnt);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EPIPE) {
          return Error(ErrorCode::kIo, "reader of " + name_ + " went away (broken pipe)");
        }
        return ErrnoError("write", name_, errno);
      }
      auto done = static_cast<size_t>(w);
      written_.fetch_add(done, std::memory_order_relaxed);
      util::AdvanceIovec(&cur, &iovcnt, done);
    }
    return Status::Ok();
  }

  const int fd_;
  const std::string name_;
  const size_t max_items_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // any change of queue_, items_, error_, stop_
  std::deque<Item> queue_;      // guarded by mu_
  size_t items_ = 0;            // guarded by mu_: queued + being written
  uint64_t buffered_ = 0;       // guarded by mu_: bytes of those items
  uint64_t peak_ = 0;           // guarded by mu_
  Status error_;                // guarded by mu_: sticky first write error
  bool stop_ = false;           // guarded by mu_
  std::atomic<uint64_t> written_{0};
  std::thread thread_;  // last: started once everything above exists
};

class XbstreamFile;

// Everything the sink and its files share. Files hold a shared_ptr to it, so a
// file may outlive the Sink object without dangling.
struct XbstreamShared {
  // Declared before `outputs`, so destroyed after them: the writer threads
  // are joined before the fds they write to are closed.
  std::vector<util::UniqueFd> owned;
  std::vector<std::unique_ptr<Output>> outputs;
  std::mutex mu;
  std::set<std::string> paths;          // guarded by mu: every path ever created
  std::set<XbstreamFile*> open;         // guarded by mu: for Flush
  std::vector<size_t> open_per_writer;  // guarded by mu
  size_t next = 0;                      // guarded by mu: round-robin tie-break
};

class XbstreamFile : public SinkFile {
 public:
  XbstreamFile(std::shared_ptr<XbstreamShared> shared, size_t writer, std::string path)
      : shared_(std::move(shared)), out_(*shared_->outputs[writer]), index_(writer), path_(std::move(path)) {}

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
      // Big enough to be a chunk on its own: no coalescing copy.
      XBAK_RETURN_IF_ERROR(out_.Payload(path_, offset_, p, n));
      offset_ += n;
      return Status::Ok();
    }
    if (buf_.capacity() == 0) buf_.reserve(kXbstreamSinkCoalesceBytes);
    buf_.insert(buf_.end(), p, p + n);
    return Status::Ok();
  }

  // Zeros in chunks of the shared zero block, after what is buffered.
  Status WriteZeros(uint64_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error(ErrorCode::kInternal, "write to closed stream file " + path_);
    if (n < kSmallZeros) {  // a few pages: coalesced like any write
      if (buf_.capacity() == 0) buf_.reserve(kXbstreamSinkCoalesceBytes);
      buf_.resize(buf_.size() + n, 0);
      return buf_.size() >= kXbstreamSinkCoalesceBytes ? FlushLocked() : Status::Ok();
    }
    XBAK_RETURN_IF_ERROR(FlushLocked());
    while (n > 0) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(n, util::kZeroBlockLen));
      XBAK_RETURN_IF_ERROR(out_.Zeros(path_, offset_, len));
      offset_ += len;
      n -= len;
    }
    return Status::Ok();
  }

  Status Close() override {
    Status st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return Error(ErrorCode::kInternal, "stream file " + path_ + " closed twice");
      closed_ = true;
      st = FlushLocked();
      if (st.ok()) st = out_.Eof(path_);
      buf_ = std::vector<uint8_t>();  // give the 1 MiB back now, not at destruction
    }
    // Outside mu_: Flush() locks the sink first and then the file.
    Deregister();
    return st;
  }

  // Emits buffered bytes as a chunk (Sink::Flush calls it from another thread).
  Status FlushLocked() {
    if (buf_.empty()) return Status::Ok();
    const uint64_t n = buf_.size();
    XBAK_RETURN_IF_ERROR(out_.Payload(path_, offset_, &buf_));
    offset_ += n;
    return Status::Ok();
  }
  std::mutex& mu() { return mu_; }

 private:
  void Deregister() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->open.erase(this) != 0) --shared_->open_per_writer[index_];
  }

  static constexpr uint64_t kSmallZeros = 64 << 10;
  std::shared_ptr<XbstreamShared> shared_;
  Output& out_;
  const size_t index_;
  const std::string path_;
  std::mutex mu_;  // Write is single-threaded per file, but Sink::Flush is not
  std::vector<uint8_t> buf_;
  uint64_t offset_ = 0;
  bool closed_ = false;
};

class XbstreamSink : public BufferedStreamSink {
 public:
  explicit XbstreamSink(std::shared_ptr<XbstreamShared> shared) : shared_(std::move(shared)) {}

  Result<std::unique_ptr<SinkFile>> Create(const std::string& relpath) override {
    Result<std::string> norm = stream::NormalizeXbstreamPath(relpath);
    if (!norm.ok()) {
      return Error(ErrorCode::kInvalidArgument, "refusing unsafe backup path: " + norm.status().message());
    }
    const std::string& path = norm.value();
    if (path.size() > stream::kXbstreamMaxWritePathLen) {
      return Error(ErrorCode::kUnsupported, "cannot stream " + path + ": paths longer than " +
                                                std::to_string(stream::kXbstreamMaxWritePathLen) +
                                                " bytes cannot be extracted by mbstream");
    }
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->paths.insert(path).second) {
      // A second copy would restart at offset 0 and break extraction.
      return Error(ErrorCode::kAlreadyExists, "backup file " + path + " was already written to the stream");
    }
    // Least-loaded fd: fewest files in flight (they are what is still to
    // come), then fewest bytes so far, then round-robin.
    const size_t n = shared_->outputs.size();
    size_t best = shared_->next % n;
    for (size_t k = 0; k < n; ++k) {
      size_t i = (shared_->next + k) % n;
      auto key = [&](size_t j) {
        return std::make_pair(shared_->open_per_writer[j], shared_->outputs[j]->bytes_written());
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
    for (const auto& o : shared_->outputs) XBAK_RETURN_IF_ERROR(o->Drain());
    // Chunks are now on the fds, so only a regular file target has anything
    // left to make durable; a pipe's durability is the reader's job.
    for (const auto& o : shared_->outputs) {
      struct stat st {};
      if (::fstat(o->fd(), &st) == 0 && S_ISREG(st.st_mode) && ::fdatasync(o->fd()) != 0) {
        return ErrnoError("fsync", "xbstream output (" + o->name() + ")", errno);
      }
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    const auto& os = shared_->outputs;
    if (os.size() == 1) return "xbstream on " + os[0]->name();
    std::string s = "xbstream on " + std::to_string(os.size()) + " fds (";
    for (size_t i = 0; i < os.size(); ++i) s += (i ? ", " : "") + os[i]->name();
    return s + ")";
  }

  std::vector<StreamBufferStats> BufferStats() const override {
    std::vector<StreamBufferStats> v;
    for (const auto& o : shared_->outputs) v.push_back(o->Stats());
    return v;
  }

 private:
  std::shared_ptr<XbstreamShared> shared_;
};

Status CheckOutputFd(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) return ErrnoError("xbstream output", "fd " + std::to_string(fd), errno);
  if ((fl & O_ACCMODE) == O_RDONLY) {
    return Error(ErrorCode::kInvalidArgument,
                 "xbstream output fd " + std::to_string(fd) + " is not open for writing");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Sink>> MakeXbstreamSink(std::vector<int> fds) {
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "xbstream sink needs at least one output fd");
  auto shared = std::make_shared<XbstreamShared>();
  for (int fd : fds) {
    XBAK_RETURN_IF_ERROR(CheckOutputFd(fd));
    shared->outputs.push_back(std::make_unique<DirectOutput>(fd, "fd " + std::to_string(fd)));
  }
  shared->open_per_writer.assign(fds.size(), 0);
  return std::unique_ptr<Sink>(std::make_unique<XbstreamSink>(std::move(shared)));
}

Result<std::unique_ptr<BufferedStreamSink>> MakeBufferedXbstreamSink(std::vector<int> fds,
                                                                     StreamBufferOptions options) {
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "xbstream sink needs at least one output fd");
  if (options.queue_chunks == 0) {
    return Error(ErrorCode::kInvalidArgument, "xbstream sink queue must hold at least one chunk");
  }
  if (!options.names.empty() && options.names.size() != fds.size()) {
    return Error(ErrorCode::kInvalidArgument, "xbstream sink: " + std::to_string(options.names.size()) +
                                                  " names for " + std::to_string(fds.size()) + " fds");
  }
  auto shared = std::make_shared<XbstreamShared>();
  // Taken over first, so that they are closed even when a check below fails.
  shared->owned = std::move(options.owned);
  for (size_t i = 0; i < fds.size(); ++i) {
    XBAK_RETURN_IF_ERROR(CheckOutputFd(fds[i]));
    std::string name = options.names.empty() ? "fd " + std::to_string(fds[i]) : options.names[i];
    shared->outputs.push_back(std::make_unique<QueuedOutput>(fds[i], std::move(name), options.queue_chunks));
  }
  shared->open_per_writer.assign(fds.size(), 0);
  return std::unique_ptr<BufferedStreamSink>(std::make_unique<XbstreamSink>(std::move(shared)));
}

}  // namespace xbak::sink
