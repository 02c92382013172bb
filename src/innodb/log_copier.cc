#include "xbak/innodb/log_copier.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "xbak/util/progress.h"

namespace xbak::innodb {
namespace {

// Smallest read at the tail: an idle server writes little, and re-reading
// megabytes of stale bytes every poll would waste a core on a small machine.
constexpr size_t kMinRead = 64 * 1024;
// Consecutive polls without progress that must agree before we conclude the
// log at copied_lsn is gone or unparsable: the data and the checkpoint are two
// separate reads, and the server may write between them.
constexpr int kSuspiciousPolls = 3;

}  // namespace

LogCopier::LogCopier(Options options, util::File file, LogHeader header, std::vector<uint8_t> header_block,
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
  if (!options.written_lsn) {
    return Error(ErrorCode::kInvalidArgument,
                 "LogCopier needs written_lsn (how far the server's log is written)");
  }
  if (options.poll_interval.count() <= 0) {
    return Error(ErrorCode::kInvalidArgument, "LogCopier poll_interval must be positive");
  }
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(options.log_path));
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
    std::string detail =
        now.ok() ? "first " + FormatLsn(header_.first_lsn) + " -> " + std::to_string(now->first_lsn)
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
  uint64_t rate = write_rate();
  std::string at_rate = rate > 0 ? "; the server was writing " + util::HumanBytes(rate) + "/s" +
                                       " of redo, so the log holds about " +
                                       std::to_string(capacity_ / rate) + " s of writes"
                                 : "";
  return Error(ErrorCode::kServer,
               "redo log from " + FormatLsn(lsn) +
                   " was overwritten by the server before it could be copied (the copy had reached " +
                   FormatLsn(lsn) + ", the server's latest checkpoint is " + FormatLsn(live.checkpoint_lsn) +
                   ", its log holds " + util::HumanBytes(capacity_) + at_rate +
                   "). Make the log larger (SET GLOBAL innodb_log_file_size works online), back up at a "
                   "quieter time, or check that the disk holding the redo log is not saturated");
}

Status LogCopier::Unparsable(uint64_t lsn, const Checkpoint& live, const std::string& why) const {
  return Error(ErrorCode::kCorrupt,
               options_.log_path + ": the redo log does not parse at " + FormatLsn(lsn) + " (" + why +
                   "), although the server's latest checkpoint (checkpoint " +
                   FormatLsn(live.checkpoint_lsn) + ", written at " + FormatLsn(live.end_lsn) +
                   ") shows the server wrote past it and has not yet released it for reuse; the log "
                   "file looks damaged (check the server's error log and the disk)");
}

bool LogCopier::OtherPassAt(uint64_t lsn, const std::vector<uint8_t>& buf) const {
  if (buf.empty()) return false;
  const uint64_t first = header_.first_lsn;
  const size_t until_wrap = static_cast<size_t>(capacity_ - (lsn - first) % capacity_);
  MtrInfo info;
  return ParseMtr(buf.data(), buf.size(), !SequenceBit(lsn, first, capacity_), &info, nullptr, until_wrap,
                  header_.encrypted) == MtrStatus::kComplete;
}

void LogCopier::RateMeter::Note(uint64_t lsn, std::atomic<uint64_t>* out) {
  auto now = std::chrono::steady_clock::now();
  double dt = std::chrono::duration<double>(now - since).count();
  if (dt < 1.0) return;
  double r = static_cast<double>(lsn - since_lsn) / dt;
  // A moving average over a few seconds: steady enough to quote, quick
  // enough to show a burst.
  ewma = ewma == 0 ? r : 0.5 * ewma + 0.5 * r;
  out->store(static_cast<uint64_t>(ewma), std::memory_order_relaxed);
  since = now;
  since_lsn = lsn;
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
  // The copier must keep up with the server while the copy threads (and
  // compression) keep both cores busy: ask for a higher priority. Only root
  // (or CAP_SYS_NICE) may lower a nice value; without it this fails and the
  // thread runs at the normal priority, which the short polls make enough
  // for the write rates a 2-core machine produces (tests/integration/t_redo_race).
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), -5);
  Status st = CopyLoop();
  {
    std::lock_guard lk(mu_);
    error_ = st;
    running_ = false;
    cv_.notify_all();
  }
  if (!st.ok() && options_.on_failure) options_.on_failure();
}

bool LogCopier::StopRequested() {
  std::lock_guard lk(mu_);
  return stop_requested_;
}

