#include "xbak/sink/compress.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "xbak/util/file.h"

namespace xbak::sink {
namespace {

const char* AlgoName(CompressOptions::Algo algo) { return algo == CompressOptions::kZstd ? "zstd" : "lz4"; }

// ---------------------------------------------------------------------------
// Compression

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// One frame's worth of work. The pool's mutex guards `done`; the rest is
// owned by the worker until done, and by the file afterwards.
struct Job {
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
  Status status;
  bool done = false;
};

// Compresses one frame; each worker thread owns one.
class FrameCompressor {
 public:
  static Result<FrameCompressor> Create(const CompressOptions& o) {
    FrameCompressor c;
    c.algo_ = o.algo;
    if (o.algo == CompressOptions::kZstd) {
      c.zstd_.reset(ZSTD_createCCtx());
      if (!c.zstd_) return Error(ErrorCode::kInternal, "cannot allocate a zstd compression context");
      // The content size is on by default and filled in by ZSTD_compress2;
      // the checksum is what lets --decompress (and zstd -d) detect damage.
      for (auto [param, value] : {std::pair{ZSTD_c_compressionLevel, o.zstd_level},
                                  std::pair{ZSTD_c_checksumFlag, 1}, std::pair{ZSTD_c_contentSizeFlag, 1}}) {
        size_t r = ZSTD_CCtx_setParameter(c.zstd_.get(), param, value);
        if (ZSTD_isError(r)) {
          return Error(ErrorCode::kInvalidArgument, std::string("zstd: ") + ZSTD_getErrorName(r));
        }
      }
    } else {
      c.lz4_prefs_ = LZ4F_preferences_t{};
      c.lz4_prefs_.frameInfo.blockSizeID = o.chunk_size <= (size_t{64} << 10)    ? LZ4F_max64KB
                                           : o.chunk_size <= (size_t{256} << 10) ? LZ4F_max256KB
                                           : o.chunk_size <= (size_t{1} << 20)   ? LZ4F_max1MB
                                                                                 : LZ4F_max4MB;
      c.lz4_prefs_.frameInfo.blockMode = LZ4F_blockIndependent;
      c.lz4_prefs_.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
      c.lz4_prefs_.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
      c.lz4_prefs_.compressionLevel = 0;  // LZ4's fast mode, as Percona's LZ4_compress_default
    }
    return c;
  }

  Status Compress(Job& job) {
    const std::vector<uint8_t>& in = job.in;
    if (algo_ == CompressOptions::kZstd) {
      job.out.resize(ZSTD_compressBound(in.size()));
      size_t r = ZSTD_compress2(zstd_.get(), job.out.data(), job.out.size(), in.data(), in.size());
      if (ZSTD_isError(r)) {
        return Error(ErrorCode::kInternal, std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
      }
      job.out.resize(r);
    } else {
      LZ4F_preferences_t prefs = lz4_prefs_;
      prefs.frameInfo.contentSize = in.size();
      job.out.resize(LZ4F_compressFrameBound(in.size(), &prefs));
      size_t r = LZ4F_compressFrame(job.out.data(), job.out.size(), in.data(), in.size(), &prefs);
      if (LZ4F_isError(r)) {
        return Error(ErrorCode::kInternal, std::string("lz4 compression failed: ") + LZ4F_getErrorName(r));
      }
      job.out.resize(r);
    }
    job.in = std::vector<uint8_t>();  // the input is no longer needed: free it before the write
    return Status::Ok();
  }

 private:
  CompressOptions::Algo algo_ = CompressOptions::kZstd;
  std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree> zstd_;
  LZ4F_preferences_t lz4_prefs_{};
};

// Worker threads shared by all files of one sink. Unbounded queue by itself;
// the bound comes from each file never having more than its cap of jobs out.
class CompressPool {
 public:
  static Result<std::shared_ptr<CompressPool>> Create(const CompressOptions& o) {
    std::vector<FrameCompressor> compressors;
    for (int i = 0; i < o.threads; ++i) {
      XBAK_ASSIGN_OR_RETURN(FrameCompressor c, FrameCompressor::Create(o));
      compressors.push_back(std::move(c));
    }
    auto pool = std::shared_ptr<CompressPool>(new CompressPool());
    for (auto& c : compressors) {
      pool->threads_.emplace_back([p = pool.get(), c = std::move(c)]() mutable { p->Run(c); });
    }
    return pool;
  }
  ~CompressPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  CompressPool(const CompressPool&) = delete;
  CompressPool& operator=(const CompressPool&) = delete;

