// The physical floor of an incremental prepare, for benchmarks/scale_bench.sh and
// benchmarks/prepare_bench.sh: every page of every .delta under INC written into the file of the
// same relative path under BASE at its page's offset, its writeback started as each file is done,
// and every other file of INC (table definitions, non-InnoDB tables, its redo log and metadata:
// what the prepared base must hold; since 2026-11-29) written over the base's where it differs
// from it, then one syncfs(). Nothing else: no checksum, no page 0 or size check, no redo applied. What xbak
// --prepare
// --incremental-dir must do at the least, so its delta step can be reported as a ratio to this.
//
//   xbak_delta_floor BASE INC [THREADS]
//
// Threads take whole files from one shared list (the benchmark's deltas are many small files; a
// big delta is one thread's work here, which favours neither side on that dataset). Prints the
// files, pages and seconds on stdout.
// The reads are asked of the disk ahead of the threads (util::Prefetcher: every .meta and .delta,
// and each target's inode, 32 at a time), as the hardware allows and as xbak does: with one read
// per thread at a time a cold disk sits mostly idle, and xbak, which reads ahead, came out at 0.6x
// this floor (20,000 tables, cache dropped, 2026-11-29): a floor it beats is no floor.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "xbak/innodb/delta.h"
#include "xbak/util/file.h"
#include "xbak/util/prefetch.h"

namespace fs = std::filesystem;
using namespace xbak;

namespace {

struct Job {
  std::string delta, meta, target;  // meta empty: `delta` is another file, copied over `target`
};

// Written only where it differs from the base's copy: rewriting 20,000 equal table definitions
// took 2-3 s, more than reading both (which is what a program that trusts no metadata must do).
Status CopyOver(const Job& job) {
  XBAK_ASSIGN_OR_RETURN(std::string mine, util::ReadSmallFile(job.delta, size_t{1} << 30));
  auto theirs = util::ReadSmallFile(job.target, mine.size() + 1);
  if (theirs.ok() && *theirs == mine) return Status::Ok();
  int fd = ::open(job.target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("open", job.target, errno);
  util::File out = util::File::Adopt(util::UniqueFd(fd), job.target);
  XBAK_RETURN_IF_ERROR(out.PWrite(mine.data(), mine.size(), 0));  // what was read above, not read again
  out.StartWriteback();
  return out.Close();
}

Status ApplyOne(const Job& job, uint64_t* pages) {
  if (job.meta.empty()) return CopyOver(job);
  XBAK_ASSIGN_OR_RETURN(std::string meta_text, util::ReadSmallFile(job.meta));
  XBAK_ASSIGN_OR_RETURN(innodb::DeltaMeta meta, innodb::ParseDeltaMeta(meta_text, job.meta));
  uint32_t page_size = meta.zip_size ? meta.zip_size : meta.page_size;
  XBAK_ASSIGN_OR_RETURN(util::File in, util::File::OpenRead(job.delta));
  int fd = ::open(job.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("open", job.target, errno);
  util::File out = util::File::Adopt(util::UniqueFd(fd), job.target);
  innodb::DeltaReader reader(in, page_size);
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(bool more, reader.Next());
    if (!more) break;
    const auto& nos = reader.page_numbers();
    for (size_t i = 0; i < nos.size(); ++i) {
      XBAK_RETURN_IF_ERROR(out.PWrite(reader.page(i), page_size, uint64_t{nos[i]} * page_size));
    }
    *pages += nos.size();
  }
  // As xbak does: the disk starts on each file while the next is written (a floor that xbak's
  // scheduling could beat would be no floor).
  out.StartWriteback();
  return out.Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s BASE INC [THREADS]\n", argv[0]);
    return 2;
  }
  const fs::path base = argv[1], inc = argv[2];
  const int threads = argc == 4 ? std::max(1, std::atoi(argv[3])) : 1;
  auto t0 = std::chrono::steady_clock::now();

  std::vector<Job> jobs;
  std::vector<Job> others;
  for (const auto& e : fs::recursive_directory_iterator(inc)) {
    if (!e.is_regular_file() || e.path().extension() == ".meta") continue;
    fs::path rel = e.path().lexically_relative(inc);  // fs::relative: syscalls per file
    if (e.path().extension() != ".delta") {
      others.push_back({e.path().string(), "", (base / rel).string()});
      continue;
    }
    fs::path stem = rel;
    stem.replace_extension();
    fs::path meta = e.path();
    meta.replace_extension(".meta");
    jobs.push_back({e.path().string(), meta.string(), (base / stem).string()});
  }
  jobs.insert(jobs.end(), others.begin(), others.end());

  std::vector<util::PrefetchRange> ahead;
  ahead.reserve(3 * jobs.size());
  for (const Job& j : jobs) {
    if (j.meta.empty()) continue;
    ahead.push_back({j.meta, 0});
    ahead.push_back({j.delta, 0});
    ahead.push_back({j.target, util::kInodeOnly});
  }
  for (const Job& j : others) {  // compared: both read
    ahead.push_back({j.delta, 0});
    ahead.push_back({j.target, 0});
  }
  util::Prefetcher prefetch(std::move(ahead));
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> pages{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      uint64_t mine = 0;
      for (size_t i; !failed && (i = next++) < jobs.size();) {
        Status st = ApplyOne(jobs[i], &mine);
        if (!st.ok()) {
          std::fprintf(stderr, "xbak_delta_floor: %s\n", st.message().c_str());
          failed = true;
        }
      }
      pages += mine;
    });
  }
  for (auto& th : pool) th.join();
  if (failed) return 1;

  // One syncfs for the whole base, as xbak's prepare makes its writes durable.
  int dfd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::syncfs(dfd) != 0) {
    std::perror(base.c_str());
    return 1;
  }
  ::close(dfd);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("files %zu pages %llu seconds %.3f\n", jobs.size(),
              static_cast<unsigned long long>(pages.load()), s);
  return 0;
}
