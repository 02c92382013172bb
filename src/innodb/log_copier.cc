#include "xbak/innodb/log_copier.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace xbak::innodb {
namespace {

// Smallest read at the tail: an idle server writes little, and re-reading
// megabytes of stale bytes every poll would waste a core on a small machine.
constexpr size_t kMinRead = 64 * 1024;
// Consecutive polls without progress that must agree before we conclude the
// log at copied_lsn is gone or unparsable: the data and the checkpoint are two
// separate reads, and the server may write between them.
constexpr int kSuspiciousPolls = 3;

std::string Lsn(uint64_t v) { return std::to_string(v); }

}  // namespace

LogCopier::LogCopier(Options options, File file, LogHeader header, std::vector<uint8_t> header_block,
                     Checkpoint start, uint64_t file_size, dev_t dev, ino_t ino)
    : options_(std::move(options)),
      file_(std::move(file)),
      header_(std::move(header)),
      header_block_(std::move(header_block)),
      start_(start),
      file_size_(file_size),
      capacity_(file_size - kLogStartOffset),
      dev_(dev),
      ino_(ino),
      copied_lsn_(start.checkpoint_lsn) {}

LogCopier::~LogCopier() { (void)Stop(); }

Result<std::unique_ptr<LogCopier>> LogCopier::Open(const Options& options) {
  if (options.max_read <= kMtrSizeMax + kMtrTrailerSize) {
    return Error(ErrorCode::kInvalidArgument, "LogCopier max_read must exceed the largest mtr (1 MiB)");
  }
  if (options.poll_interval.count() <= 0) {
    return Error(ErrorCode::kInvalidArgument, "LogCopier poll_interval must be positive");
  }
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(options.log_path));
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0) return ErrnoError("stat", options.log_path, errno);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= kLogStartOffset) {
    return Error(ErrorCode::kCorrupt,
                 options.log_path + " is " + std::to_string(size) + " bytes, too small for a redo log");
  }
  std::vector<uint8_t> start(kLogStartOffset);
  XBAK_ASSIGN_OR_RETURN(size_t got, f.PRead(start.data(), start.size(), 0));
  if (got != start.size())
    return Error(ErrorCode::kCorrupt, options.log_path + ": short read of the log header");
  auto header = ParseLogHeader(start.data(), start.size());
  if (!header.ok()) return header.status().With(options.log_path);
  auto cp = PickCheckpoint(start.data(), start.size(), header->first_lsn);
  if (!cp.ok()) return cp.status().With(options.log_path);
  std::vector<uint8_t> block(start.begin(), start.begin() + kLogHeaderSize);
  return std::unique_ptr<LogCopier>(new LogCopier(options, std::move(f), std::move(header).value(),
                                                  std::move(block), cp.value(), size, st.st_dev, st.st_ino));
}

Result<Checkpoint> LogCopier::ReadLiveCheckpoint() const { return ReadLiveState(); }

Result<Checkpoint> LogCopier::ReadLiveState() const {
  const std::string& path = options_.log_path;
  // The server resizes its log online by writing ib_logfile101 and renaming it
  // over ib_logfile0; our descriptor would then point at a file nobody writes.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    return Error(ErrorCode::kUnsupported,
                 path +
                     " was replaced while the backup was copying it (the server resized its redo log with "
                     "SET GLOBAL innodb_log_file_size, or was restarted); run the backup again");
  }
  if (::fstat(file_.fd(), &st) != 0) return ErrnoError("stat", path, errno);
  if (static_cast<uint64_t>(st.st_size) != file_size_) {
    return Error(ErrorCode::kUnsupported, path + " changed size from " + std::to_string(file_size_) + " to " +
                                              std::to_string(st.st_size) +
                                              " bytes while the backup was copying it; run the backup again");
  }
  uint8_t buf[kLogStartOffset];
  XBAK_ASSIGN_OR_RETURN(size_t got, file_.PRead(buf, sizeof buf, 0));
  if (got != sizeof buf) return Error(ErrorCode::kCorrupt, path + ": short read of the log header");
  if (!std::equal(header_block_.begin(), header_block_.end(), buf)) {
    auto now = ParseLogHeader(buf, sizeof buf);
    std::string detail = now.ok() ? "first LSN " + Lsn(header_.first_lsn) + " -> " + Lsn(now->first_lsn)
                                  : now.status().message();
    return Error(ErrorCode::kUnsupported,
                 path + ": the log header changed while the backup was copying it (" + detail +
                     "); the log was resized or recreated, run the backup again");
  }
  auto cp = PickCheckpoint(buf, sizeof buf, header_.first_lsn);
  if (!cp.ok()) return cp.status().With(path);
  return cp;
}

