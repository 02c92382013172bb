// Thin RAII layer over POSIX file descriptors. All reads and writes are
// "full": they loop over short reads/writes and EINTR, so callers never see a
// partial transfer except at end of file.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::util {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void Reset();

 private:
  int fd_ = -1;
};

// A file opened for reading or writing, remembering its path for error messages.
class File {
 public:
  static Result<File> OpenRead(const std::string& path);
  // Creates a new file (fails if it exists) with mode 0640 (before umask).
  static Result<File> CreateNew(const std::string& path);
  // Opens for writing, creating it if needed; does not truncate.
  static Result<File> OpenWrite(const std::string& path);
  // Takes ownership of an open descriptor; `path` is only for messages.
  static File Adopt(UniqueFd fd, std::string path) { return File(std::move(fd), std::move(path)); }

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

  // Reads up to n bytes at offset; returns the count, short only at EOF.
  Result<size_t> PRead(void* buf, size_t n, uint64_t offset) const;
  Status PWrite(const void* buf, size_t n, uint64_t offset);
  // Sequential write at the current position.
  Status Write(const void* buf, size_t n);
  Status Sync();
  Status Truncate(uint64_t size);
  // Deallocates [offset, offset + n) (it then reads as zeros) where the file
  // system can; elsewhere the bytes stay. Best effort: nothing to report.
  void PunchHole(uint64_t offset, uint64_t n);
  // Tells the kernel not to read ahead: for reading one page of each of
  // thousands of small files (page 0s), where readahead would fill the page
  // cache with the rest of each file, zero-filling its holes (backups are sparse).
  void AdviseRandom();
  // Starts writing the file's dirty pages to disk without waiting for them: for thousands of
  // files that one syncfs() makes durable at the end, so that the disk works while the rest is
  // written instead of all at once in the sync. A hint: not durability, nothing to report.
  void StartWriteback();
  Result<uint64_t> Size() const;
  // The next run of data at or after `from`: [begin, end), end being where the
  // next hole starts or UINT64_MAX; nullopt if only a hole follows. What
  // lies before begin reads as zeros (a hole, or on ext4 and XFS an extent
  // allocated but never written). Where the file system cannot say, all of
  // the file is one run. The file system's answer as is: see NextStretch.
  Result<std::optional<std::pair<uint64_t, uint64_t>>> NextDataRun(uint64_t from) const;
  // What a copy of [from, limit) reads: [begin, end). What lies between from
  // and begin reads as zeros and need not be read: reading holes and
  // preallocated space made the kernel zero-fill page cache for them, over a
  // third of the CPU of a copy-back whose tablespaces were mostly
  // preallocated. A hole shorter than 64 KiB is read through (a
  // PAGE_COMPRESSED tablespace has one in every page: a read and two lseeks
  // per page would cost more than reading it), and so is the rest of `limit`
  // after 8 of them. begin == end == limit: a hole up to limit. nullopt: only
  // a hole follows, to the end of the file. Only ext4, XFS, btrfs and tmpfs
  // are asked (OpenZFS before 2.2.2 could call data being written a hole);
  // elsewhere [from, limit) is one stretch.
  struct Stretch {
    uint64_t begin, end;
  };
  Result<std::optional<Stretch>> NextStretch(uint64_t from, uint64_t limit) const;
  // PRead, but what NextStretch says reads as zeros is zero-filled here
  // instead of read; *read_bytes (if given) is told how many were read. For a
  // file being written meanwhile (a live tablespace) this reads those bytes
  // as they were at the lseek: a buffered write in progress is in the page
  // cache, which lseek counts as data, and an O_DIRECT one into preallocated
  // space stays unwritten (a hole to lseek, zeros to a read) until it is done.
  Result<size_t> PReadData(void* buf, size_t n, uint64_t offset, size_t* read_bytes = nullptr) const;
  // PReadData for a reader that handles the zeros itself (a backup writes
  // them as holes, checks no page there): only what holds data is read, into
  // the same place in buf; `spans` lists those parts ([begin, end) within buf,
  // ascending, each widened to multiples of `align` so that it holds whole
  // pages); the rest of the first (returned) bytes reads as zeros and is left
  // as it was in buf. Zero-filling and then scanning it was a fifth of a full
  // backup's CPU on mostly preallocated tablespaces.
  struct Span {
    size_t begin, end;
  };
  Result<size_t> PReadSpans(void* buf, size_t n, uint64_t offset, size_t align, std::vector<Span>* spans,
                            size_t* read_bytes = nullptr) const;
  Status Close();