Status LogCopier::RefreshWritten(uint64_t* durable, std::chrono::steady_clock::time_point* last) {
  auto now = std::chrono::steady_clock::now();
  if (now - *last < options_.written_refresh) return Status::Ok();
  *last = now;
  auto w = options_.written_lsn();
  if (!w.ok()) return w.status().With("asking the server how far its redo log is written");
  *durable = std::max(*durable, *w);
  return Status::Ok();
}

// The copier thread's state from one read of the log to the next.
struct LogCopier::CopyState {
  uint64_t lsn = 0;  // the backup log is complete up to here
  // What the server has finished writing: the end of the checkpoint's mtrs,
  // or what written_lsn() reported. Bytes below it are final in the file
  // (until the server wraps round to them again); bytes above may be the
  // garbage the server leaves after its log's end in a partly written block,
  // or a block caught halfway through a write, and garbage can hold stale
  // copies of whole, checksummed mtrs. So an mtr is taken only when a read
  // that started after `durable` passed its end saw it; anything beyond is
  // read again.
  uint64_t durable = 0;
  size_t window = 0, max_window = 0;  // bytes read at once
  std::chrono::steady_clock::time_point last_refresh{};
  std::vector<uint8_t> buf;  // bytes from lsn on, all below `durable` when read
  std::vector<uint8_t> out;  // the mtrs taken by this read, for the writer
  std::vector<std::pair<FileOp, uint64_t>> ops;
  MtrInfo info;
  std::string why;     // why the last mtr did not parse
  int suspicious = 0;  // reads in a row where log that should be there did not parse
  int idle_polls = 0;  // polls in a row that found nothing new
};

Status LogCopier::CopyLoop() {
  CopyState s;
  s.lsn = start_.checkpoint_lsn;
  s.durable = start_.end_lsn;
  s.max_window = static_cast<size_t>(std::min<uint64_t>(options_.max_read, capacity_));
  s.window = std::min(kMinRead, s.max_window);
  RateMeter rate(s.lsn);
  while (!StopRequested()) {
    XBAK_ASSIGN_OR_RETURN(Next next, CopyOnce(s));
    if (next == Next::kReadNow) continue;
    rate.Note(s.lsn, &rate_bps_);
    // Adaptive polling: right after new log the next read comes within 1 ms
    // (a busy server writes continuously); each idle poll doubles the wait up
    // to poll_interval, so an idle server costs next to nothing.
    WaitUnlessStopped(std::min<std::chrono::milliseconds>(
        options_.poll_interval, std::chrono::milliseconds(int64_t{1} << std::min(s.idle_polls, 10))));
  }
  return Status::Ok();
}

void LogCopier::WaitUnlessStopped(std::chrono::milliseconds wait) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, wait, [this] { return stop_requested_; });
}

Result<LogCopier::Next> LogCopier::CopyOnce(CopyState& s) {
  const uint64_t final_below = s.durable;  // known before this read started
  const size_t want = s.window;
  if (s.buf.size() < want) {
    size_t have = s.buf.size();
    s.buf.resize(want);
    XBAK_RETURN_IF_ERROR(ReadCircular(s.lsn + have, s.buf.data() + have, want - have));
  }
  // The checkpoint is read after the data. The server only reuses the space
  // of LSN L once its checkpoint has passed L, and writes at most `capacity`
  // bytes past its checkpoint; so while this checkpoint is <= lsn + capacity
  // nothing we just read can have been overwritten twice (an overwrite by the
  // next pass shows as a wrong sequence bit or CRC, two passes would not).
  XBAK_ASSIGN_OR_RETURN(Checkpoint live, ReadLiveState());
  if (live.checkpoint_lsn > s.lsn + capacity_) return Overwritten(s.lsn, live);

  MtrStatus ms = MtrStatus::kEndOfLog;
  bool not_yet_final = false;  // a whole mtr was parsed beyond final_below
  size_t pos = TakeFinalMtrs(s, final_below, &ms, &not_yet_final);
  if (pos > 0) XBAK_RETURN_IF_ERROR(Commit(s, pos));
  s.durable = std::max(s.durable, live.end_lsn);
  // Keep only bytes that were final when read.
  if (s.lsn + s.buf.size() > final_below) s.buf.resize(final_below > s.lsn ? final_below - s.lsn : 0);

  if (not_yet_final) {
    // Log is there but not known to be final yet: ask how far the server
    // has written, and read it again at once or after a short wait.
    s.idle_polls = 0;
    const uint64_t before = s.durable;
    XBAK_RETURN_IF_ERROR(RefreshWritten(&s.durable, &s.last_refresh));
    s.buf.clear();
    if (s.durable == before) WaitUnlessStopped(std::chrono::milliseconds(1));
    return Next::kReadNow;
  }
  // Stopped only because the read ended inside an mtr: read on at once,
  // keeping what we have, with a larger read if the rate calls for it.
  if (ms == MtrStatus::kNeedMore && (pos > 0 || want < s.max_window)) {
    if (pos == 0 || pos > want / 2) s.window = std::min(s.window * 2, s.max_window);
    return Next::kReadNow;
  }
  return AtTail(s, live, final_below, want, pos);
}

