#include "xbak/util/copy_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <string>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::util {
namespace {

std::string Content(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 3) s[i] = static_cast<char>(rng());
  return s;
}

// Files smaller than a page, larger than the 4 MiB buffer, and empty come
// out byte for byte, through the temporary file or in place, and nothing
// else is left beside them.
TEST(PlaceFile, CopiesAnySizeThroughATemporaryOrInPlace) {
  testing::TempDir t;
  ASSERT_FALSE(t.path().empty());
  for (size_t n : {size_t{0}, size_t{100}, size_t{98304}, size_t{(4 << 20) + 12345}}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + (in_place ? " in place" : " via tmp"));
      const std::string src = t.path() + "/src", dest = t.path() + "/dest";
      ASSERT_TRUE(WriteFileAtomic(src, Content(n, static_cast<unsigned>(n))).ok());
      ASSERT_TRUE(PlaceFile(src, dest, {.sync = false, .in_place = in_place}, nullptr).ok());
      auto got = ReadSmallFile(dest, 8 << 20);
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, Content(n, static_cast<unsigned>(n)));
      EXPECT_FALSE(PathExists(dest + ".xbtmp"));
      std::filesystem::remove(dest);
    }
  }
}

// In place, an existing destination is refused unless the caller says it
// may be replaced (a resumed restore rewriting its own partial file).
TEST(PlaceFile, InPlaceNeverOverwritesUnlessToldTo) {
  testing::TempDir t;
  ASSERT_FALSE(t.path().empty());
  const std::string src = t.path() + "/src", dest = t.path() + "/dest";
  ASSERT_TRUE(WriteFileAtomic(src, "new content").ok());
  ASSERT_TRUE(WriteFileAtomic(dest, "someone's file, longer than the new one").ok());
  auto st = PlaceFile(src, dest, {.sync = false, .in_place = true}, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dest), std::string::npos) << st.message();
  EXPECT_EQ(*ReadSmallFile(dest), "someone's file, longer than the new one");
  ASSERT_TRUE(PlaceFile(src, dest, {.sync = false, .in_place = true, .replace = true}, nullptr).ok());
  EXPECT_EQ(*ReadSmallFile(dest), "new content");
}

// A sparse file (holes, preallocated space) comes out byte for byte, its holes
// and zero runs left holes: a copy-back takes no more disk than the backup.
TEST(PlaceFile, KeepsHolesAndPreallocatedSpaceHoles) {
  testing::TempDir t;
  ASSERT_FALSE(t.path().empty());
  const std::string src = t.path() + "/src", dest = t.path() + "/dest";
  constexpr uint64_t kMiB = 1 << 20;
  const std::string data = Content(kMiB, 7);
  {
    auto f = File::CreateNew(src);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->PWrite(data.data(), kMiB, 0).ok());
    ASSERT_TRUE(f->PWrite(data.data(), kMiB, 4 * kMiB).ok());
    ASSERT_EQ(::fallocate(f->fd(), 0, 5 * kMiB, 2 * kMiB), 0);
    ASSERT_TRUE(f->Truncate(9 * kMiB).ok());
    ASSERT_TRUE(f->Close().ok());
  }
  ASSERT_TRUE(PlaceFile(src, dest, {.sync = false}, nullptr).ok());
  auto want = ReadSmallFile(src, 16 << 20), got = ReadSmallFile(dest, 16 << 20);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->size(), 9 * kMiB);
  EXPECT_TRUE(*got == *want);
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 2 * kMiB + 64 * 1024);
}

}  // namespace
}  // namespace xbak::util
