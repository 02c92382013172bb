#include "xbak/cloud/put.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "put_start.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::cloud {
namespace {

using storage::Md5Digest;

// Bytes one reader holds: its open files' buffers plus its objects not yet
// stored. Acquire blocks while the limit is reached; a lone request larger
// than the limit still passes when nothing is held, so progress is certain.
class Budget {
 public:
  explicit Budget(size_t limit) : limit_(limit) {}
  bool TryAcquire(size_t n) {
    std::lock_guard<std::mutex> l(mu_);
    if (used_ != 0 && used_ + n > limit_) return false;
    used_ += n;
    return true;
  }
  // Waits until n fits (true), or until all that is held is `held` (false:
  // nothing in flight will free memory; the caller must release some of
  // what it holds itself). Cancelled: false.
  bool AcquireUnlessOnly(size_t n, size_t held) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return cancelled_ || used_ + n <= limit_ || used_ <= held; });
    if (cancelled_ || used_ + n > limit_) return false;
    used_ += n;
    return true;
  }
  bool cancelled() {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_;
  }
  // False when cancelled.
  bool Acquire(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return cancelled_ || used_ == 0 || used_ + n <= limit_; });
    if (cancelled_) return false;
    used_ += n;
    return true;
  }
  void Release(size_t n) {
    {
      std::lock_guard<std::mutex> l(mu_);
      used_ -= std::min(n, used_);
    }
    cv_.notify_all();
  }
  void Cancel() {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  const size_t limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t used_ = 0;  // guarded by mu_
  bool cancelled_ = false;
};

struct Upload {
  std::string key;
  storage::ObjectStore::Body body;
  Md5Digest md5{};
  int reader = -1;                // whose budget to release (-1: none, e.g. a sidecar)
  std::vector<Md5Digest> pieces;  // of a data object, for the manifest
};

// How the backup's files are stored, from their names (ManifestSummary).
std::string EncodingOf(const std::vector<ManifestEntry>& entries) {
  constexpr std::pair<std::string_view, std::string_view> kSuffixes[] = {
      {".zst", "zstd"}, {".lz4", "lz4"}, {".qp", "qpress"}, {".xbenc", "encrypted"}};
  std::set<std::string_view> seen;
  for (const auto& e : entries) {
    std::string_view path = e.path;
    if (path.ends_with(".xbenc")) {
      seen.insert("encrypted");
      path.remove_suffix(6);
    }
    for (const auto& [suffix, what] : kSuffixes) {
      if (path.ends_with(suffix)) seen.insert(what);
    }
  }
  std::string out;
  for (const auto& [suffix, what] : kSuffixes) {
    if (!seen.count(what)) continue;
    if (!out.empty()) out += '+';  // (a ternary prefix trips GCC 12's -Wrestrict at -O3)
    out += what;
  }
  return out;
}

// Everything below runs on the loop thread, except what the readers call
// through loop.Post and the Budgets (which are thread-safe).
class PutJob {
 public:
  PutJob(storage::EventLoop& loop, storage::ObjectStore& store, const PutOptions& options, size_t streams,
         std::map<std::string, storage::ObjectInfo> stored, bool trust_stored, StartedMarker marker)
      : loop_(loop),
        store_(store),
        options_(options),
        stored_(std::move(stored)),
        trust_stored_(trust_stored),
        marker_(std::move(marker)),
        readers_running_(streams) {
    size_t share = options.memory_per_stream;
    if (share == 0) share = (static_cast<size_t>(options.parallel) + 2) * options.object_size / streams;
    share = std::max(share, 2 * options.object_size);
    for (size_t i = 0; i < streams; i++) budgets_.push_back(std::make_unique<Budget>(share));
  }

  const std::atomic<bool>& cancel_flag() const { return cancel_; }
  Budget& budget(int reader) { return *budgets_[static_cast<size_t>(reader)]; }
  std::atomic<uint64_t>& bytes_read() { return bytes_read_; }
  const Status& error() const { return error_; }
  PutStats stats() const {
    PutStats s;
    s.bytes_read = bytes_read_.load();
    s.bytes_uploaded = uploaded_bytes_;
    s.objects = entries_.size();
    s.files = files_;
    s.peak_buffered = peak_buffered_;
    s.objects_skipped = skipped_objects_;
    s.bytes_skipped = skipped_bytes_;
    s.stale_deleted = stale_deleted_;
    return s;
  }

