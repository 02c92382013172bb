#include "transform_sink.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace xbak::sink {
namespace {

struct Work {
  std::shared_ptr<ChunkJob> job;
  std::shared_ptr<const FileTransform> transform;  // alive while a job of its file is queued
};

// Worker threads shared by all files of one sink. Unbounded queue by itself;
// the bound comes from each file never having more than its cap of jobs out.
class ChunkPool {
 public:
  static Result<std::shared_ptr<ChunkPool>> Create(const TransformSpec& spec) {
    std::vector<std::unique_ptr<WorkerState>> states;
    for (int i = 0; i < spec.Threads(); ++i) {
      XBAK_ASSIGN_OR_RETURN(std::unique_ptr<WorkerState> s, spec.NewWorker());
      states.push_back(std::move(s));
    }
    auto pool = std::shared_ptr<ChunkPool>(new ChunkPool());
    for (auto& s : states) {
      pool->threads_.emplace_back([p = pool.get(), s = std::move(s)]() mutable { p->Run(s.get()); });
    }
    return pool;
  }
  ~ChunkPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  void Submit(Work w) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(w));
    }
    work_cv_.notify_one();
  }
  void Wait(const ChunkJob& job) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return job.done; });
  }
  bool IsDone(const ChunkJob& job) {
    std::lock_guard<std::mutex> lock(mu_);
    return job.done;
  }

 private:
  ChunkPool() = default;
  void Run(WorkerState* state) {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      // Stopping means every file is gone: nobody waits for what is queued.
      if (stop_) return;
      Work w = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Status st = w.transform->Apply(*w.job, state);
      w.job->in = std::vector<uint8_t>();  // the input is no longer needed: free it before the write
      lock.lock();
      w.job->status = st;
      w.job->done = true;
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Work> queue_;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::vector<std::thread> threads_;
};

class TransformingFile;

struct TransformShared {
  std::shared_ptr<ChunkPool> pool;
  std::mutex mu;
  std::set<TransformingFile*> open;  // guarded by mu: for Flush
};

class TransformingFile : public SinkFile {
 public:
  TransformingFile(std::shared_ptr<TransformShared> shared, std::shared_ptr<const FileTransform> transform,
                   std::unique_ptr<SinkFile> inner, std::string name, size_t chunk_bytes, size_t max_jobs)
      : shared_(std::move(shared)),
        transform_(std::move(transform)),
        inner_(std::move(inner)),
        name_(std::move(name)),
        chunk_bytes_(chunk_bytes),
        max_jobs_(max_jobs) {}
  ~TransformingFile() override {
    Deregister();
    // Jobs still in the pool hold their own references; the inner file is
    // dropped unclosed, which is what "not part of the backup" means.
  }
  TransformingFile(const TransformingFile&) = delete;
  TransformingFile& operator=(const TransformingFile&) = delete;