size_t LogCopier::TakeFinalMtrs(CopyState& s, uint64_t final_below, MtrStatus* ms, bool* not_yet_final) {
  const uint64_t first = header_.first_lsn;
  size_t pos = 0;
  s.out.clear();
  s.ops.clear();
  for (;;) {
    const uint64_t at = s.lsn + pos;
    const size_t until_wrap = static_cast<size_t>(capacity_ - (at - first) % capacity_);
    *ms = ParseMtr(s.buf.data() + pos, s.buf.size() - pos, SequenceBit(at, first, capacity_), &s.info, &s.why,
                   until_wrap, header_.encrypted);
    if (*ms != MtrStatus::kComplete) break;
    if (at + s.info.length > final_below) {
      *not_yet_final = true;
      break;
    }
    size_t o = s.out.size();
    s.out.insert(s.out.end(), s.buf.begin() + pos, s.buf.begin() + pos + s.info.length);
    s.out[o + s.info.records_length] = 1;  // the backup log is a single first pass
    for (FileOp& op : s.info.file_ops) s.ops.emplace_back(std::move(op), at + s.info.length);
    pos += s.info.length;
  }
  return pos;
}

Status LogCopier::Commit(CopyState& s, size_t pos) {
  Status st = writer_(s.out.data(), s.out.size());
  if (!st.ok()) return st.With("writing the backup redo log at " + FormatLsn(s.lsn));
  if (file_ops_) {
    for (const auto& [op, op_lsn] : s.ops) file_ops_(op, op_lsn);
  }
  s.lsn += pos;
  copied_lsn_.store(s.lsn, std::memory_order_release);
  {
    std::lock_guard lk(mu_);
    cv_.notify_all();
  }
  s.suspicious = 0;
  s.buf.erase(s.buf.begin(), s.buf.begin() + static_cast<ptrdiff_t>(pos));
  return Status::Ok();
}

Result<LogCopier::Next> LogCopier::AtTail(CopyState& s, const Checkpoint& live, uint64_t final_below,
                                          size_t want, size_t pos) {
  // What this read found is the tail of the log as of this read: the server
  // may still be rewriting it, so it is read afresh next time.
  if (pos > 0) {
    s.buf.clear();
    s.idle_polls = 0;
    if (pos < want / 4) s.window = std::max(std::min(kMinRead, s.max_window), s.window / 2);
    return Next::kPoll;
  }
  if (live.checkpoint_lsn > s.lsn) {
    // The server has declared the log at lsn reusable and there is no valid
    // mtr there: it may be gone. Re-read to rule out a race first.
    s.buf.clear();
    if (++s.suspicious >= kSuspiciousPolls) return Overwritten(s.lsn, live);
    return Next::kReadNow;
  }
  if (final_below > s.lsn) {
    // The server had finished writing past lsn before this read, yet it
    // does not parse. A server that wrote more than a whole log past lsn,
    // or bytes that parse with the other sequence bit (written by the next
    // pass over the file), mean an overrun (a server that wrote more than
    // its log holds past its checkpoint); anything else is damage.
    const bool next_pass = final_below > s.lsn + capacity_ || OtherPassAt(s.lsn, s.buf);
    s.buf.clear();
    if (++s.suspicious >= kSuspiciousPolls) {
      return next_pass ? Overwritten(s.lsn, live) : Unparsable(s.lsn, live, s.why);
    }
    return Next::kReadNow;
  }
  s.buf.clear();
  s.suspicious = 0;
  s.idle_polls++;
  // At the tail: the server may have written more than its checkpoint says.
  XBAK_RETURN_IF_ERROR(RefreshWritten(&s.durable, &s.last_refresh));
  return s.durable > s.lsn ? Next::kReadNow : Next::kPoll;
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
      return Error(ErrorCode::kCancelled, "redo log copy is not running; it reached " + FormatLsn(cur) +
                                              ", not " + std::to_string(lsn));
    }
    auto now = Clock::now();
    if (cur != last) {
      last = cur;
      deadline = now + stall_timeout;
    } else if (now >= deadline) {
      return Error(ErrorCode::kTimeout, "redo log copy made no progress for " +
                                            std::to_string(stall_timeout.count()) + " ms: copied up to " +
                                            FormatLsn(cur) + ", waiting for " + FormatLsn(lsn));
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