  // Loop thread: one of the small metadata files the manifest summarizes.
  void AddSummaryFile(std::string path, std::string bytes) {
    summary_.files.emplace_back(std::move(path), std::move(bytes));
  }
  std::atomic<uint64_t>& file_bytes() { return file_bytes_; }

  // Loop thread: a sealed object of `path` (sequence `seq`) from a reader.
  void SubmitObject(const std::string& path, uint64_t seq, Upload u, bool last_of_file) {
    if (!error_.ok()) {
      budget(u.reader).Release(u.body->size());
      return;
    }
    if (!keys_.insert(u.key).second) {
      return Fail(Error(ErrorCode::kCorrupt, "file " + path + " appears twice in the stream(s)"));
    }
    entries_.push_back({path, seq, u.body->size(), u.md5, options_.digest_piece_bytes, std::move(u.pieces)});
    if (last_of_file) files_++;
    std::string sidecar_key = u.key + std::string(kMd5Suffix);
    auto sidecar = std::make_shared<const std::string>(Md5SidecarText(u.key, u.md5));
    Md5Digest sidecar_md5 = storage::Md5(*sidecar);
    if (AlreadyStored(u.key, *u.body, u.md5) && AlreadyStored(sidecar_key, *sidecar, sidecar_md5)) {
      // Stored by the put this one resumes, byte for byte: not sent again.
      skipped_objects_++;
      skipped_bytes_ += u.body->size();
      budget(u.reader).Release(u.body->size());
      return MaybeFinish();
    }
    buffered_ += u.body->size();
    peak_buffered_ = std::max(peak_buffered_, buffered_);
    queue_.push_back(std::move(u));
    queue_.push_back({std::move(sidecar_key), std::move(sidecar), sidecar_md5, -1, {}});
    Pump();
  }

