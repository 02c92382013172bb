// The pages an incremental's deltas hold (delta_pages.h), read from block
// headers only, and the bitmap set that holds them (page_set.h).
#include "xbak/prepare/delta_pages.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/synthetic_chain.h"
#include "xbak/innodb/delta.h"

namespace xbak::prepare {
namespace {

using testing::kPs;
using testing::MakePage;

TEST(PageSetTest, HoldsPagesPerTablespaceAndCountsEachOnce) {
  PageSet s;
  EXPECT_FALSE(s.Contains(5, 0));
  s.Add(5, 0);
  s.Add(5, 63);
  s.Add(5, 64);
  s.Add(5, 64);
  s.Add(7, 1'000'000);
  EXPECT_TRUE(s.Contains(5, 0));
  EXPECT_TRUE(s.Contains(5, 63));
  EXPECT_TRUE(s.Contains(5, 64));
  EXPECT_FALSE(s.Contains(5, 65));
  EXPECT_FALSE(s.Contains(5, 1'000'000));  // past this space's highest page
  EXPECT_TRUE(s.Contains(7, 1'000'000));
  EXPECT_FALSE(s.Contains(7, 999'999));
  EXPECT_FALSE(s.Contains(6, 0));
  EXPECT_EQ(s.size(), 4u);
}

class DeltaPagesTest : public testing::SyntheticChainTest {
 protected:
  // INC/NAME.delta of `space` holding `pages` (increasing), and its .meta.
  void WriteDeltaOf(const std::string& name, uint32_t space, const std::vector<uint32_t>& pages) {
    std::string out;
    innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
      out.append(reinterpret_cast<const char*>(d), len);
      return Status::Ok();
    });
    for (uint32_t no : pages) ASSERT_TRUE(w.AddPage(no, MakePage(space, no, 0x33, 4096).data()).ok());
    ASSERT_TRUE(w.Finish().ok());
    ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/" + name + ".delta", out).ok());
    ASSERT_TRUE(
        util::WriteFileAtomic(inc_ + "/" + name + ".meta", innodb::FormatDeltaMeta({kPs, 0, space})).ok());
  }
};

TEST_F(DeltaPagesTest, EveryBlocksPagesOfEveryDeltaAreFound) {
  // 4 KiB pages: 1023 pages per block, so 0..2100 spans three blocks.
  std::vector<uint32_t> many;
  for (uint32_t p = 0; p <= 2100; p += 1) many.push_back(p);
  WriteDeltaOf("db/t.ibd", 5, many);
  WriteDeltaOf("db/u.ibd", 9, {3, 4000});
  WriteDeltaOf("db/empty.ibd", 11, {});
  auto set = DeltaPages(inc_, 2);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ((*set)->size(), many.size() + 2);
  EXPECT_TRUE((*set)->Contains(5, 0));
  EXPECT_TRUE((*set)->Contains(5, 1023));
  EXPECT_TRUE((*set)->Contains(5, 2100));
  EXPECT_FALSE((*set)->Contains(5, 2101));
  EXPECT_TRUE((*set)->Contains(9, 3));
  EXPECT_TRUE((*set)->Contains(9, 4000));
  EXPECT_FALSE((*set)->Contains(9, 0));
  EXPECT_FALSE((*set)->Contains(11, 0));
}

// Deltas the apply does not write as they are (DeltaJob::is_void, target):
// a table the incremental brings whole (.new), one dropped during it (.del).
TEST_F(DeltaPagesTest, ATableTheIncrementalBringsWholeOrDroppedIsLeftOut) {
  WriteDeltaOf("db/t.ibd", 5, {0, 1, 2});
  WriteDeltaOf("db/born.ibd", 8, {0, 1});
  ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/db/born.new", "").ok());
  WriteDeltaOf("db/gone.ibd", 10, {1, 2});
  ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/db/gone.del", "").ok());
  auto set = DeltaPages(inc_, 1);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE((*set)->Contains(5, 2));
  EXPECT_FALSE((*set)->Contains(8, 0));
  EXPECT_FALSE((*set)->Contains(8, 1));
  EXPECT_FALSE((*set)->Contains(10, 1));
  EXPECT_FALSE((*set)->Contains(10, 2));
}

TEST_F(DeltaPagesTest, ALaterFileOfTheSystemTablespaceCountsFromItsFirstPage) {
  // ibdata1 of 1 MiB (256 pages of 4 KiB), then ibdata2: its delta numbers pages within the file.
  ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/" + backupdir::kBackupCnfFile,
                                    "[mysqld]\ninnodb_page_size=4096\n"
                                    "innodb_data_file_path=ibdata1:1M;ibdata2:10M:autoextend\n")
                  .ok());
  WriteDeltaOf("ibdata2", 0, {0, 7});
  auto set = DeltaPages(inc_, 1);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE((*set)->Contains(0, 256));
  EXPECT_TRUE((*set)->Contains(0, 263));
  EXPECT_FALSE((*set)->Contains(0, 7));
}

TEST_F(DeltaPagesTest, ABadBlockHeaderIsAnErrorNamingTheDeltaAndTheOffset) {
  WriteDeltaOf("db/u.ibd", 6, {0, 1});
  auto text = util::ReadSmallFile(inc_ + "/db/u.ibd.delta", 1 << 20);
  ASSERT_TRUE(text.ok());
  // A second block whose header has no magic.
  std::string two = *text;
  two.replace(0, 4, "xtra");  // the first block says another follows
  two += std::string(kPs, '\0');
  ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/db/u.ibd.delta", two).ok());
  auto set = DeltaPages(inc_, 1);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(
      set.status().message().find(inc_ + "/db/u.ibd.delta: the block at byte " + std::to_string(3 * kPs)),
      std::string::npos)
      << set.status().message();
}

}  // namespace
}  // namespace xbak::prepare
