// `xbcloud get`: the plan (get_plan.h), the download job on the event loop
// (get_job.h, one class per download mode), one writer thread per output
// (get_output.h) and the hashing threads between them.
#include "xbak/cloud/get.h"

#include <algorithm>
#include <thread>
#include <tuple>

#include "get_job.h"
#include "get_output.h"
#include "get_plan.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::cloud {
namespace {

// How long a hashing thread waits for a piece of every object downloading
// (the batch to fill). Pieces of 1 MiB arrive about every millisecond.
constexpr std::chrono::microseconds kHashLinger{2000};

// With vector MD5 one thread hashes ~1.2 GB/s (two objects' ranges waiting)
// to 4 GB/s (eight): one per 4 cores, so that work queues up and shares its
// lanes (two threads on 2 cores took each piece alone, for 25% more CPU and
// no gain in time). Without it, one object per core at once.
unsigned HashThreads() {
  unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
  return storage::Md5ManyIsVectorized() ? std::max(cores / 4, 1u) : std::min(cores, 8u);
}

// A hashing thread: takes the work waiting (up to a batch), advances all of
// it at once, and tells the job on its loop.
void HashLoop(storage::EventLoop& loop, GetJob& job) {
  std::vector<HashWork> items;
  std::vector<storage::Md5Step> steps;
  while (job.hash_queue().PopSome(kHashBatch, &items, kHashLinger)) {
    steps.clear();
    for (auto& item : items) steps.push_back(item.step);
    storage::Md5Advance(steps);
    std::vector<std::tuple<size_t, int, size_t, size_t>> hashed;
    for (const auto& item : items) hashed.emplace_back(item.index, item.attempt, item.piece, item.parts);
    loop.Post([&job, hashed = std::move(hashed)] {
      for (const auto& [index, attempt, piece, parts] : hashed) job.Hashed(index, attempt, piece, parts);
    });
  }
}

}  // namespace

Status CloudGet(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const GetOptions& options, GetStats* stats) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(options.name));
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "no output stream");
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  XBAK_ASSIGN_OR_RETURN(GetPlan plan, PlanGet(loop, store, options, fds.size()));
  size_t files = plan.files;
  std::vector<size_t> counts = plan.output_counts;
  std::unique_ptr<GetJob> job = GetJob::Make(loop, store, options, std::move(plan));

  std::vector<std::thread> writers;
  for (size_t out = 0; out < fds.size(); out++) {
    std::string name = out < names.size() ? names[out] : "output " + std::to_string(out);
    writers.emplace_back([&loop, &job = *job, out, count = counts[out], fd = fds[out], name] {
      Status s = WriteOutput(job.queue(out), count, fd, name, job.written(), [&loop, &job](Ready r) {
        loop.Post([&job, index = r.index, parts = std::move(r.parts), last = r.last]() mutable {
          job.Written(index, std::move(parts), last);
        });
      });
      loop.Post([&job, s] { job.WriterDone(s); });
    });
  }
  std::vector<std::thread> hashers;
  for (unsigned v = 0; v < HashThreads(); v++)
    hashers.emplace_back([&loop, &job = *job] { HashLoop(loop, job); });
  job->Start();
  loop.Run();
  job->hash_queue().Close();
  for (auto& t : hashers) t.join();
  for (auto& t : writers) t.join();
  auto st = job->stats();
  st.files = files;
  if (stats != nullptr) *stats = st;
  if (!job->error().ok()) return job->error().With("xbcloud get " + options.name + " failed");
  util::LogInfo("get " + options.name + ": done, " + util::HumanBytes(st.bytes_written) + " in " +
                std::to_string(st.objects) + " objects (" + std::to_string(files) + " files) by " +
                std::to_string(st.requests) + " GETs, " +
                std::to_string(store.stats().retries + st.md5_retries) + " retries");
  return Status::Ok();
}

}  // namespace xbak::cloud