  void ReaderDone(Status s) {
    readers_running_--;
    if (!s.ok()) return Fail(s);  // a kCancelled comes only after the first error, which is kept
    MaybeFinish();
  }

  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    cancel_ = true;
    for (auto& b : budgets_) b->Cancel();
    for (auto& u : queue_) {
      if (u.reader >= 0) budget(u.reader).Release(u.body->size());
    }
    queue_.clear();
    store_.CancelAll();
    MaybeFinish();
  }

  void StartProgress() {
    if (options_.progress_interval.count() <= 0) return;
    std::weak_ptr<bool> alive = alive_;
    loop_.After(static_cast<double>(options_.progress_interval.count()) / 1000.0, [this, alive] {
      if (alive.expired() || finished_) return;
      util::LogInfo(ProgressLine());
      StartProgress();
    });
  }

  std::string ProgressLine() const {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    auto st = store_.stats();
    return "put " + options_.name + ": read " + util::HumanBytes(bytes_read_.load()) + ", uploaded " +
           util::HumanBytes(uploaded_bytes_) + " in " + std::to_string(entries_.size()) +
           " objects, in flight " + std::to_string(inflight_) + " requests (" + util::HumanBytes(buffered_) +
           " buffered), retries " + std::to_string(st.retries) + ", " +
           util::HumanBytes(secs > 0 ? static_cast<uint64_t>(static_cast<double>(uploaded_bytes_) / secs)
                                     : 0) +
           "/s";
  }

 private:
  void Pump() {
    while (inflight_ < options_.parallel && !queue_.empty() && error_.ok()) {
      Upload u = std::move(queue_.front());
      queue_.pop_front();
      inflight_++;
      std::string key = u.key;
      auto body = u.body;
      int reader = u.reader;
      store_.Put(key, body, u.md5, [this, key, body, reader](Status s) {
        inflight_--;
        if (reader >= 0) {
          buffered_ -= body->size();
          budget(reader).Release(body->size());
          if (s.ok()) uploaded_bytes_ += body->size();
        }
        if (!s.ok()) return Fail(s.With("upload of " + key));
        Pump();
        MaybeFinish();
      });
    }
  }

  // A resumed put: the object is in the store with this size and MD5.
  bool AlreadyStored(const std::string& key, const std::string& body, const Md5Digest& md5) const {
    if (!trust_stored_) return false;
    auto it = stored_.find(key);
    return it != stored_.end() && it->second.size == body.size() && it->second.md5 == md5;
  }

  // A resumed put: what the interrupted put stored that this one did not
  // write (its objects were cut elsewhere) goes before the manifest, which
  // must describe every object under NAME/.
  std::vector<std::string> StaleKeys() const {
    std::vector<std::string> stale;
    for (const auto& [key, info] : stored_) {
      std::string data = key.ends_with(kMd5Suffix) ? key.substr(0, key.size() - kMd5Suffix.size()) : key;
      if (!keys_.count(data) && key != StartedKey(options_.name)) stale.push_back(key);
    }
    return stale;
  }

  void MaybeFinish() {
    if (finished_ || readers_running_ > 0 || inflight_ > 0 || !queue_.empty()) return;
    if (!error_.ok()) {
      finished_ = true;
      loop_.Stop();
      return;
    }
    if (manifest_started_) return;
    if (!stale_checked_) {
      stale_checked_ = true;
      std::vector<std::string> stale = StaleKeys();
      if (!stale.empty()) {
        stale_deleted_ = stale.size();
        util::LogInfo("put " + options_.name + ": removing " + std::to_string(stale.size()) +
                      " objects the interrupted put stored that this stream does not have");
        for (size_t i = 0; i < stale.size(); i += 1000) {
          std::vector<std::string> batch(
              stale.begin() + static_cast<std::ptrdiff_t>(i),
              stale.begin() + static_cast<std::ptrdiff_t>(std::min(stale.size(), i + 1000)));
          inflight_++;
          store_.Delete(batch, [this](Status st) {
            inflight_--;
            if (!st.ok())
              return Fail(st.With("removing what the interrupted put of " + options_.name + " left"));
            MaybeFinish();
          });
        }
        return;
      }
    }
    // Everything is stored: the manifest goes last and marks the backup complete.
    manifest_started_ = true;
    summary_.started = marker_.started;  // a resumed put's: the first one's
    summary_.finished =
        started_unix_ +
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_).count();
    summary_.file_bytes = file_bytes_.load();
    summary_.objects = entries_.size();
    for (const auto& e : entries_) summary_.stored_bytes += e.size;
    summary_.encoding = EncodingOf(entries_);
    summary_.lock_mode = options_.lock_mode;
    summary_.lock_until = options_.lock_until;
    // In a fixed order, whichever stream carried them.
    std::sort(summary_.files.begin(), summary_.files.end());
    // Only if NAME is still ours: a delete that removed our marker, or a
    // second put of NAME that replaced it, must not meet a manifest that
    // says complete.
    inflight_++;
    store_.Get(StartedKey(options_.name), [this](Result<std::string> marker) {
      inflight_--;
      if (!marker.ok() || ParseStartedMarker(*marker).token != marker_.token) {
        return Fail(Error(ErrorCode::kAlreadyExists,
                          !marker.ok() && marker.status().code() != ErrorCode::kNotFound
                              ? marker.status().message()
                          : !marker.ok() ? "backup " + options_.name + " was deleted while it was being put"
                                         : "another put of " + options_.name + " started meanwhile"));
      }
      WriteManifest();
    });
  }

  void WriteManifest() {
    auto body = std::make_shared<const std::string>(EncodeManifest(entries_, &summary_));
    inflight_++;
    store_.Put(ManifestKey(options_.name), body, storage::Md5(*body), [this](Status s) {
      inflight_--;
      if (!s.ok()) error_ = s.With("writing the completion marker");
      finished_ = true;
      loop_.Stop();
    });
  }

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  const PutOptions& options_;
  const std::map<std::string, storage::ObjectInfo> stored_;  // by an interrupted put of NAME
  const bool trust_stored_;     // stored_ was stored under the same object options
  const StartedMarker marker_;  // ours, in NAME/xbcloud.started
  std::vector<std::unique_ptr<Budget>> budgets_;
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> file_bytes_{0};
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  const int64_t started_unix_ =
      options_.started_unix != 0 ? options_.started_unix : static_cast<int64_t>(::time(nullptr));
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  // Loop thread only:
  size_t readers_running_;
  std::deque<Upload> queue_;
  int inflight_ = 0;
  std::set<std::string> keys_;
  std::vector<ManifestEntry> entries_;
  ManifestSummary summary_;
  uint64_t skipped_objects_ = 0, skipped_bytes_ = 0, stale_deleted_ = 0;
  bool stale_checked_ = false;
  uint64_t files_ = 0, uploaded_bytes_ = 0, buffered_ = 0, peak_buffered_ = 0;
  Status error_;
  bool manifest_started_ = false, finished_ = false;
};

