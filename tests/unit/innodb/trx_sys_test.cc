// The binlog position InnoDB records in rollback segment headers and, before
// 10.3.5, in the TRX_SYS page: read from pages laid out as the server does.
#include "xbak/innodb/trx_sys.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

constexpr uint32_t kPs = 16384;

std::vector<uint8_t> TrxSysPage() {
  std::vector<uint8_t> p(kPs, 0);
  for (size_t i = 0; i < 128; i++) {  // every slot unused...
    util::StoreBE32(p.data() + 38 + 18 + i * 8, 0);
    util::StoreBE32(p.data() + 38 + 18 + i * 8 + 4, kFilNull);
  }
  util::StoreBE32(p.data() + 38 + 18 + 4, 6);      // ...but slot 0: space 0 page 6
  util::StoreBE32(p.data() + 38 + 18 + 8 * 5, 3);  // and slot 5: undo tablespace 3, page 17
  util::StoreBE32(p.data() + 38 + 18 + 8 * 5 + 4, 17);
  return p;
}

std::vector<uint8_t> RsegPage(const char* name, uint64_t offset, uint64_t lsn) {
  std::vector<uint8_t> p(kPs, 0);
  util::StoreBE64(p.data() + kFilPageLsn, lsn);
  const size_t max_trx_id = 38 + 34 + kPs / 16 * 4;  // TRX_RSEG_MAX_TRX_ID on the page
  util::StoreBE64(p.data() + max_trx_id, 777);
  util::StoreBE64(p.data() + max_trx_id + 8, offset);
  std::memcpy(p.data() + max_trx_id + 16, name, std::strlen(name));
  return p;
}

TEST(TrxSys, ListsTheUsedRollbackSegmentSlots) {
  EXPECT_TRUE(RsegSlots(TrxSysPage().data(), 1024).empty());  // too small to hold them
  auto slots = RsegSlots(TrxSysPage().data(), kPs);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].space_id, 0u);
  EXPECT_EQ(slots[0].page_no, 6u);
  EXPECT_EQ(slots[1].space_id, 3u);
  EXPECT_EQ(slots[1].page_no, 17u);
}

TEST(TrxSys, ReadsARollbackSegmentsPosition) {
  auto p = RsegPage("./mysql-bin.000042", 123456789, 9000);
  auto b = RsegBinlog(p.data(), kPs);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->file, "./mysql-bin.000042");
  EXPECT_EQ(b->offset, 123456789u);
  EXPECT_EQ(b->page_lsn, 9000u);
  auto none = RsegPage("", 5, 9000);
  EXPECT_FALSE(RsegBinlog(none.data(), kPs).has_value());
  util::StoreBE32(p.data() + 38, 0xfffffffe);  // the pre-10.3.5 rollback segment format
  EXPECT_FALSE(RsegBinlog(p.data(), kPs).has_value());
}

TEST(TrxSys, ReadsThePre1035PositionOnlyWithItsMagic) {
  auto p = TrxSysPage();
  EXPECT_FALSE(LegacyTrxSysBinlog(p.data(), kPs).has_value());
  uint8_t* info = p.data() + 38 + kPs - 1000;  // as MariaDB's slave_provision_nolock test writes it
  util::StoreBE32(info, 873422344);
  util::StoreBE64(info + 4, 0xffff0000);
  std::memcpy(info + 12, "~~~-bin.999999", 14);
  auto b = LegacyTrxSysBinlog(p.data(), kPs);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->file, "~~~-bin.999999");
  EXPECT_EQ(b->offset, 0xffff0000u);
}

}  // namespace
}  // namespace xbak::innodb
