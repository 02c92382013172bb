#include "xbak/util/copy_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "xbak/util/file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"
#include "xbak/util/sparse.h"

namespace xbak::util {

Status CopyDataRuns(const File& in, uint64_t size, SparseWriter* out, std::span<uint8_t> buf,
                    Progress* progress) {
  auto skip = [&](uint64_t n) {
    if (out) out->Skip(n);
    if (progress) progress->AddDone(n);
  };
  for (uint64_t off = 0; off < size;) {
    XBAK_ASSIGN_OR_RETURN(auto s, in.NextStretch(off, size));
    if (!s) {  // a hole to the end of the file (as long as it still is)
      XBAK_ASSIGN_OR_RETURN(uint64_t now, in.Size());
      skip(std::min(size, std::max(now, off)) - off);
      return Status::Ok();
    }
    skip(s->begin - off);
    off = s->begin;
    while (off < s->end) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), s->end - off));
      XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.data(), want, off));
      if (n == 0) return Status::Ok();  // shorter than it was: what it holds is copied
      if (out) XBAK_RETURN_IF_ERROR(out->Write(buf.data(), n));
      off += n;
      if (progress) progress->AddDone(n);
    }
  }
  return Status::Ok();
}

Status PlaceFile(const std::string& src, const std::string& dest, const PlaceFileOptions& o,
                 Progress* progress) {
  if (o.move) {
    if (::rename(src.c_str(), dest.c_str()) == 0) {
      if (progress) {
        struct stat st {};
        if (::stat(dest.c_str(), &st) == 0) progress->AddDone(static_cast<uint64_t>(st.st_size));
        progress->FileDone();
      }
      return Status::Ok();
    }
    if (errno != EXDEV) return ErrnoError("rename " + src + " to", dest, errno);
  }
  XBAK_ASSIGN_OR_RETURN(File in, File::OpenRead(src));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, in.Size());
  const std::string tmp = o.in_place ? dest : dest + ".xbtmp";
  if ((!o.in_place || o.replace) && ::unlink(tmp.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove", tmp, errno);
  }
  XBAK_ASSIGN_OR_RETURN(File out, File::CreateNew(tmp));
  SparseWriter sparse(out);
  // Sized to the file, up to 4 MiB, and not zero-filled: most files of a
  // datadir are small tables, and filling a 4 MiB buffer for each of
  // 100,000 of them cost more than copying them.
  const size_t cap = static_cast<size_t>(std::clamp<uint64_t>(size, 4096, 4 << 20));
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(cap);
  XBAK_RETURN_IF_ERROR(CopyDataRuns(in, size, &sparse, {buf.get(), cap}, progress));
  XBAK_RETURN_IF_ERROR(sparse.Finish());
  if (o.sync) {
    XBAK_RETURN_IF_ERROR(out.Sync());
  } else {
    // The caller syncs the filesystem once at the end. The disk starts on this file now, while
    // the next ones are copied, instead of all of them in that sync.
    out.StartWriteback();
  }
  XBAK_RETURN_IF_ERROR(out.Close());
  if (!o.in_place && ::rename(tmp.c_str(), dest.c_str()) != 0) {
    return ErrnoError("rename " + tmp + " to", dest, errno);
  }
  if (o.move && ::unlink(src.c_str()) != 0) return ErrnoError("remove", src, errno);
  if (progress) progress->FileDone();
  return Status::Ok();
}

Status PlaceFiles(std::vector<FileToPlace> files, int parallel, const PlaceFileOptions& o,
                  Progress* progress) {
  std::sort(files.begin(), files.end(),
            [](const FileToPlace& a, const FileToPlace& b) { return a.size > b.size; });
  std::unique_ptr<Prefetcher> ahead;
  if (!o.move) {
    std::vector<PrefetchRange> ranges;
    ranges.reserve(files.size());
    for (const FileToPlace& f : files) ranges.push_back({f.src, f.size});
    ahead = PrefetchWholeFiles(std::move(ranges));
  }
  std::atomic<bool> cancel{false};
  return RunParallel(
      files.size(), parallel,
      [&](size_t i) {
        Status st = PlaceFile(files[i].src, files[i].dest, o, progress);
        if (ahead) ahead->Consumed();
        return st;
      },
      &cancel);
}

}  // namespace xbak::util
