#include <fcntl.h>
#include <stdio.h>  // renameat
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "xbak/stream/xbstream.h"
#include "xbak/util/sparse.h"

namespace xbak::stream {

struct Extractor::OpenFile {
  std::mutex mu;
  std::string rel;                        // normalised path in the target
  std::string name;                       // last component
  std::shared_ptr<util::UniqueFd> dir;    // its directory, opened without following links
  util::UniqueFd fd;                      // the .xbpartial file
  uint64_t size = 0;                      // bytes written so far
  uint64_t in_size = 0;                   // bytes of the stream taken = next expected offset
  std::unique_ptr<ExtractFilter> filter;  // --extract --decrypt: what the stream's bytes go through
};

namespace {

std::string PartialName(const std::string& name) { return name + std::string(kXbstreamPartialSuffix); }

Status PWriteAll(int fd, const uint8_t* p, size_t n, uint64_t off, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", what + " at offset " + std::to_string(off), errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

}  // namespace

Extractor::Extractor(ExtractOptions options, util::UniqueFd root)
    : options_(std::move(options)), root_(std::make_shared<util::UniqueFd>(std::move(root))) {}

Extractor::~Extractor() = default;

Result<std::unique_ptr<Extractor>> Extractor::Open(const ExtractOptions& options) {
  if (options.target_dir.empty())
    return Error(ErrorCode::kInvalidArgument, "no target directory for extraction");
  XBAK_RETURN_IF_ERROR(util::MakeDirs(options.target_dir));
  // The target itself is the operator's choice and may be reached through a
  // symlink; only paths inside it are confined.
  int fd = ::open(options.target_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", options.target_dir, errno);
  return std::unique_ptr<Extractor>(new Extractor(options, util::UniqueFd(fd)));
}

size_t Extractor::files_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_.size();
}

Result<std::shared_ptr<util::UniqueFd>> Extractor::OpenDir(const std::string& rel_dir) {
  if (rel_dir.empty()) return root_;
  auto it = dirs_.find(rel_dir);
  if (it != dirs_.end()) return it->second;
  std::shared_ptr<util::UniqueFd> parent;
  std::string name;
  size_t slash = rel_dir.rfind('/');
  if (slash == std::string::npos) {
    parent = root_;
    name = rel_dir;
  } else {
    XBAK_ASSIGN_OR_RETURN(parent, OpenDir(rel_dir.substr(0, slash)));
    name = rel_dir.substr(slash + 1);
  }
  const std::string shown = util::JoinPath(options_.target_dir, rel_dir);
  if (::mkdirat(parent->get(), name.c_str(), 0750) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir", shown, errno);
  }
  // O_NOFOLLOW: a symlink here (planted before or during extraction) fails
  // with ELOOP instead of leading the write somewhere else.
  int fd = ::openat(parent->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return Error(ErrorCode::kIo, "refusing to extract into " + shown + ": not a directory (or a symlink)");
    }
    return ErrnoError("open directory", shown, err);
  }
  auto dir = std::make_shared<util::UniqueFd>(fd);
  dirs_.emplace(rel_dir, dir);
  return dir;
}

Result<std::shared_ptr<Extractor::OpenFile>> Extractor::CreateFile(const std::string& stream_rel) {
  auto f = std::make_shared<OpenFile>();
  std::string rel = stream_rel;
  if (options_.filter) {
    OpenFile* raw = f.get();  // the filter is the file's: it never outlives it
    XBAK_ASSIGN_OR_RETURN(
        f->filter, options_.filter(stream_rel, &rel,
                                   [this, raw](const uint8_t* p, size_t n) { return WriteOut(*raw, p, n); }));
    if (!f->filter) rel = stream_rel;
  }
  f->rel = rel;
  size_t slash = rel.rfind('/');
  f->name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  XBAK_ASSIGN_OR_RETURN(f->dir, OpenDir(slash == std::string::npos ? std::string() : rel.substr(0, slash)));
  const std::string shown = util::JoinPath(options_.target_dir, rel);
  struct stat st {};
  if (::fstatat(f->dir->get(), f->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!options_.overwrite) {
      return Error(ErrorCode::kAlreadyExists, "refusing to overwrite existing " + shown);
    }
    if (S_ISDIR(st.st_mode)) return Error(ErrorCode::kAlreadyExists, "cannot replace directory " + shown);
  } else if (errno != ENOENT) {
    return ErrnoError("stat", shown, errno);
  }
  // A leftover partial file from an interrupted run is never data anyone
  // relies on, so it may be replaced; O_NOFOLLOW still refuses a symlink.
  const std::string partial = PartialName(f->name);
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (options_.overwrite ? O_TRUNC : O_EXCL);
  int fd = ::openat(f->dir->get(), partial.c_str(), flags, 0640);
  if (fd < 0) return ErrnoError("create", shown + std::string(kXbstreamPartialSuffix), errno);
  f->fd = util::UniqueFd(fd);
  return f;
}

Status Extractor::Apply(const Chunk& chunk) {
  auto where = [&] { return "xbstream at byte " + std::to_string(chunk.stream_offset); };
  if (chunk.type == ChunkType::kUnknown) return Status::Ok();  // ignorable (the reader refused the rest)
  Result<std::string> norm = NormalizeXbstreamPath(chunk.path);
  if (!norm.ok()) return norm.status().With(where());
  const std::string& rel = norm.value();

  std::shared_ptr<OpenFile> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_.count(rel) != 0) {
      return Error(ErrorCode::kCorrupt, where() + " (file " + rel + "): chunk after the file's EOF chunk");
    }
    auto it = open_.find(rel);
    if (it != open_.end()) {
      f = it->second;
    } else {
      Result<std::shared_ptr<OpenFile>> created = CreateFile(rel);
      if (!created.ok()) return created.status();
      f = std::move(created).value();
      open_.emplace(rel, f);
    }
    if (chunk.type == ChunkType::kEof) {
      // Claimed now, under mu_, so a racing chunk for it is refused.
      open_.erase(rel);
      done_.insert(rel);
    }
  }

  std::lock_guard<std::mutex> flock(f->mu);
  if (chunk.type == ChunkType::kEof) return Complete(*f);
  if (!f->fd.valid())
    return Error(ErrorCode::kCorrupt, where() + " (file " + rel + "): chunk after the file's EOF chunk");
  if (chunk.offset != f->in_size) {
    // mbstream refuses this too; a gap or overlap means chunks were lost or duplicated.
    return Error(ErrorCode::kCorrupt, where() + " (file " + rel + "): out-of-order chunk at offset " +
                                          std::to_string(chunk.offset) + ", expected " +
                                          std::to_string(f->in_size));
  }
  f->in_size += chunk.payload.size();
  if (f->filter) return f->filter->Write(chunk.payload.data(), chunk.payload.size()).With(where());
  return WriteOut(*f, chunk.payload.data(), chunk.payload.size());
}

