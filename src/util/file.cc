#include "xbak/util/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

namespace xbak::util {

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<File> File::OpenRead(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  return File(UniqueFd(fd), path);
}

Result<File> File::CreateNew(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("create", path, errno);
  return File(UniqueFd(fd), path);
}

Result<File> File::OpenWrite(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoError("open for writing", path, errno);
  return File(UniqueFd(fd), path);
}

void AdviseSequential(const File& f) { (void)::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_SEQUENTIAL); }

void AdviseDone(const File& f, uint64_t offset, size_t n) {
  if (n > 0)
    (void)::posix_fadvise(f.fd(), static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
}

Result<size_t> File::PRead(void* buf, size_t n, uint64_t offset) const {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_.get(), p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read", path_ + " at offset " + std::to_string(offset + done), errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

Status File::PWrite(const void* buf, size_t n, uint64_t offset) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::pwrite(fd_.get(), p + done, n - done, static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path_ + " at offset " + std::to_string(offset + done), errno);
    }
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status File::Write(const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd_.get(), p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path_, errno);
    }
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status File::Sync() {
  if (::fdatasync(fd_.get()) != 0) return ErrnoError("fsync", path_, errno);
  return Status::Ok();
}

Status File::Truncate(uint64_t size) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return ErrnoError("truncate", path_, errno);
  return Status::Ok();
}

void File::AdviseRandom() {
  (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_RANDOM);  // advice only: its failure changes nothing
}

void File::StartWriteback() {
  (void)::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE);  // a hint: syncfs() follows
}

void File::PunchHole(uint64_t offset, uint64_t n) {
  (void)::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(n));
}

Result<uint64_t> File::Size() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return ErrnoError("stat", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

Result<std::optional<std::pair<uint64_t, uint64_t>>> File::NextDataRun(uint64_t from) const {
  constexpr uint64_t kNoHole = UINT64_MAX;
  const off_t begin = ::lseek(fd_.get(), static_cast<off_t>(from), SEEK_DATA);
  if (begin < 0) {
    if (errno == ENXIO) return std::optional<std::pair<uint64_t, uint64_t>>();
    if (errno == EINVAL || errno == EOPNOTSUPP) return std::optional(std::pair(from, kNoHole));
    return ErrnoError("seek data in", path_, errno);
  }
  const off_t end = ::lseek(fd_.get(), begin, SEEK_HOLE);
  const uint64_t e = end < 0 ? kNoHole : static_cast<uint64_t>(end);
  return std::optional(std::pair(static_cast<uint64_t>(begin), e));
}

namespace {

constexpr uint64_t kMinHoleSkip = 64 << 10;
constexpr int kMaxRunsMerged = 8;

// Whether the file system is one whose SEEK_DATA answers are trusted (File::NextStretch).
bool AnswersSeekData(int fd) {
  struct statfs s {};
  if (::fstatfs(fd, &s) != 0) return false;
  switch (static_cast<uint64_t>(s.f_type)) {
    case 0xEF53:      // ext2/3/4
    case 0x58465342:  // XFS
    case 0x9123683E:  // btrfs
    case 0x01021994:  // tmpfs
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<std::optional<File::Stretch>> File::NextStretch(uint64_t from, uint64_t limit) const {
  if (from >= limit || !AnswersSeekData(fd_.get())) return std::optional(Stretch{from, limit});
  XBAK_ASSIGN_OR_RETURN(auto run, NextDataRun(from));
  if (!run) return std::optional<Stretch>();
  const uint64_t begin = run->first - from < kMinHoleSkip ? from : run->first;
  if (begin >= limit) return std::optional(Stretch{limit, limit});
  uint64_t end = run->second;
  int merged = 0;
  for (; end < limit; merged++) {
    if (merged == kMaxRunsMerged) {
      end = limit;  // hole after hole: reading the rest costs less than finding them
      break;
    }
    XBAK_ASSIGN_OR_RETURN(auto next, NextDataRun(end));
    if (!next || next->first - end >= kMinHoleSkip) break;
    end = next->second;
  }
  return std::optional(Stretch{begin, std::min(end, limit)});
}

Result<size_t> File::PReadSpans(void* buf, size_t n, uint64_t offset, size_t align, std::vector<Span>* spans,
                                size_t* read_bytes) const {
  auto* p = static_cast<uint8_t*>(buf);
  align = std::max<size_t>(align, 1);
  spans->clear();
  size_t done = 0, read = 0;
  while (done < n) {
    XBAK_ASSIGN_OR_RETURN(auto s, NextStretch(offset + done, offset + n));
    if (!s) {  // a hole up to the end of the file
      XBAK_ASSIGN_OR_RETURN(uint64_t size, Size());
      if (size > offset) done = std::max(done, static_cast<size_t>(std::min<uint64_t>(n, size - offset)));
      break;
    }
    const size_t b = std::max(done, static_cast<size_t>(s->begin - offset) / align * align);
    const size_t e = std::min(n, (static_cast<size_t>(s->end - offset) + align - 1) / align * align);
    done = b;
    if (e <= b) continue;
    XBAK_ASSIGN_OR_RETURN(size_t got, PRead(p + b, e - b, offset + b));
    if (got > 0) {
      if (!spans->empty() && spans->back().end == b) {
        spans->back().end = b + got;
      } else {
        spans->push_back({b, b + got});
      }
    }
    done = b + got;
    read += got;
    if (got < e - b) break;  // the end of the file
  }
  if (read_bytes != nullptr) *read_bytes = read;
  return done;
}

Result<size_t> File::PReadData(void* buf, size_t n, uint64_t offset, size_t* read_bytes) const {
  std::vector<Span> spans;
  XBAK_ASSIGN_OR_RETURN(size_t done, PReadSpans(buf, n, offset, 1, &spans, read_bytes));
  auto* p = static_cast<uint8_t*>(buf);
  size_t at = 0;
  for (const Span& s : spans) {
    std::memset(p + at, 0, s.begin - at);
    at = s.end;
  }
  std::memset(p + at, 0, done - at);
  return done;
}

Status File::Close() {
  int fd = fd_.Release();
  if (fd >= 0 && ::close(fd) != 0) return ErrnoError("close", path_, errno);
  return Status::Ok();
}

void AdvanceIovec(struct iovec** cur, int* count, size_t done) {
  while (*count > 0 && done >= (*cur)->iov_len) {
    done -= (*cur)->iov_len;
    ++*cur;
    --*count;
  }
  if (*count > 0) {
    (*cur)->iov_base = static_cast<char*>((*cur)->iov_base) + done;
    (*cur)->iov_len -= done;
  }
}

size_t EnlargePipe(int fd, size_t bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return 0;
  size_t limit = bytes;
  // (procfs reports a size of 0, so ReadSmallFile would read nothing.)
  if (int pf = ::open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC); pf >= 0) {
    char text[32] = {};
    ssize_t n = ::read(pf, text, sizeof(text) - 1);
    ::close(pf);
    unsigned long long v = n > 0 ? std::strtoull(text, nullptr, 10) : 0;
    if (v > 0) limit = std::min<size_t>(limit, static_cast<size_t>(v));
  }
  int cur = ::fcntl(fd, F_GETPIPE_SZ);
  if (cur >= 0 && static_cast<size_t>(cur) < limit) {
    int got = ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(limit));
    if (got > 0) cur = got;
  }
  return cur > 0 ? static_cast<size_t>(cur) : 0;
}

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Ok();
  // Usually there already (a file per table, 100,000 of them, each asks for its database's
  // directory): one stat instead of a failing mkdir per component of the path.
  if (struct stat st{}; ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0750) != 0 && errno != EEXIST) return ErrnoError("mkdir", cur, errno);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path, errno);
  if (!S_ISDIR(st.st_mode)) return Error(ErrorCode::kIo, path + " exists and is not a directory");
  return Status::Ok();
}

