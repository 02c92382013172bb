#include "xbak/innodb/redo_record.h"

#include <gtest/gtest.h>

#include <vector>

namespace xbak::innodb {
namespace {

Result<std::vector<PageRecord>> Walk(const std::vector<uint8_t>& recs, uint32_t page_size = 16384) {
  std::vector<PageRecord> out;
  Status st = ForEachPageRecord(recs.data(), recs.size(), page_size, [&](const PageRecord& r) {
    out.push_back(r);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

TEST(RedoRecord, SamePageOffsetsAreRelativeToTheLastRecord) {
  // WRITE (5, 3) at 100 "ab"; same-page MEMSET +2 (104) x3 of 0x7; same-page MEMMOVE +1 (108) 2
  // bytes from 108+(4>>1)+1 = 111; a FILE_ record first (same_page before any page record).
  std::vector<uint8_t> r = {0xB3, 5, 0, 'x',  // FILE_MODIFY-ish, skipped
                            0x35, 5, 3, 100, 'a', 'b', 0xC3, 2, 3, 7, 0xD3, 1, 2, 4};
  auto w = Walk(r);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[0].type, RecordType::kWrite);
  EXPECT_EQ((*w)[0].offset, 100u);
  EXPECT_EQ((*w)[0].length, 2u);
  EXPECT_EQ((*w)[1].type, RecordType::kMemset);
  EXPECT_EQ((*w)[1].offset, 104u);
  EXPECT_EQ((*w)[1].length, 3u);
  EXPECT_EQ((*w)[2].type, RecordType::kMemmove);
  EXPECT_EQ((*w)[2].offset, 108u);
  EXPECT_EQ((*w)[2].source, 111u);
  for (const auto& x : *w) EXPECT_EQ(x.page_no, 3u);
}

TEST(RedoRecord, InitSetsTheOffsetToPageTypeAndFreeForbidsSamePageWrites) {
  auto w = Walk({0x12, 5, 3, 0xB2, 10, 1});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ((*w)[1].offset, 24u + 10);
  EXPECT_FALSE(Walk({0x02, 5, 3, 0xB2, 10, 1}).ok());  // WRITE right after FREE_PAGE
}

TEST(RedoRecord, OutOfPageOffsetsAreCorrupt) {
  EXPECT_FALSE(Walk({0x34, 5, 3, 4, 1}).ok());                 // offset 4 < 8
  EXPECT_FALSE(Walk({0x37, 5, 3, 0xBF, 0xF8, 1, 2, 3}).ok());  // 16504 + 3 bytes past 16 KiB
  EXPECT_TRUE(Walk({0x37, 5, 3, 0xBF, 0xF8, 1, 2, 3}, 65536).ok());
  EXPECT_FALSE(Walk({0x45, 5, 3, 100, 2, 1, 2, 3}).ok());  // MEMSET pattern longer than range
  EXPECT_FALSE(Walk({0x55, 5, 3, 10, 4, 0x31}).ok());      // MEMMOVE source before byte 8
  EXPECT_FALSE(Walk({0x35, 5, 3, 100, 1}).ok());           // length runs past the records
  EXPECT_FALSE(Walk({0x21, 5}).ok());                      // EXTENDED without its page id
}

TEST(RedoRecord, ApplySimpleRecordChecksTheFrame) {
  std::vector<uint8_t> page(1024, 0xEE);
  PageRecord init;
  init.type = RecordType::kInitPage;
  init.space_id = 9;
  init.page_no = 4;
  ASSERT_TRUE(ApplySimpleRecord(page.data(), page.size(), init).ok());
  EXPECT_EQ(page[100], 0);
  EXPECT_EQ(page[7], 4);     // FIL_PAGE_OFFSET
  EXPECT_EQ(page[8], 0xFF);  // FIL_PAGE_PREV
  EXPECT_EQ(page[37], 9);    // FIL_PAGE_SPACE_ID
  const uint8_t pat[2] = {1, 2};
  PageRecord ms;
  ms.type = RecordType::kMemset;
  ms.offset = 100;
  ms.length = 5;
  ms.data = pat;
  ms.data_len = 2;
  ASSERT_TRUE(ApplySimpleRecord(page.data(), page.size(), ms).ok());
  EXPECT_EQ(std::vector<uint8_t>(page.begin() + 100, page.begin() + 105),
            (std::vector<uint8_t>{1, 2, 1, 2, 1}));
  ms.offset = 1022;  // a compressed frame is smaller than innodb_page_size
  EXPECT_EQ(ApplySimpleRecord(page.data(), page.size(), ms).code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace xbak::innodb