// Appends to the file's output. Zero blocks stay holes (a PAGE_COMPRESSED
// table extracts as sparse as the server keeps it); Complete gives the file
// its full size.
Status Extractor::WriteOut(OpenFile& f, const uint8_t* data, size_t n) {
  const int fd = f.fd.get();
  const std::string what = util::JoinPath(options_.target_dir, f.rel) + std::string(kXbstreamPartialSuffix);
  XBAK_RETURN_IF_ERROR(util::WriteSkippingZeroBlocks(
      data, n, f.size,
      [&](const uint8_t* p, size_t len, uint64_t off) { return PWriteAll(fd, p, len, off, what); }));
  f.size += n;
  return Status::Ok();
}

Status Extractor::Complete(OpenFile& f) {
  if (f.filter) XBAK_RETURN_IF_ERROR(f.filter->Finish());
  const std::string shown = util::JoinPath(options_.target_dir, f.rel);
  // Zeros at the end were skipped (holes): the file gets its full size.
  struct stat st {};
  if (::fstat(f.fd.get(), &st) != 0) return ErrnoError("stat", shown, errno);
  if (static_cast<uint64_t>(st.st_size) < f.size &&
      ::ftruncate(f.fd.get(), static_cast<off_t>(f.size)) != 0) {
    return ErrnoError("extend", shown, errno);
  }
  if (options_.fsync && ::fdatasync(f.fd.get()) != 0) return ErrnoError("fsync", shown, errno);
  if (::close(f.fd.Release()) != 0) return ErrnoError("close", shown, errno);
  if (options_.hold_to_end && options_.hold_to_end(f.rel)) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back({f.dir, f.name, shown});
    return Status::Ok();
  }
  return Rename(f.dir->get(), f.name, shown);
}