Status LogCopier::ReadCircular(uint64_t lsn, uint8_t* dst, size_t n) const {
  uint64_t off = LsnToOffset(lsn, header_.first_lsn, capacity_);
  size_t first = static_cast<size_t>(std::min<uint64_t>(n, file_size_ - off));
  XBAK_ASSIGN_OR_RETURN(size_t got, file_.PRead(dst, first, off));
  if (got == first && first < n) {
    // The rest of the block continues at the start of the circular area.
    XBAK_ASSIGN_OR_RETURN(size_t got2, file_.PRead(dst + first, n - first, kLogStartOffset));
    got += got2;
  }
  if (got != n) {
    return Error(ErrorCode::kUnsupported,
                 options_.log_path + " was truncated while the backup was copying it");
  }
  return Status::Ok();
}

Status LogCopier::Overwritten(uint64_t lsn, const Checkpoint& live) const {
  return Error(ErrorCode::kServer,
               "redo log from LSN " + Lsn(lsn) +
                   " was overwritten by the server before it could be copied (server checkpoint LSN " +
                   Lsn(live.checkpoint_lsn) + ", log capacity " + std::to_string(capacity_) +
                   " bytes); increase innodb_log_file_size or reduce the write load during the backup");
}

Status LogCopier::Start(Writer writer, FileOpSink file_ops) {
  if (thread_.joinable()) return Error(ErrorCode::kInternal, "LogCopier::Start called twice");
  if (!writer) return Error(ErrorCode::kInvalidArgument, "LogCopier::Start needs a writer");
  writer_ = std::move(writer);
  file_ops_ = std::move(file_ops);
  {
    std::lock_guard lk(mu_);
    if (stop_requested_) return Error(ErrorCode::kCancelled, "LogCopier was stopped before it started");
    running_ = true;
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void LogCopier::Run() {
  Status st = CopyLoop();
  std::lock_guard lk(mu_);
  error_ = st;
  running_ = false;
  cv_.notify_all();
}

bool LogCopier::StopRequested() {
  std::lock_guard lk(mu_);
  return stop_requested_;
}

Status LogCopier::CopyLoop() {
  const uint64_t first = header_.first_lsn;
  const size_t max_window = static_cast<size_t>(std::min<uint64_t>(options_.max_read, capacity_));
  size_t window = std::min(kMinRead, max_window);
  uint64_t lsn = start_.checkpoint_lsn;
  std::vector<uint8_t> buf;  // bytes from lsn on: a carried-over partial mtr, then fresh reads
  std::vector<uint8_t> out;
  std::vector<std::pair<FileOp, uint64_t>> ops;
  MtrInfo info;
  std::string why;
  int suspicious = 0;

  while (!StopRequested()) {
    const size_t want = window;
    if (buf.size() < want) {
      size_t have = buf.size();
      buf.resize(want);
      XBAK_RETURN_IF_ERROR(ReadCircular(lsn + have, buf.data() + have, want - have));
    }
    // The checkpoint is read after the data. The server only reuses the space
    // of LSN L once its checkpoint has passed L, and writes at most `capacity`
    // bytes past its checkpoint; so while this checkpoint is <= lsn + capacity
    // nothing we just read can have been overwritten twice (an overwrite by the
    // next pass shows as a wrong sequence bit or CRC, two passes would not).
    XBAK_ASSIGN_OR_RETURN(Checkpoint live, ReadLiveState());
    if (live.checkpoint_lsn > lsn + capacity_) return Overwritten(lsn, live);

    size_t pos = 0;
    MtrStatus ms = MtrStatus::kEndOfLog;
    out.clear();
    ops.clear();
    for (;;) {
      const uint64_t at = lsn + pos;
      const size_t until_wrap = static_cast<size_t>(capacity_ - (at - first) % capacity_);
      ms = ParseMtr(buf.data() + pos, buf.size() - pos, SequenceBit(at, first, capacity_), &info, &why,
                    until_wrap);
      if (ms != MtrStatus::kComplete) break;
      size_t o = out.size();
      out.insert(out.end(), buf.begin() + pos, buf.begin() + pos + info.length);
      out[o + info.records_length] = 1;  // the backup log is a single first pass
      for (FileOp& op : info.file_ops) ops.emplace_back(std::move(op), at + info.length);
      pos += info.length;
    }

    if (pos > 0) {
      Status st = writer_(out.data(), out.size());
      if (!st.ok()) return st.With("writing the backup redo log at LSN " + Lsn(lsn));
      if (file_ops_) {
        for (const auto& [op, op_lsn] : ops) file_ops_(op, op_lsn);
      }
      lsn += pos;
      copied_lsn_.store(lsn, std::memory_order_release);
      {
        std::lock_guard lk(mu_);
        cv_.notify_all();
      }
      suspicious = 0;
      buf.erase(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(pos));
    }

    // Stopped only because the read ended inside an mtr: read on at once,
    // keeping what we have, with a larger read if the rate calls for it.
    if (ms == MtrStatus::kNeedMore && (pos > 0 || want < max_window)) {
      if (pos == 0 || pos > want / 2) window = std::min(window * 2, max_window);
      continue;
    }
    // Anything else is the tail of the log as of this read: the server may
    // still be rewriting it, so it is read afresh next time.
    buf.clear();
    if (pos > 0) {
      if (pos < want / 4) window = std::max(std::min(kMinRead, max_window), window / 2);
    } else {
      if (live.checkpoint_lsn > lsn) {
        // The server has declared the log at lsn reusable and there is no
        // valid mtr there: it may be gone. Re-read to rule out a race first.
        if (++suspicious >= kSuspiciousPolls) return Overwritten(lsn, live);
        continue;
      }
      if (live.end_lsn > lsn) {
        // The server has durably written past lsn, yet it does not parse.
        if (++suspicious >= kSuspiciousPolls) {
          return Error(ErrorCode::kCorrupt, options_.log_path + ": cannot parse the redo log at LSN " +
                                                Lsn(lsn) + " although the server has checkpointed at LSN " +
                                                Lsn(live.end_lsn) + ": " + why);
        }
        continue;
      }
      suspicious = 0;
    }
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, options_.poll_interval, [this] { return stop_requested_; });
  }
  return Status::Ok();
}

Status LogCopier::WaitUntil(uint64_t lsn, std::chrono::milliseconds stall_timeout) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lk(mu_);
  uint64_t last = copied_lsn_.load(std::memory_order_acquire);
  auto deadline = Clock::now() + stall_timeout;
  for (;;) {
    uint64_t cur = copied_lsn_.load(std::memory_order_acquire);
    if (cur >= lsn) return Status::Ok();
    if (!error_.ok()) return error_.With("redo log copy");
    if (!running_) {
      return Error(ErrorCode::kCancelled,
                   "redo log copy is not running; it reached LSN " + Lsn(cur) + ", not " + Lsn(lsn));
    }
    auto now = Clock::now();
    if (cur != last) {
      last = cur;
      deadline = now + stall_timeout;
    } else if (now >= deadline) {
      return Error(ErrorCode::kTimeout, "redo log copy made no progress for " +
                                            std::to_string(stall_timeout.count()) + " ms: copied up to LSN " +
                                            Lsn(cur) + ", waiting for LSN " + Lsn(lsn));
    }
    cv_.wait_until(lk, deadline);
  }
}

Status LogCopier::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lk(mu_);
  return error_;
}

}  // namespace xbak::innodb
