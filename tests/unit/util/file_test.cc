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

constexpr uint64_t kMiB = 1 << 20;

// A file of data, a punched hole, preallocated (never written) space and a
// trailing hole: [0, 1) data, [1, 3) hole, [3, 4) data, [4, 5) preallocated,
// [5, 7) hole (MiB).
std::string MakeHoleyFile(const TempDir& t) {
  const std::string path = t.path() + "/f";
  auto f = File::CreateNew(path);
  EXPECT_TRUE(f.ok());
  std::string data(kMiB, 'x');
  EXPECT_TRUE(f->PWrite(data.data(), kMiB, 0).ok());
  EXPECT_TRUE(f->PWrite(data.data(), kMiB, 3 * kMiB).ok());
  EXPECT_EQ(::fallocate(f->fd(), 0, 4 * kMiB, kMiB), 0);
  EXPECT_TRUE(f->Truncate(7 * kMiB).ok());
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_TRUE(f->Close().ok());
  return path;
}

// Whether the file system under the test's directory is one NextStretch asks.
bool HolesAsked(const File& f) {
  auto s = f.NextStretch(0, 7 * kMiB);
  return s.ok() && s->has_value() && (*s)->end != 7 * kMiB;
}

// NextStretch skips holes of 64 KiB and more, preallocated space included,
// and says when only a hole is left.
TEST(NextStretch, SkipsHolesAndPreallocatedSpace) {
  TempDir t;
  auto f = File::OpenRead(MakeHoleyFile(t));
  ASSERT_TRUE(f.ok());
  if (!HolesAsked(*f)) GTEST_SKIP() << "the file system under " << t.path() << " is not asked for holes";
  auto s = f->NextStretch(0, 7 * kMiB);
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->begin, 0u);
  EXPECT_EQ((*s)->end, kMiB);
  s = f->NextStretch(kMiB, 7 * kMiB);
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->begin, 3 * kMiB);
  EXPECT_EQ((*s)->end, 4 * kMiB);  // preallocated space is a hole too (ext4, XFS)
  s = f->NextStretch(kMiB, 2 * kMiB);
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->begin, 2 * kMiB);  // a hole up to the limit
  EXPECT_EQ((*s)->end, 2 * kMiB);
  s = f->NextStretch(4 * kMiB, 7 * kMiB);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
}

// Holes of less than 64 KiB (a PAGE_COMPRESSED page's tail) are read through,
// and after 8 of them the rest: a few lseeks per read, not two per page.
TEST(NextStretch, ReadsThroughSmallHoles) {
  TempDir t;
  const std::string path = t.path() + "/pc";
  {
    auto f = File::CreateNew(path);
    ASSERT_TRUE(f.ok());
    std::string page(16384, 'p');
    for (uint64_t off = 0; off < 2 * kMiB; off += 16384) ASSERT_TRUE(f->PWrite(page.data(), 8192, off).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Close().ok());
  }
  auto f = File::OpenRead(path);
  ASSERT_TRUE(f.ok());
  auto s = f->NextStretch(0, 2 * kMiB);
  ASSERT_TRUE(s.ok() && s->has_value());
  EXPECT_EQ((*s)->begin, 0u);
  EXPECT_EQ((*s)->end, 2 * kMiB);
}

// PReadData returns what PRead does for any window, zeros where it did not
// read, and says how much it read.
TEST(PReadData, ReadsWhatPReadReadsWithoutReadingHoles) {
  TempDir t;
  auto f = File::OpenRead(MakeHoleyFile(t));
  ASSERT_TRUE(f.ok());
  const bool asked = HolesAsked(*f);
  if (asked) {  // first: a read of preallocated space caches zero pages, data to lseek then
    std::string buf(4 * kMiB, '?');
    size_t read = 0;
    auto n = f->PReadData(buf.data(), buf.size(), kMiB, &read);  // [1, 5): a hole, data, preallocated
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 4 * kMiB);
    EXPECT_EQ(read, kMiB);
  }
  for (uint64_t off : {uint64_t{0}, kMiB - 100, 2 * kMiB + 5, 4 * kMiB - 4096, 6 * kMiB, 7 * kMiB - 10,
                       7 * kMiB, 8 * kMiB}) {
    for (size_t n : {size_t{4096}, size_t{3 * kMiB}}) {
      SCOPED_TRACE(std::to_string(off) + " + " + std::to_string(n));
      std::string want(n, '?'), got(n, '?');
      size_t read = 12345;
      auto a = f->PRead(want.data(), n, off);
      auto b = f->PReadData(got.data(), n, off, &read);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(*a, *b);
      EXPECT_EQ(want.substr(0, *a), got.substr(0, *b));
      EXPECT_LE(read, *b);
    }
  }
}

