#include "xbak/util/sparse.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "util/temp_dir.h"

namespace xbak::util {
namespace {

std::vector<uint8_t> ReadAll(const std::string& path) {
  auto f = File::OpenRead(path);
  std::vector<uint8_t> b(*f->Size());
  EXPECT_EQ(*f->PRead(b.data(), b.size(), 0), b.size());
  return b;
}

// Same content as written, in pieces of any size; zero blocks (a trailing one
// included) become holes where the file system has them.
TEST(SparseWriter, SameContentWithHoles) {
  testing::TempDir t;
  ASSERT_FALSE(t.path().empty());
  std::mt19937 rng(3);
  std::vector<uint8_t> data(1 << 20, 0);
  for (size_t i = 0; i < data.size(); i++) {
    if ((i / 16384) % 3 == 0 || i % 100000 == 7) data[i] = static_cast<uint8_t>(rng() | 1);
  }
  data.resize(data.size() + 12345, 0);  // ends in zeros, not block-aligned
  const std::string path = t.path() + "/f";
  {
    auto f = File::CreateNew(path);
    ASSERT_TRUE(f.ok());
    SparseWriter w(*f);
    for (size_t at = 0; at < data.size();) {
      size_t k = std::min<size_t>(data.size() - at, 1 + rng() % 70000);
      ASSERT_TRUE(w.Write(data.data() + at, k).ok());
      at += k;
    }
    ASSERT_TRUE(w.Finish().ok());
    EXPECT_EQ(w.size(), data.size());
    ASSERT_TRUE(f->Close().ok());
  }
  EXPECT_EQ(ReadAll(path), data);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  // About two thirds of the blocks are zero: the file holds far less than its size
  // (tmpfs and ext4/xfs both keep holes).
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, data.size() * 3 / 4);
}

// Which zeros become holes: those up to a 16 KiB boundary (a PAGE_COMPRESSED
// page's tail, an empty page) and any run of 16 KiB; not the free space in the
// middle of an ordinary page, whose last block (the page directory and
// trailer) holds data: leaving that out cost a write call per page.
TEST(WriteSkippingZeroBlocks, HolesOnlyWhereTheyAreWorthOne) {
  constexpr size_t kPage = 16384, kBlk = 4096;
  std::vector<uint8_t> d(5 * kPage, 0);
  auto fill = [&](size_t from, size_t n) { std::fill(d.begin() + from, d.begin() + from + n, 0xA5); };
  fill(0, kBlk), fill(kPage - 8, 8);  // page 0: ordinary, 8 KiB of free space in its middle
  fill(kPage, 3000);                  // page 1: compressed, zeros from its first block to its end
                                      // page 2: empty
  fill(3 * kPage, kPage);             // page 3: full
  fill(4 * kPage + kBlk, 3 * kBlk);   // page 4: 4 KiB of zeros at its start
  std::vector<std::pair<uint64_t, size_t>> runs;
  auto record = [&](const uint8_t* p, size_t n, uint64_t off) {
    EXPECT_EQ(p, d.data() + off);
    runs.emplace_back(off, n);
    return Status::Ok();
  };
  ASSERT_TRUE(WriteSkippingZeroBlocks(d.data(), d.size(), 0, record).ok());
  const std::vector<std::pair<uint64_t, size_t>> want = {
      {0, kPage + kBlk},        // page 0 whole (its free space too), page 1's data block
      {3 * kPage, 2 * kPage}};  // the hole between: page 1's tail and page 2; pages 3 and 4 whole
  EXPECT_EQ(runs, want);
}

TEST(SparseWriter, AllZeroFileIsOneHoleOfTheRightSize) {
  testing::TempDir t;
  ASSERT_FALSE(t.path().empty());
  const std::string path = t.path() + "/z";
  auto f = File::CreateNew(path);
  SparseWriter w(*f);
  std::vector<uint8_t> z(65536, 0);
  ASSERT_TRUE(w.Write(z.data(), z.size()).ok());
  ASSERT_TRUE(w.Finish().ok());
  ASSERT_TRUE(f->Close().ok());
  EXPECT_EQ(std::filesystem::file_size(path), z.size());
  EXPECT_EQ(ReadAll(path), z);
}

}  // namespace
}  // namespace xbak::util