// One input stream: chunks -> per-file buffers -> sealed objects.
class StreamReader {
 public:
  StreamReader(storage::EventLoop& loop, PutJob& job, const PutOptions& options, int index, int fd,
               std::string name)
      : loop_(loop), job_(job), options_(options), index_(index), fd_(fd), name_(std::move(name)) {}

  Status Run() {
    stream::ChunkReader reader(fd_, name_);
    reader.SetCancelFlag(&job_.cancel_flag());
    stream::Chunk c;
    uint64_t unknown = 0;
    while (true) {
      uint64_t before = reader.offset();
      XBAK_ASSIGN_OR_RETURN(bool more, reader.Next(&c));
      job_.bytes_read() += reader.offset() - before;
      if (!more) break;
      if (c.type ==
          stream::ChunkType::kUnknown) {  // ignorable by its flag: mbstream would not need it either
        if (unknown++ == 0) util::LogWarning(name_ + ": skipping chunks of unknown type (marked ignorable)");
        continue;
      }
      auto path = stream::NormalizeXbstreamPath(c.path);
      if (!path.ok() || path->find('\n') != std::string::npos) {
        return Error(ErrorCode::kCorrupt,
                     name_ + ": chunk at byte " + std::to_string(c.stream_offset) +
                         " has an unusable file path: " +
                         (path.ok() ? "newline in '" + c.path + "'" : path.status().message()));
      }
      std::string bytes;
      if (c.type == stream::ChunkType::kEof) {
        bytes = stream::EncodeEofChunk(c.path);
      } else {
        bytes = stream::EncodePayloadChunkHeader(c.path, c.payload.size(), c.offset, c.crc);
      }
      size_t n = bytes.size() + (c.type == stream::ChunkType::kPayload ? c.payload.size() : 0);
      if (!job_.budget(index_).TryAcquire(n) && !job_.budget(index_).AcquireUnlessOnly(n, held_)) {
        // Our share is used up by what we hold and nothing in flight will
        // free it: send what we hold. Only then, so that object boundaries
        // depend on the stream alone whenever they can (a resumed put finds
        // the same objects).
        if (job_.budget(index_).cancelled()) return Error(ErrorCode::kCancelled, "cancelled");
        for (auto& [p, f] : open_) Seal(p, f, false);
        if (!job_.budget(index_).Acquire(n)) return Error(ErrorCode::kCancelled, "cancelled");
      }
      held_ += n;
      if (c.type == stream::ChunkType::kPayload) job_.file_bytes() += c.payload.size();
      KeepSummaryFile(*path, c);
      auto [it, inserted] = open_.try_emplace(*path);
      OpenFile& f = it->second;
      if (f.buf.capacity() < n && f.buf.empty())
        f.buf.reserve(std::max(n, n > (64 << 10) ? options_.object_size : 0));
      f.buf += bytes;
      if (c.type == stream::ChunkType::kPayload) {
        f.buf.append(reinterpret_cast<const char*>(c.payload.data()), c.payload.size());
      }
      if (c.type == stream::ChunkType::kEof) {
        Seal(*path, f, true);
        open_.erase(it);
      } else if (f.buf.size() >= options_.object_size) {
        Seal(*path, f, false);
      }
    }
    if (!open_.empty()) {
      return Error(ErrorCode::kCorrupt, name_ + " ended in the middle of file " + open_.begin()->first +
                                            " (no end-of-file chunk) at byte " +
                                            std::to_string(reader.offset()) +
                                            ": the backup that wrote it did not finish");
    }
    return Status::Ok();
  }

 private:
  struct OpenFile {
    std::string buf;
    uint64_t seq = 0;
  };