// PReadSpans reads only what holds data, widened to whole pages, and leaves
// the rest of the buffer as it was.
TEST(PReadSpans, ReadsDataInWholePagesAndLeavesTheRest) {
  TempDir t;
  auto f = File::OpenRead(MakeHoleyFile(t));
  ASSERT_TRUE(f.ok());
  if (!HolesAsked(*f)) GTEST_SKIP() << "the file system under " << t.path() << " is not asked for holes";
  std::string buf(8 * kMiB, '?');
  std::vector<File::Span> spans;
  size_t read = 0;
  auto n = f->PReadSpans(buf.data(), buf.size(), 0, 16384, &spans, &read);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 7 * kMiB);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].begin, 0u);
  EXPECT_EQ(spans[0].end, kMiB);
  EXPECT_EQ(spans[1].begin, 3 * kMiB);
  EXPECT_EQ(spans[1].end, 4 * kMiB);
  EXPECT_EQ(read, 2 * kMiB);
  EXPECT_EQ(buf.substr(0, kMiB), std::string(kMiB, 'x'));
  EXPECT_EQ(buf.substr(kMiB, 2 * kMiB), std::string(2 * kMiB, '?'));
  EXPECT_EQ(buf.substr(4 * kMiB), std::string(4 * kMiB, '?'));

  // Data from byte 70,000 to 200,000 of a 1 MiB file: the file system says
  // 4 KiB blocks [69,632, 200,704); read as 16 KiB pages [65,536, 212,992).
  const std::string path = t.path() + "/g";
  {
    auto w = File::CreateNew(path);
    ASSERT_TRUE(w.ok());
    std::string d(130000, 'd');
    ASSERT_TRUE(w->PWrite(d.data(), d.size(), 70000).ok());
    ASSERT_TRUE(w->Truncate(kMiB).ok());
    ASSERT_TRUE(w->Sync().ok());
    ASSERT_TRUE(w->Close().ok());
  }
  auto g = File::OpenRead(path);
  ASSERT_TRUE(g.ok());
  std::string b2(kMiB, '?');
  n = g->PReadSpans(b2.data(), b2.size(), 0, 16384, &spans, &read);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, kMiB);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].begin, 65536u);
  EXPECT_EQ(spans[0].end, 212992u);
  EXPECT_EQ(b2.substr(0, 65536), std::string(65536, '?'));
  EXPECT_EQ(b2.substr(65536, 70000 - 65536), std::string(70000 - 65536, '\0'));
  EXPECT_EQ(b2.substr(70000, 130000), std::string(130000, 'd'));
  EXPECT_EQ(b2.substr(200000, 12992), std::string(12992, '\0'));
  EXPECT_EQ(b2.substr(212992), std::string(kMiB - 212992, '?'));
}

// What a live server wrote into preallocated space and did not sync yet is
// read: lseek counts the page cache (a tablespace being written as it is
// copied).
TEST(PReadData, ReadsUnsyncedWritesIntoPreallocatedSpace) {
  TempDir t;
  const std::string path = MakeHoleyFile(t);
  auto w = File::OpenWrite(path);
  ASSERT_TRUE(w.ok());
  std::string page(16384, 'n');
  ASSERT_TRUE(w->PWrite(page.data(), page.size(), 4 * kMiB + 65536).ok());
  auto f = File::OpenRead(path);
  ASSERT_TRUE(f.ok());
  std::string buf(kMiB, '?');
  auto n = f->PReadData(buf.data(), buf.size(), 4 * kMiB);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, kMiB);
  EXPECT_EQ(buf.substr(65536, 16384), page);
  EXPECT_EQ(buf.substr(0, 65536), std::string(65536, '\0'));
}

}  // namespace
}  // namespace xbak::util