  void Submit(std::shared_ptr<Job> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(job));
    }
    work_cv_.notify_one();
  }
  void Wait(const Job& job) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return job.done; });
  }
  bool IsDone(const Job& job) {
    std::lock_guard<std::mutex> lock(mu_);
    return job.done;
  }

 private:
  CompressPool() = default;
  void Run(FrameCompressor& c) {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      // Stopping means every file is gone: nobody waits for what is queued.
      if (stop_) return;
      std::shared_ptr<Job> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Status st = c.Compress(*job);
      lock.lock();
      job->status = st;
      job->done = true;
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::vector<std::thread> threads_;
};

class CompressingFile;

struct CompressShared {
  std::shared_ptr<CompressPool> pool;
  std::mutex mu;
  std::set<CompressingFile*> open;  // guarded by mu: for Flush
};

class CompressingFile : public SinkFile {
 public:
  CompressingFile(std::shared_ptr<CompressShared> shared, std::unique_ptr<SinkFile> inner, std::string name,
                  size_t frame_bytes, size_t max_jobs)
      : shared_(std::move(shared)),
        inner_(std::move(inner)),
        name_(std::move(name)),
        frame_bytes_(frame_bytes),
        max_jobs_(max_jobs) {}
  ~CompressingFile() override {
    Deregister();
    // Jobs still in the pool hold their own references; the inner file is
    // dropped unclosed, which is what "not part of the backup" means.
  }
  CompressingFile(const CompressingFile&) = delete;
  CompressingFile& operator=(const CompressingFile&) = delete;

  Status Write(const void* data, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error(ErrorCode::kInternal, "write to closed file " + name_);
    XBAK_RETURN_IF_ERROR(error_);
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      if (pending_.capacity() == 0) pending_.reserve(frame_bytes_);
      size_t take = std::min(n, frame_bytes_ - pending_.size());
      pending_.insert(pending_.end(), p, p + take);
      p += take;
      n -= take;
      if (pending_.size() == frame_bytes_) XBAK_RETURN_IF_ERROR(Sticky(SubmitPending()));
    }
    // Hand finished frames on now, so they do not wait for the next frame.
    return Sticky(WriteDone(/*wait_all=*/false));
  }

  Status Close() override {
    Status st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return Error(ErrorCode::kInternal, "file " + name_ + " closed twice");
      closed_ = true;
      st = error_;
      // An empty file still gets one (empty) frame: a zero-byte .zst is not
      // something zstd -d accepts.
      if (st.ok() && (!pending_.empty() || frames_ == 0)) st = SubmitPending();
      if (st.ok()) st = WriteDone(/*wait_all=*/true);
      if (st.ok()) st = inner_->Close();
    }
    Deregister();
    return st;
  }

  // Sink::Flush: cuts a frame from what is pending and writes out every
  // frame, so everything written so far reaches the inner sink.
  Status FlushLocked() {
    XBAK_RETURN_IF_ERROR(error_);
    if (!pending_.empty()) XBAK_RETURN_IF_ERROR(Sticky(SubmitPending()));
    return Sticky(WriteDone(/*wait_all=*/true));
  }
  std::mutex& mu() { return mu_; }

 private:
  Status Sticky(Status st) {
    if (!st.ok() && error_.ok()) error_ = st;
    return st;
  }

  Status SubmitPending() {
    // Keeps this file's jobs (queued, compressing or waiting to be written)
    // under the cap: the memory bound.
    while (jobs_.size() >= max_jobs_) XBAK_RETURN_IF_ERROR(WriteHead());
    auto job = std::make_shared<Job>();
    job->in = std::move(pending_);
    pending_ = std::vector<uint8_t>();
    jobs_.push_back(job);
    ++frames_;
    shared_->pool->Submit(std::move(job));
    return Status::Ok();
  }

  // Waits for the oldest job and writes its frame: frames go out in order.
  Status WriteHead() {
    std::shared_ptr<Job> job = jobs_.front();
    shared_->pool->Wait(*job);
    jobs_.pop_front();
    XBAK_RETURN_IF_ERROR(job->status.With(name_));
    return inner_->Write(job->out.data(), job->out.size());
  }

  Status WriteDone(bool wait_all) {
    while (!jobs_.empty() && (wait_all || shared_->pool->IsDone(*jobs_.front()))) {
      XBAK_RETURN_IF_ERROR(WriteHead());
    }
    return Status::Ok();
  }

  void Deregister() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->open.erase(this);
  }

  std::shared_ptr<CompressShared> shared_;
  std::unique_ptr<SinkFile> inner_;
  const std::string name_;
  const size_t frame_bytes_;
  const size_t max_jobs_;
  std::mutex mu_;  // Write/Close are single-threaded per file, Sink::Flush is not
  std::vector<uint8_t> pending_;
  std::deque<std::shared_ptr<Job>> jobs_;
  uint64_t frames_ = 0;
  Status error_;  // sticky: a failed file must not go on with a gap
  bool closed_ = false;
};