 private:
  File(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::string path_;
};

// After writev() wrote `done` bytes, moves *cur/*count past them (writev may
// stop anywhere, e.g. when a pipe's buffer fills).
void AdvanceIovec(struct iovec** cur, int* count, size_t done);

// If `fd` is a pipe or FIFO, asks the kernel for a buffer of up to `bytes`
// (capped by /proc/sys/fs/pipe-max-size). A 1 MiB stream chunk then passes in
// one write instead of sixteen 64 KiB hand-overs between writer and reader,
// each a pair of context switches. Best effort: the default buffer still
// works, so failures (e.g. the per-user pipe memory limit) are ignored.
// Returns the pipe's buffer size afterwards, or 0 if fd is not a pipe.
size_t EnlargePipe(int fd, size_t bytes = size_t{1} << 20);

// Tells the kernel a file is read once from start to end (AdviseSequential),
// and that what was read need not stay cached (AdviseDone): a backup streams
// through the whole database and would otherwise push out of the page cache
// what the server's other files (binlogs, Aria, MyISAM) keep hot there, as
// xtrabackup avoids too. Best effort: advice that fails changes nothing.
void AdviseSequential(const File& f);
void AdviseDone(const File& f, uint64_t offset, size_t n);

// Creates every missing directory of `path` with mode 0750 (before umask).
Status MakeDirs(const std::string& path);
// fsync() on a directory, so that a rename or create inside it is durable.
Status SyncDir(const std::string& path);
// syncfs() on the filesystem holding `dir`: makes every file written there
// durable in one call instead of one fsync per file (Linux >= 5.8 reports
// write-back errors of any file through it).
Status SyncFilesystem(const std::string& dir);
// One syncfs per filesystem that holds any of `dirs` (several directories of
// one filesystem are synced once).
Status SyncFilesystems(const std::vector<std::string>& dirs);
// Renames `from` to `to` (both relative to directory fd `dir`, or AT_FDCWD)
// unless `to` exists: then kAlreadyExists, "refusing to overwrite existing
// <shown>", and nothing is replaced (renameat2 RENAME_NOREPLACE, so no window
// between a check and the rename). On a file system without RENAME_NOREPLACE
// (EINVAL; ENOSYS on an old kernel) it links `to` and unlinks `from`: link()
// never replaces either.
Status RenameNoReplace(int dir, const std::string& from, const std::string& to, const std::string& shown);
// Writes `content` to path via a temporary file, fsync and rename: readers see
// either the old file or the complete new one, never a torn one.
Status WriteFileAtomic(const std::string& path, std::string_view content);
Result<std::string> ReadSmallFile(const std::string& path, size_t limit = 1 << 20);
bool PathExists(const std::string& path);
// The names in a directory, without "." and "..", sorted.
Result<std::vector<std::string>> ListDir(const std::string& dir);
// True if `path` is a directory itself (a symbolic link to one is not).
bool IsDirectory(const std::string& path);
// True if `path` does not exist or is an empty directory.
Result<bool> IsEmptyOrMissingDir(const std::string& path);
// Removes `path` and, if it is a directory, everything under it (symbolic
// links are removed, never followed). A missing path is not an error.
Status RemoveTree(const std::string& path);
// Makes `path` and everything under it (symlinks themselves, not followed)
// owned by `user` and its primary group: a datadir given to the server's
// user before it is started on it.
Status GiveTree(const std::string& path, const std::string& user);
// Joins two path parts with exactly one '/'.
std::string JoinPath(std::string_view a, std::string_view b);

}  // namespace xbak::util
