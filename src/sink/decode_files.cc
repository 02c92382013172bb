// --decompress and --decrypt over a backup directory (decode_files.h).
#include "decode_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "xbak/stream/xbstream.h"  // kXbstreamPartialSuffix
#include "xbak/util/file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"
#include "xbak/util/sparse.h"

namespace xbak::sink {
namespace {

// Removes the partial output unless the job succeeded.
class PartialFile {
 public:
  explicit PartialFile(std::string path) : path_(std::move(path)) {}
  ~PartialFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

std::string ParentDir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Without --remove-original, each output stays under its partial name until every file is
// decoded and one syncfs made them durable; only then are they renamed (and synced again). An
// fsync per file is a storm at 20,000 tables, and a name must never stand for a file whose data a
// crash could lose. *awaits_rename says that this one's output awaits it.
Status DecodeOne(const DecodeRun& run, const DecodeJob& job, const std::atomic<bool>& cancel,
                 bool* awaits_rename) {
  XBAK_ASSIGN_OR_RETURN(util::File in, util::File::OpenRead(job.input));
  XBAK_ASSIGN_OR_RETURN(std::unique_ptr<FileDecoder> dec, job.make());
  const std::string partial = job.output + std::string(stream::kXbstreamPartialSuffix);
  // A leftover of an interrupted run is garbage by construction (the name
  // says so): replace it.
  if (::unlink(partial.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove", partial, errno);
  XBAK_ASSIGN_OR_RETURN(util::File out, util::File::CreateNew(partial));
  PartialFile guard(partial);

  // Sized to the input (one byte more, so that one short read ends it), up to 1 MiB, and not
  // zero-filled: a zeroed 1 MiB buffer per file cost more than decoding 20,000 small tables.
  const size_t cap = static_cast<size_t>(std::clamp<uint64_t>(job.size + 1, 64 << 10, 1 << 20));
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(cap);
  uint64_t offset = 0;
  // Zero blocks left holes, as in a backup written to a directory (sparse.h).
  util::SparseWriter sparse(out);
  auto write = [&sparse](const uint8_t* p, size_t n) { return sparse.Write(p, n); };
  while (true) {
    if (cancel.load(std::memory_order_relaxed)) {
      return Error(ErrorCode::kCancelled, run.option + " of " + job.input + " cancelled");
    }
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.get(), cap, offset));
    if (n == 0) break;
    XBAK_RETURN_IF_ERROR(dec->Feed(buf.get(), n, write));
    offset += n;
    if (n < cap) break;  // short only at the end
  }
  XBAK_RETURN_IF_ERROR(dec->Finish());
  XBAK_RETURN_IF_ERROR(sparse.Finish());
  if (!run.remove_original) {
    out.StartWriteback();  // the disk starts on it now; RunDecodeJobs syncs and renames it
    XBAK_RETURN_IF_ERROR(out.Close());
    guard.Release();
    *awaits_rename = true;
    return Status::Ok();
  }
  XBAK_RETURN_IF_ERROR(out.Sync());
  XBAK_RETURN_IF_ERROR(out.Close());
  XBAK_RETURN_IF_ERROR(util::RenameNoReplace(AT_FDCWD, partial, job.output, job.output));
  guard.Release();
  // The original goes only once the output and its name are durable: a crash in between
  // leaves both, never neither.
  XBAK_RETURN_IF_ERROR(util::SyncDir(ParentDir(job.output)));
  if (::unlink(job.input.c_str()) != 0) return ErrnoError("remove", job.input, errno);
  return Status::Ok();
}

}  // namespace

Result<std::vector<DecodeJob>> FindDecodeJobs(
    const DecodeRun& run,
    const std::function<std::optional<DecodeJob>(const std::string& path, uint64_t size)>& job_for) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(run.target_dir, ec)) {
    return Error(ErrorCode::kNotFound, run.option + ": " + run.target_dir + " is not a directory");
  }
  std::vector<DecodeJob> jobs;
  // Not following directory symlinks: a link out of the backup must not make
  // us write elsewhere.
  for (auto it = fs::recursive_directory_iterator(run.target_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;  // an entry that vanished is skipped, not the end of the walk
    if (it->is_symlink(entry_ec) || !it->is_regular_file(entry_ec)) continue;
    const uint64_t size = it->file_size(entry_ec);
    if (auto job = job_for(it->path().string(), entry_ec ? 0 : size)) jobs.push_back(std::move(*job));
  }
  if (ec) return Error(ErrorCode::kIo, run.option + ": cannot list " + run.target_dir + ": " + ec.message());
  return jobs;
}

Status RunDecodeJobs(const DecodeRun& run, std::vector<DecodeJob> jobs) {
  // All refusals before any work, so a bad backup is left exactly as it was.
  std::map<std::string, std::string> outputs;
  for (const auto& j : jobs) {
    auto [it, inserted] = outputs.emplace(j.output, j.input);
    if (!inserted) {
      return Error(ErrorCode::kAlreadyExists, run.option + ": both " + it->second + " and " + j.input +
                                                  " would " + run.verb + " to " + j.output);
    }
    struct stat st {};
    if (::lstat(j.output.c_str(), &st) == 0) {
      return Error(ErrorCode::kAlreadyExists, run.option + ": " + j.output +
                                                  " already exists; refusing to overwrite it with " +
                                                  j.input + " (remove it, or start from a fresh copy)");
    }
  }
  // Largest first, so the big files do not start last and run alone.
  std::sort(jobs.begin(), jobs.end(), [](const DecodeJob& a, const DecodeJob& b) { return a.size > b.size; });
  std::vector<util::PrefetchRange> ranges;
  for (const DecodeJob& j : jobs) ranges.push_back({j.input, j.size});
  // A cold disk kept busy: the files' starts asked ahead of the threads.
  auto ahead = util::PrefetchWholeFiles(std::move(ranges));
  std::atomic<bool> cancel{false};
  // One flag per job (each written by its own thread only): decoded, awaiting its rename.
  auto decoded = std::make_unique<bool[]>(jobs.size());
  Status st = util::RunParallel(
      jobs.size(), std::max(1, run.parallel),
      [&](size_t i) {
        Status s = DecodeOne(run, jobs[i], cancel, &decoded[i]);
        ahead->Consumed();
        return s;
      },
      &cancel);
  if (st.ok()) st = util::SyncFilesystem(run.target_dir);
  for (size_t i = 0; i < jobs.size(); i++) {
    if (!decoded[i]) continue;
    const std::string partial = jobs[i].output + std::string(stream::kXbstreamPartialSuffix);
    if (!st.ok()) {
      ::unlink(partial.c_str());  // a failed run leaves what it found, nothing more
    } else {
      st = util::RenameNoReplace(AT_FDCWD, partial, jobs[i].output, jobs[i].output);
      if (!st.ok()) ::unlink(partial.c_str());
    }
  }
  XBAK_RETURN_IF_ERROR(st);
  return util::SyncFilesystem(run.target_dir);
}

}  // namespace xbak::sink