class CompressingSink : public Sink {
 public:
  CompressingSink(std::unique_ptr<Sink> inner, CompressOptions options,
                  std::shared_ptr<CompressShared> shared)
      : inner_(std::move(inner)),
        options_(options),
        shared_(std::move(shared)),
        frame_bytes_(std::max(kCompressFrameBytes, options.chunk_size)) {}

  Result<std::unique_ptr<SinkFile>> Create(const std::string& relpath) override {
    const std::string name = relpath + std::string(CompressSuffix(options_.algo));
    XBAK_ASSIGN_OR_RETURN(std::unique_ptr<SinkFile> inner, inner_->Create(name));
    auto file = std::make_unique<CompressingFile>(shared_, std::move(inner), name, frame_bytes_,
                                                  static_cast<size_t>(options_.threads) + 1);
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->open.insert(file.get());
    return std::unique_ptr<SinkFile>(std::move(file));
  }

  Status Flush() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      for (CompressingFile* f : shared_->open) {
        std::lock_guard<std::mutex> flock(f->mu());
        XBAK_RETURN_IF_ERROR(f->FlushLocked());
      }
    }
    return inner_->Flush();
  }

  std::string Describe() const override {
    return inner_->Describe() + ", " + AlgoName(options_.algo) + "-compressed";
  }

 private:
  std::unique_ptr<Sink> inner_;
  const CompressOptions options_;
  std::shared_ptr<CompressShared> shared_;
  const size_t frame_bytes_;
};

}  // namespace

std::string_view CompressSuffix(CompressOptions::Algo algo) {
  return algo == CompressOptions::kZstd ? ".zst" : ".lz4";
}

Result<std::unique_ptr<Sink>> MakeCompressingSink(std::unique_ptr<Sink> inner, CompressOptions options) {
  if (!inner) return Error(ErrorCode::kInvalidArgument, "compressing sink needs an inner sink");
  if (options.algo != CompressOptions::kZstd && options.algo != CompressOptions::kLz4) {
    return Error(ErrorCode::kInvalidArgument, "unknown compression algorithm");
  }
  if (options.threads < 1 || options.threads > 1024) {
    return Error(ErrorCode::kInvalidArgument,
                 "--compress-threads must be between 1 and 1024, got " + std::to_string(options.threads));
  }
  if (options.algo == CompressOptions::kZstd &&
      (options.zstd_level < ZSTD_minCLevel() || options.zstd_level > ZSTD_maxCLevel() ||
       options.zstd_level == 0)) {
    return Error(ErrorCode::kInvalidArgument, "--compress-zstd-level must be between " +
                                                  std::to_string(ZSTD_minCLevel()) + " and " +
                                                  std::to_string(ZSTD_maxCLevel()) + " (not 0), got " +
                                                  std::to_string(options.zstd_level));
  }
  if (options.algo == CompressOptions::kLz4 &&
      (options.chunk_size == 0 || options.chunk_size > (size_t{4} << 20))) {
    return Error(ErrorCode::kInvalidArgument,
                 "--compress-chunk-size must be between 1 byte and 4 MiB for lz4, got " +
                     std::to_string(options.chunk_size));
  }
  auto shared = std::make_shared<CompressShared>();
  XBAK_ASSIGN_OR_RETURN(shared->pool, CompressPool::Create(options));
  return std::unique_ptr<Sink>(
      std::make_unique<CompressingSink>(std::move(inner), options, std::move(shared)));
}

}  // namespace xbak::sink
