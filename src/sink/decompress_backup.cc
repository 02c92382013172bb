// xbak --decompress (DecompressBackup in decompress.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "xbak/sink/decompress.h"
#include "xbak/stream/xbstream.h"  // kXbstreamPartialSuffix
#include "xbak/util/file.h"
#include "xbak/util/parallel.h"

namespace xbak::sink {
namespace {

struct DecompressJob {
  std::string input;   // X.zst
  std::string output;  // X
  CompressOptions::Algo algo;
  uint64_t size;
};

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

Status DecompressOne(const DecompressJob& job, bool remove_original, const std::atomic<bool>& cancel) {
  XBAK_ASSIGN_OR_RETURN(util::File in, util::File::OpenRead(job.input));
  XBAK_ASSIGN_OR_RETURN(std::unique_ptr<Decompressor> dec, Decompressor::Create(job.algo, job.input));
  const std::string partial = job.output + std::string(stream::kXbstreamPartialSuffix);
  // A leftover of an interrupted run is garbage by construction (the name
  // says so): replace it.
  if (::unlink(partial.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove", partial, errno);
  XBAK_ASSIGN_OR_RETURN(util::File out, util::File::CreateNew(partial));
  PartialFile guard(partial);

  std::vector<uint8_t> buf(size_t{1} << 20);
  uint64_t offset = 0;
  auto write = [&out](const uint8_t* p, size_t n) { return out.Write(p, n); };
  while (true) {
    if (cancel.load(std::memory_order_relaxed)) {
      return Error(ErrorCode::kCancelled, "decompressing " + job.input + " cancelled");
    }
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.data(), buf.size(), offset));
    if (n == 0) break;
    XBAK_RETURN_IF_ERROR(dec->Feed(buf.data(), n, write));
    offset += n;
  }
  XBAK_RETURN_IF_ERROR(dec->Finish());
  XBAK_RETURN_IF_ERROR(out.Sync());
  XBAK_RETURN_IF_ERROR(out.Close());
  XBAK_RETURN_IF_ERROR(util::RenameNoReplace(AT_FDCWD, partial, job.output, job.output));
  guard.Release();
  // The original goes only once the output's name is durable: a crash in
  // between leaves both, never neither.
  XBAK_RETURN_IF_ERROR(util::SyncDir(ParentDir(job.output)));
  if (remove_original && ::unlink(job.input.c_str()) != 0) return ErrnoError("remove", job.input, errno);
  return Status::Ok();
}

}  // namespace

Status DecompressBackup(const DecompressOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(options.target_dir, ec)) {
    return Error(ErrorCode::kNotFound, "--decompress: " + options.target_dir + " is not a directory");
  }
  std::vector<DecompressJob> jobs;
  // Not following directory symlinks: a link out of the backup must not make
  // us write elsewhere.
  for (auto it = fs::recursive_directory_iterator(options.target_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;  // an entry that vanished is skipped, not the end of the walk
    if (it->is_symlink(entry_ec) || !it->is_regular_file(entry_ec)) continue;
    const std::string path = it->path().string();
    for (auto algo : {CompressOptions::kZstd, CompressOptions::kLz4}) {
      std::string_view sfx = CompressSuffix(algo);
      if (!path.ends_with(sfx)) continue;
      uint64_t size = it->file_size(entry_ec);
      jobs.push_back({path, path.substr(0, path.size() - sfx.size()), algo, entry_ec ? 0 : size});
    }
  }
  if (ec) {
    return Error(ErrorCode::kIo, "--decompress: cannot list " + options.target_dir + ": " + ec.message());
  }

  // All refusals before any work, so a bad backup is left exactly as it was.
  std::map<std::string, std::string> outputs;
  for (const auto& j : jobs) {
    auto [it, inserted] = outputs.emplace(j.output, j.input);
    if (!inserted) {
      return Error(ErrorCode::kAlreadyExists, "--decompress: both " + it->second + " and " + j.input +
                                                  " would decompress to " + j.output);
    }
    struct stat st {};
    if (::lstat(j.output.c_str(), &st) == 0) {
      return Error(ErrorCode::kAlreadyExists, "--decompress: " + j.output +
                                                  " already exists; refusing to overwrite it with " +
                                                  j.input + " (remove it, or decompress a fresh copy)");
    }
  }
  // Largest first, so the big files do not start last and run alone.
  std::sort(jobs.begin(), jobs.end(),
            [](const DecompressJob& a, const DecompressJob& b) { return a.size > b.size; });

  std::atomic<bool> cancel{false};
  return util::RunParallel(
      jobs.size(), std::max(1, options.parallel),
      [&](size_t i) { return DecompressOne(jobs[i], options.remove_original, cancel); }, &cancel);
}

}  // namespace xbak::sink
