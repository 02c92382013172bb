#include "xbak/prepare/space_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "util/temp_dir.h"

namespace xbak::prepare {
namespace {

// A scratch directory (the shared TempDir) that makes files of one byte value.
class Dir : public testing::TempDir {
 public:
  std::string File(const std::string& name, size_t size, uint8_t fill) const {
    std::string p = *this / name;
    auto f = xbak::util::File::CreateNew(p);
    std::vector<uint8_t> b(size, fill);
    EXPECT_TRUE(f.ok() && f->Write(b.data(), b.size()).ok() && f->Close().ok());
    return p;
  }
};

constexpr size_t kPage = 4096;

// ibdata1 (3 pages) + ibdata2 (2 pages, the last, may grow): page numbers run
// on from one file into the next.
TEST(SpaceFiles, PagesRunOnIntoTheNextFileAndOnlyTheLastGrows) {
  Dir d;
  const std::string a = d.File("ibdata1", 3 * kPage, 1), b = d.File("ibdata2", 2 * kPage, 2);
  auto s = SpaceFiles::Open({a, b});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s->Size(), 5 * kPage);
  std::vector<uint8_t> page(kPage);
  ASSERT_EQ(*s->PRead(page.data(), kPage, 2 * kPage), kPage);
  EXPECT_EQ(page[0], 1);
  ASSERT_EQ(*s->PRead(page.data(), kPage, 3 * kPage), kPage);
  EXPECT_EQ(page[0], 2);  // page 3 is ibdata2's first
  std::fill(page.begin(), page.end(), 9);
  ASSERT_TRUE(s->PWrite(page.data(), kPage, 4 * kPage).ok());
  ASSERT_TRUE(s->PWrite(page.data(), kPage, 6 * kPage).ok());  // beyond the end: the last file grows
  EXPECT_EQ(*s->Size(), 7 * kPage);
  EXPECT_EQ(std::filesystem::file_size(a), 3 * kPage);
  EXPECT_EQ(std::filesystem::file_size(b), 4 * kPage);
  ASSERT_EQ(*s->PRead(page.data(), kPage, 1 * kPage), kPage);
  EXPECT_EQ(page[0], 1);                                    // ibdata1 untouched
  ASSERT_EQ(*s->PRead(page.data(), kPage, 7 * kPage), 0u);  // past the end
  ASSERT_TRUE(s->Truncate(10 * kPage).ok());
  EXPECT_EQ(std::filesystem::file_size(b), 7 * kPage);
  EXPECT_EQ(std::filesystem::file_size(a), 3 * kPage);
  // Never into the fixed files.
  EXPECT_FALSE(s->Truncate(2 * kPage).ok());
  EXPECT_EQ(std::filesystem::file_size(a), 3 * kPage);
  // A write that would straddle the boundary is refused, not split.
  EXPECT_FALSE(s->PWrite(page.data(), kPage, 2 * kPage + 100).ok());
}

TEST(SpaceFiles, OneFileIsAPlainFile) {
  Dir d;
  auto s = SpaceFiles::Open({d.File("t.ibd", 2 * kPage, 5)});
  ASSERT_TRUE(s.ok());
  std::vector<uint8_t> page(kPage, 7);
  ASSERT_TRUE(s->PWrite(page.data(), kPage, 3 * kPage).ok());
  EXPECT_EQ(*s->Size(), 4 * kPage);
  EXPECT_FALSE(SpaceFiles::Open({}).ok());
}

}  // namespace
}  // namespace xbak::prepare
