// The physical floor of a copy-back (benchmarks/scale_bench.sh): every regular file under SRC
// read and written to the same relative path under DEST (directories made as needed), largest
// first, what reads as zeros (holes, preallocated space) not read and aligned 4 KiB blocks of
// zeros left as holes, its writeback started as each file is done,
// then one syncfs(). Nothing else: no plan, no checks, no marker file, no redo log placed last. What xbak
// --copy-back must do at the least, so that it can be reported as a ratio to this.
//
//   xbak_copy_floor [--skip NAME]... SRC DEST [THREADS]
//
// --skip: a file named NAME directly under SRC is left out (a backup's floor skips the redo log
// and the temporary tablespace, which a backup does not read whole).
//
// DEST "-": the files are only read (the floor of a backup streamed to /dev/null: the bytes a
// backup must read, nothing written).
//
// The reads are asked of the disk ahead of the threads as xbak's are (util::Prefetcher: the first
// MiB of each file, 64 files ahead): with one read per thread at a time a cold disk sits idle
// between small files, and a floor xbak's scheduling could beat would be no floor.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "xbak/util/copy_file.h"
#include "xbak/util/file.h"
#include "xbak/util/prefetch.h"
#include "xbak/util/sparse.h"

namespace fs = std::filesystem;
using namespace xbak;

namespace {

struct Job {
  std::string src, dest;
  uint64_t size;
};

Status CopyOne(const Job& job, std::vector<uint8_t>& buf) {
  XBAK_ASSIGN_OR_RETURN(util::File in, util::File::OpenRead(job.src));
  // What reads as zeros (holes, preallocated space) is neither read nor written: the disk need
  // not (xbak does not either).
  if (job.dest.empty()) return util::CopyDataRuns(in, job.size, nullptr, buf, nullptr);
  int fd = ::open(job.dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("open", job.dest, errno);
  util::File out = util::File::Adopt(util::UniqueFd(fd), job.dest);
  util::SparseWriter sparse(out);
  XBAK_RETURN_IF_ERROR(util::CopyDataRuns(in, job.size, &sparse, buf, nullptr));
  XBAK_RETURN_IF_ERROR(sparse.Finish());
  out.StartWriteback();
  return out.Close();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> skip, args;
  for (int i = 1; i < argc; i++) {
    if (std::string(argv[i]) == "--skip" && i + 1 < argc) {
      skip.push_back(argv[++i]);
    } else {
      args.push_back(argv[i]);
    }
  }
  if (args.size() < 2 || args.size() > 3) {
    std::fprintf(stderr, "usage: %s [--skip NAME]... SRC DEST [THREADS]\n", argv[0]);
    return 2;
  }
  const fs::path src = args[0], dest = args[1];
  const bool read_only = dest == "-";
  const int threads = args.size() == 3 ? std::max(1, std::atoi(args[2].c_str())) : 1;
  auto t0 = std::chrono::steady_clock::now();

  std::vector<Job> jobs;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    // Lexical: fs::relative resolves both paths on disk, a few syscalls per file that no copy needs.
    const fs::path rel = e.path().lexically_relative(src);
    if (std::find(skip.begin(), skip.end(), rel.string()) != skip.end()) continue;
    if (e.is_directory()) {
      if (!read_only) fs::create_directories(dest / rel);
    } else if (e.is_regular_file()) {
      jobs.push_back({e.path().string(), read_only ? "" : (dest / rel).string(), e.file_size()});
    }
  }
  if (!read_only) fs::create_directories(dest);
  const double listed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.size > b.size; });
  std::vector<util::PrefetchRange> ahead;
  ahead.reserve(jobs.size());
  for (const Job& j : jobs) ahead.push_back({j.src, j.size});
  std::unique_ptr<util::Prefetcher> prefetch = util::PrefetchWholeFiles(std::move(ahead));

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<uint8_t> buf(4 << 20);
      for (size_t i; !failed && (i = next++) < jobs.size();) {
        Status st = CopyOne(jobs[i], buf);
        prefetch->Consumed();
        if (!st.ok()) {
          std::fprintf(stderr, "xbak_copy_floor: %s\n", st.message().c_str());
          failed = true;
        }
        bytes += jobs[i].size;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (failed) return 1;

  if (!read_only) {
    int dfd = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || ::syncfs(dfd) != 0) {
      std::perror(dest.c_str());
      return 1;
    }
    ::close(dfd);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("files %zu bytes %llu seconds %.3f (listing %.3f)\n", jobs.size(),
              static_cast<unsigned long long>(bytes.load()), s, listed);
  return 0;
}