  Status Write(const void* data, size_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Error(ErrorCode::kInternal, "write to closed file " + name_);
    XBAK_RETURN_IF_ERROR(error_);
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      if (pending_.empty() && n >= chunk_bytes_ && transform_->CanRunInline()) {
        XBAK_RETURN_IF_ERROR(Sticky(ApplyInline(p)));
        p += chunk_bytes_;
        n -= chunk_bytes_;
        continue;
      }
      if (pending_.capacity() == 0) pending_.reserve(chunk_bytes_);
      size_t take = std::min(n, chunk_bytes_ - pending_.size());
      pending_.insert(pending_.end(), p, p + take);
      p += take;
      n -= take;
      if (pending_.size() == chunk_bytes_) XBAK_RETURN_IF_ERROR(Sticky(SubmitPending(false)));
    }
    // Hand finished chunks on now, so they do not wait for the next chunk.
    return Sticky(WriteDone(/*wait_all=*/false));
  }

  Status Close() override {
    Status st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return Error(ErrorCode::kInternal, "file " + name_ + " closed twice");
      closed_ = true;
      st = error_;
      if (st.ok() && !pending_.empty()) st = SubmitPending(false);
      if (st.ok() && transform_->Closing(chunks_)) st = SubmitPending(true);
      if (st.ok()) st = WriteDone(/*wait_all=*/true);
      if (st.ok()) st = WritePrologue();  // a file that never had a chunk
      if (st.ok()) st = inner_->Close();
    }
    Deregister();
    return st;
  }

  // Sink::Flush: cuts a chunk from what is pending and writes out every
  // chunk, so everything written so far reaches the inner sink.
  Status FlushLocked() {
    XBAK_RETURN_IF_ERROR(error_);
    if (!pending_.empty()) XBAK_RETURN_IF_ERROR(Sticky(SubmitPending(false)));
    return Sticky(WriteDone(/*wait_all=*/true));
  }
  std::mutex& mu() { return mu_; }

 private:
  Status Sticky(Status st) {
    if (!st.ok() && error_.ok()) error_ = st;
    return st;
  }

  // A whole chunk of the caller's, transformed on this thread: after every
  // chunk before it, so they stay in order.
  Status ApplyInline(const uint8_t* p) {
    XBAK_RETURN_IF_ERROR(WriteDone(/*wait_all=*/true));
    XBAK_RETURN_IF_ERROR(transform_->ApplyInline(p, chunk_bytes_, chunks_++, &inline_out_).With(name_));
    XBAK_RETURN_IF_ERROR(WritePrologue());
    return inner_->Write(inline_out_.data(), inline_out_.size());
  }

  Status WritePrologue() {
    if (prologue_written_) return Status::Ok();
    prologue_written_ = true;
    const std::string p = transform_->Prologue();
    return p.empty() ? Status::Ok() : inner_->Write(p.data(), p.size());
  }

  Status SubmitPending(bool last) {
    // Keeps this file's jobs (queued, in work or waiting to be written) under
    // the cap: the memory bound.
    while (jobs_.size() >= max_jobs_) XBAK_RETURN_IF_ERROR(WriteHead());
    auto job = std::make_shared<ChunkJob>();
    job->in = std::move(pending_);
    pending_ = std::vector<uint8_t>();
    job->index = chunks_++;
    job->last = last;
    jobs_.push_back(job);
    shared_->pool->Submit(Work{std::move(job), transform_});
    return Status::Ok();
  }

  // Waits for the oldest job and writes its output: chunks go out in order.
  Status WriteHead() {
    std::shared_ptr<ChunkJob> job = jobs_.front();
    shared_->pool->Wait(*job);
    jobs_.pop_front();
    XBAK_RETURN_IF_ERROR(job->status.With(name_));
    XBAK_RETURN_IF_ERROR(WritePrologue());
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

  std::shared_ptr<TransformShared> shared_;
  std::shared_ptr<const FileTransform> transform_;
  std::unique_ptr<SinkFile> inner_;
  const std::string name_;
  const size_t chunk_bytes_;
  const size_t max_jobs_;
  std::mutex mu_;  // Write/Close are single-threaded per file, Sink::Flush is not
  std::vector<uint8_t> pending_;
  std::deque<std::shared_ptr<ChunkJob>> jobs_;
  ChunkOutput inline_out_;  // the output of ApplyInline, reused
  uint64_t chunks_ = 0;
  bool prologue_written_ = false;
  Status error_;  // sticky: a failed file must not go on with a gap
  bool closed_ = false;
};

class TransformingSink : public Sink {
 public:
  TransformingSink(std::unique_ptr<Sink> inner, std::unique_ptr<TransformSpec> spec,
                   std::shared_ptr<TransformShared> shared)
      : inner_(std::move(inner)), spec_(std::move(spec)), shared_(std::move(shared)) {}

  Result<std::unique_ptr<SinkFile>> Create(const std::string& relpath) override {
    const std::string name = relpath + spec_->Suffix();
    XBAK_ASSIGN_OR_RETURN(std::unique_ptr<FileTransform> transform, spec_->ForFile(relpath));
    XBAK_ASSIGN_OR_RETURN(std::unique_ptr<SinkFile> inner, inner_->Create(name));
    auto file =
        std::make_unique<TransformingFile>(shared_, std::move(transform), std::move(inner), name,
                                           spec_->ChunkBytes(), static_cast<size_t>(spec_->Threads()) + 1);
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->open.insert(file.get());
    return std::unique_ptr<SinkFile>(std::move(file));
  }

  Status MakeDir(const std::string& relpath) override { return inner_->MakeDir(relpath); }

  Status Flush() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      for (TransformingFile* f : shared_->open) {
        std::lock_guard<std::mutex> flock(f->mu());
        XBAK_RETURN_IF_ERROR(f->FlushLocked());
      }
    }
    return inner_->Flush();
  }

  std::string Describe() const override { return inner_->Describe() + ", " + spec_->Describe(); }

 private:
  std::unique_ptr<Sink> inner_;
  std::unique_ptr<TransformSpec> spec_;
  std::shared_ptr<TransformShared> shared_;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeTransformingSink(std::unique_ptr<Sink> inner,
                                                   std::unique_ptr<TransformSpec> spec) {
  if (!inner) return Error(ErrorCode::kInvalidArgument, "a transforming sink needs an inner sink");
  auto shared = std::make_shared<TransformShared>();
  XBAK_ASSIGN_OR_RETURN(shared->pool, ChunkPool::Create(*spec));
  return std::unique_ptr<Sink>(
      std::make_unique<TransformingSink>(std::move(inner), std::move(spec), std::move(shared)));
}

}  // namespace xbak::sink