Status SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", path, errno);
  UniqueFd guard(fd);
  if (::fsync(fd) != 0) return ErrnoError("fsync directory", path, errno);
  return Status::Ok();
}

Status SyncFilesystem(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", dir, errno);
  UniqueFd guard(fd);
  if (::syncfs(fd) != 0) return ErrnoError("syncfs", dir, errno);
  return Status::Ok();
}

Status SyncFilesystems(const std::vector<std::string>& dirs) {
  std::set<dev_t> done;
  for (const auto& d : dirs) {
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0) return ErrnoError("stat", d, errno);
    if (done.insert(st.st_dev).second) XBAK_RETURN_IF_ERROR(SyncFilesystem(d));
  }
  return Status::Ok();
}

static std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  XBAK_ASSIGN_OR_RETURN(File f, File::CreateNew(tmp));
  Status st = f.Write(content.data(), content.size());
  if (st.ok()) st = f.Sync();
  if (st.ok()) st = f.Close();
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoError("rename to", path, err);
  }
  return SyncDir(DirName(path));
}

Status RenameNoReplace(int dir, const std::string& from, const std::string& to, const std::string& shown) {
  if (::renameat2(dir, from.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) return Status::Ok();
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    // A file system (or kernel) without RENAME_NOREPLACE: link() never
    // replaces an existing name either; the old name goes once the new one is
    // there (a crash in between leaves both, never neither).
    if (::linkat(dir, from.c_str(), dir, to.c_str(), 0) == 0) {
      ::unlinkat(dir, from.c_str(), 0);
      return Status::Ok();
    }
    err = errno;
  }
  if (err == EEXIST) return Error(ErrorCode::kAlreadyExists, "refusing to overwrite existing " + shown);
  return ErrnoError("rename", shown, err);
}

Result<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  if (size > limit) {
    return Error(ErrorCode::kInvalidArgument, path + " is " + std::to_string(size) +
                                                  " bytes, more than the " + std::to_string(limit) +
                                                  " expected for this file");
  }
  std::string out(size, '\0');
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(out.data(), out.size(), 0));
  out.resize(n);
  return out;
}

Result<std::vector<std::string>> ListDir(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return ErrnoError("cannot read directory", dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

Result<bool> IsEmptyOrMissingDir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return true;
    return ErrnoError("open directory", path, errno);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
  while (struct dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") return false;
  }
  return true;
}

Status GiveTree(const std::string& path, const std::string& user) {
  const struct passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) return Error(ErrorCode::kNotFound, "no user '" + user + "' to give " + path + " to");
  std::error_code ec;
  auto give = [&](const std::filesystem::path& p) -> Status {
    if (::lchown(p.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      return ErrnoError("give to " + user, p.string(), errno);
    return Status::Ok();
  };
  XBAK_RETURN_IF_ERROR(give(path));
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    XBAK_RETURN_IF_ERROR(give(it->path()));
  }
  if (ec) return ErrnoError("walk", path, ec.value());
  return Status::Ok();
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return ErrnoError("remove", path, ec.value());
  return Status::Ok();
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out += '/';
  out += b;
  return out;
}

}  // namespace xbak::util