  // The metadata files list shows (small, in the clear) are kept whole as
  // they pass and handed to the manifest's summary at their end.
  void KeepSummaryFile(const std::string& path, const stream::Chunk& c) {
    if (!backupdir::IsMeta(path, backupdir::Meta::kCheckpoints) &&
        !backupdir::IsMeta(path, backupdir::Meta::kInfo) &&
        !backupdir::IsMeta(path, backupdir::Meta::kBinlogInfo)) {
      return;
    }
    std::string& bytes = summary_files_[path];
    if (c.type == stream::ChunkType::kPayload) {
      if (c.offset + c.payload.size() > kSummaryFileMax) {
        bytes.assign(kSummaryFileMax + 1, '\0');  // too large: left out
        return;
      }
      if (bytes.size() < c.offset + c.payload.size()) bytes.resize(c.offset + c.payload.size());
      std::copy(c.payload.begin(), c.payload.end(), bytes.begin() + static_cast<std::ptrdiff_t>(c.offset));
    } else if (c.type == stream::ChunkType::kEof) {
      if (bytes.size() <= kSummaryFileMax) {
        PutJob* job = &job_;
        loop_.Post(
            [job, path, bytes = std::move(bytes)]() mutable { job->AddSummaryFile(path, std::move(bytes)); });
      }
      summary_files_.erase(path);
    }
  }

  void Seal(const std::string& path, OpenFile& f, bool last) {
    if (f.buf.empty() && !last) return;
    held_ -= std::min(held_, f.buf.size());
    if (f.buf.capacity() > 2 * f.buf.size() + 4096) f.buf.shrink_to_fit();
    auto body = std::make_shared<const std::string>(std::move(f.buf));
    f.buf = std::string();
    ObjectDigests digests;
    if (options_.digest_piece_bytes > 0) {
      digests = DigestObject(*body, options_.digest_piece_bytes);
    } else {
      digests.md5 = storage::Md5(*body);
    }
    Upload u{DataObjectKey(options_.name, path, f.seq), body, digests.md5, index_, std::move(digests.pieces)};
    uint64_t seq = f.seq++;
    PutJob* job = &job_;
    loop_.Post([job, path, seq, u = std::move(u), last]() mutable {
      job->SubmitObject(path, seq, std::move(u), last);
    });
  }

  storage::EventLoop& loop_;
  PutJob& job_;
  const PutOptions& options_;
  const int index_;
  const int fd_;
  const std::string name_;
  std::map<std::string, OpenFile> open_;
  size_t held_ = 0;                                   // bytes in open_'s buffers (acquired, not yet sealed)
  std::map<std::string, std::string> summary_files_;  // KeepSummaryFile's, until their end
};

}  // namespace

Status CloudPut(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const PutOptions& options, PutStats* stats) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(options.name));
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "no input stream");
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  if (options.object_size < 1024)
    return Error(ErrorCode::kInvalidArgument, "--read-buffer-size must be at least 1K");

  // Before reading a byte: the store must answer, and NAME must be free or
  // the leftovers of an interrupted put, which this one resumes.
  XBAK_ASSIGN_OR_RETURN(PutStart start, BeginPut(loop, store, options));
  PutJob job(loop, store, options, fds.size(), std::move(start.stored), start.trust_stored, start.marker);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < fds.size(); i++) {
    std::string name = i < names.size() ? names[i] : "stream " + std::to_string(i);
    threads.emplace_back([&loop, &job, &options, i, fd = fds[i], name] {
      StreamReader reader(loop, job, options, static_cast<int>(i), fd, name);
      Status s = reader.Run();
      loop.Post([&job, s] { job.ReaderDone(s); });
    });
  }
  job.StartProgress();
  loop.Run();
  for (auto& t : threads) t.join();
  if (stats != nullptr) *stats = job.stats();
  if (!job.error().ok()) {
    std::string note =
        job.stats().objects > 0 ? "; remove what was uploaded with xbcloud delete " + options.name : "";
    return job.error().With("xbcloud put " + options.name + " failed (no completion marker was written" +
                            note + ")");
  }
  auto st = job.stats();
  std::string resumed;
  if (st.objects_skipped > 0 || st.stale_deleted > 0) {
    resumed = ", " + std::to_string(st.objects_skipped) + " objects (" + util::HumanBytes(st.bytes_skipped) +
              ") already stored by the interrupted put, " + std::to_string(st.stale_deleted) +
              " of its objects removed";
  }
  util::LogInfo("put " + options.name + ": done, " + util::HumanBytes(st.bytes_uploaded) + " uploaded in " +
                std::to_string(st.objects - st.objects_skipped) + " of " + std::to_string(st.objects) +
                " objects (" + std::to_string(st.files) + " files)" + resumed + ", " +
                std::to_string(store.stats().retries) + " retries");
  return Status::Ok();
}

}  // namespace xbak::cloud