Status Extractor::Rename(int dir, const std::string& name, const std::string& shown) {
  const std::string partial = PartialName(name);
  if (options_.overwrite) {
    // rename(2) replaces a symlink itself, never what it points to.
    if (::renameat(dir, partial.c_str(), dir, name.c_str()) != 0) return ErrnoError("rename", shown, errno);
    return Status::Ok();
  }
  // NOREPLACE closes the window between the existence check at create time
  // and now.
  return util::RenameNoReplace(dir, partial, name, shown);
}

Status Extractor::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_.empty()) {
    const size_t incomplete = open_.size();
    std::string list;
    size_t shown = 0;
    for (const auto& [rel, f] : open_) {
      if (shown == 20) {
        list += ", and " + std::to_string(open_.size() - shown) + " more";
        break;
      }
      list += (shown++ ? ", " : "") + rel;
    }
    open_.clear();  // closes the fds; the data stays in the *.xbpartial files (held_'s too)
    return Error(ErrorCode::kCorrupt, "xbstream ended before the EOF chunk of " + std::to_string(incomplete) +
                                          " file(s): " + list + " (their data is left in *" +
                                          std::string(kXbstreamPartialSuffix) + " files)");
  }
  for (const Held& h : held_) XBAK_RETURN_IF_ERROR(Rename(h.dir->get(), h.name, h.shown));
  held_.clear();
  if (options_.fsync) {
    for (const auto& [rel, dir] : dirs_) {
      if (::fsync(dir->get()) != 0)
        return ErrnoError("fsync", util::JoinPath(options_.target_dir, rel), errno);
    }
    if (::fsync(root_->get()) != 0) return ErrnoError("fsync", options_.target_dir, errno);
  }
  return Status::Ok();
}

Status ExtractStream(int fd, const ExtractOptions& options) { return ExtractStreams({fd}, options); }

Status ExtractStreams(const std::vector<int>& fds, const ExtractOptions& options) {
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "no xbstream to extract");
  XBAK_ASSIGN_OR_RETURN(std::unique_ptr<Extractor> ex, Extractor::Open(options));

  // `name` prefixes the extractor's errors; the reader names its stream itself.
  auto run = [&ex](ChunkReader& reader, const std::string& name) -> Status {
    Chunk chunk;
    while (true) {
      XBAK_ASSIGN_OR_RETURN(bool more, reader.Next(&chunk));
      if (!more) return Status::Ok();
      Status st = ex->Apply(chunk);
      if (!st.ok()) return name.empty() ? st : st.With(name);
    }
  };

  if (fds.size() == 1) {
    ChunkReader reader(fds[0]);
    Status st = run(reader, "");
    if (!st.ok()) {
      (void)ex->Finish();  // closes partial files; the first error is the one to report
      return st;
    }
    return ex->Finish();
  }

  std::atomic<bool> cancel{false};
  std::vector<Status> results(fds.size());
  {
    std::vector<std::thread> threads;
    threads.reserve(fds.size());
    for (size_t i = 0; i < fds.size(); ++i) {
      threads.emplace_back([&, i] {
        const std::string name = "xbstream #" + std::to_string(i + 1);
        ChunkReader reader(fds[i], name);
        reader.SetCancelFlag(&cancel);
        results[i] = run(reader, name);
        if (!results[i].ok()) cancel.store(true, std::memory_order_relaxed);
      });
    }
    for (auto& t : threads) t.join();
  }
  // The root cause, not the kCancelled of the readers it stopped.
  const Status* first = nullptr;
  for (const Status& st : results) {
    if (st.ok()) continue;
    if (first == nullptr || (first->code() == ErrorCode::kCancelled && st.code() != ErrorCode::kCancelled)) {
      first = &st;
    }
  }
  if (first != nullptr) {
    (void)ex->Finish();
    return *first;
  }
  return ex->Finish();
}

}  // namespace xbak::stream
