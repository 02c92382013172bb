#include "xbak/util/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>  // renameat2
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "util/temp_dir.h"

namespace {
// renameat2() as a file system without RENAME_NOREPLACE answers it (EINVAL),
// while set: this binary's definition takes the place of glibc's for the
// library it links, so RenameNoReplace's fallback can be tested on any file
// system. Unset, it is the real system call.
bool g_no_rename_noreplace = false;
}  // namespace

extern "C" int renameat2(int olddir, const char* oldpath, int newdir, const char* newpath,
                         unsigned int flags) noexcept {
  if (g_no_rename_noreplace && (flags & RENAME_NOREPLACE) != 0) {
    errno = EINVAL;
    return -1;
  }
  return static_cast<int>(::syscall(SYS_renameat2, olddir, oldpath, newdir, newpath, flags));
}

namespace xbak::util {
namespace {

using testing::TempDir;

void Put(const std::string& path, const std::string& text) {
  ASSERT_TRUE(WriteFileAtomic(path, text).ok()) << path;
}

std::string Get(const std::string& path) {
  auto r = ReadSmallFile(path);
  return r.ok() ? r.value() : "<" + r.status().message() + ">";
}

void RenamesButNeverReplaces() {
  TempDir d;
  Put(d / "a", "A");
  Put(d / "b", "B");
  // An existing target: refused by name, both files as they were.
  Status st = RenameNoReplace(AT_FDCWD, d / "a", d / "b", "b");
  EXPECT_EQ(st.code(), ErrorCode::kAlreadyExists) << st.message();
  EXPECT_EQ(st.message(), "refusing to overwrite existing b");
  EXPECT_EQ(Get(d / "a"), "A");
  EXPECT_EQ(Get(d / "b"), "B");
  // A free target: renamed, the old name gone.
  st = RenameNoReplace(AT_FDCWD, d / "a", d / "c", "c");
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Get(d / "c"), "A");
  EXPECT_FALSE(PathExists(d / "a"));
  // Relative to a directory fd.
  UniqueFd dir(::open(d.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_GE(dir.get(), 0);
  st = RenameNoReplace(dir.get(), "c", "e", "e");
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Get(d / "e"), "A");
  EXPECT_FALSE(PathExists(d / "c"));
  EXPECT_EQ(RenameNoReplace(dir.get(), "e", "b", "b").code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(Get(d / "b"), "B");
  // A missing source is an error, not a success.
  EXPECT_FALSE(RenameNoReplace(AT_FDCWD, d / "missing", d / "f", "f").ok());
  EXPECT_FALSE(PathExists(d / "f"));
}

TEST(RenameNoReplace, RenamesButNeverReplaces) { RenamesButNeverReplaces(); }

TEST(MakeDirs, MakesEveryMissingLevelAcceptsAnExistingDirectoryAndRefusesAFileInTheWay) {
  TempDir d;
  ASSERT_TRUE(MakeDirs(d / "a/b/c").ok());
  EXPECT_TRUE(IsDirectory(d / "a/b/c"));
  EXPECT_TRUE(MakeDirs(d / "a/b/c").ok());  // there already: the one-stat path
  EXPECT_TRUE(MakeDirs(d / "a/b").ok());
  Put(d / "a/f", "x");
  Status st = MakeDirs(d / "a/f");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(d / "a/f"), std::string::npos) << st.message();
  EXPECT_FALSE(MakeDirs(d / "a/f/g").ok());  // below a file
  EXPECT_EQ(Get(d / "a/f"), "x");
}

// Some file systems refuse RENAME_NOREPLACE with EINVAL; the extractor, the
// directory sink and --decompress must still work there, with the same
// guarantee (issue 21: one copy failed there, the other fell back to link()).
TEST(RenameNoReplace, WorksWhereTheFileSystemHasNoRenameNoReplace) {
  struct NoRenameNoReplace {
    NoRenameNoReplace() { g_no_rename_noreplace = true; }
    ~NoRenameNoReplace() { g_no_rename_noreplace = false; }
  } fs;
  RenamesButNeverReplaces();
}

TEST(EnlargePipe, GrowsAPipeUpToTheRequestAndTheSystemLimit) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd r(p[0]), w(p[1]);
  int before = ::fcntl(w.get(), F_GETPIPE_SZ);
  ASSERT_GT(before, 0);
  size_t got = EnlargePipe(w.get(), size_t{1} << 20);
  EXPECT_EQ(got, static_cast<size_t>(::fcntl(w.get(), F_GETPIPE_SZ)));
  EXPECT_GE(got, static_cast<size_t>(before));
  EXPECT_LE(got, size_t{1} << 20);
  // Data still flows after the resize.
  ASSERT_EQ(::write(w.get(), "abc", 3), 3);
  char buf[3];
  ASSERT_EQ(::read(r.get(), buf, 3), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
}

TEST(EnlargePipe, LeavesAnythingButAPipeAlone) {
  char name[] = "/tmp/xbak_enlarge_XXXXXX";
  int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  UniqueFd owned(fd);
  ::unlink(name);
  EXPECT_EQ(EnlargePipe(fd), 0u);
  EXPECT_EQ(EnlargePipe(-1), 0u);
}

// A file of data, a punched hole, preallocated (never written) space and a
// trailing hole: NextDataRun names the data where the file system can tell
// (ext4, XFS, tmpfs), and PReadData returns what PRead does for any window,
// zeros where it did not read.
TEST(PReadData, ReadsWhatPReadReadsWithoutReadingHoles) {
  TempDir t;
  const std::string path = t.path() + "/f";
  constexpr uint64_t kMiB = 1 << 20;
  {
    auto f = File::CreateNew(path);
    ASSERT_TRUE(f.ok());
    std::string data(kMiB, 'x');
    ASSERT_TRUE(f->PWrite(data.data(), kMiB, 0).ok());
    ASSERT_TRUE(f->PWrite(data.data(), kMiB, 3 * kMiB).ok());  // [1, 3) MiB: a hole
    ASSERT_EQ(::fallocate(f->fd(), 0, 4 * kMiB, kMiB), 0);     // [4, 5) MiB: unwritten
    ASSERT_TRUE(f->Truncate(7 * kMiB).ok());                   // [5, 7) MiB: a hole
    ASSERT_TRUE(f->Close().ok());
  }
  auto f = File::OpenRead(path);
  ASSERT_TRUE(f.ok());
  auto first = f->NextDataRun(0);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->first, 0u);
  if ((*first)->second != UINT64_MAX) {  // the file system tells holes apart
    EXPECT_EQ((*first)->second, kMiB);
    auto second = f->NextDataRun(kMiB);
    ASSERT_TRUE(second.ok() && second->has_value());
    EXPECT_EQ((*second)->first, 3 * kMiB);
    auto after = f->NextDataRun(4 * kMiB);
    ASSERT_TRUE(after.ok());
    if (after->has_value()) {  // unwritten space: data to some file systems
      EXPECT_GE((*after)->first, 4 * kMiB);
    }
    auto tail = f->NextDataRun(5 * kMiB);
    ASSERT_TRUE(tail.ok());
    EXPECT_FALSE(tail->has_value());
  }
  for (uint64_t off : {uint64_t{0}, kMiB - 100, 2 * kMiB + 5, 4 * kMiB - 4096, 6 * kMiB, 7 * kMiB - 10}) {
    for (size_t n : {size_t{4096}, size_t{3 * kMiB}}) {
      SCOPED_TRACE(std::to_string(off) + " + " + std::to_string(n));
      std::string want(n, '?'), got(n, '?');
      auto a = f->PRead(want.data(), n, off);
      auto b = f->PReadData(got.data(), n, off);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b);
      EXPECT_EQ(want.substr(0, *a), got.substr(0, *b));
    }
  }
}

}  // namespace
}  // namespace xbak::util
