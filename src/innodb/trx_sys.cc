#include "xbak/innodb/trx_sys.h"

#include <cstring>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

// Offsets from storage/innobase/include/trx0sys.h and trx0rseg.h, relative
// to the header's start at FIL_PAGE_DATA.
constexpr size_t kTrxSysRsegs = 8 + 10;  // TRX_SYS_TRX_ID_STORE (8) + FSEG_HEADER_SIZE
constexpr size_t kRsegSlotSize = 8;      // space id (4), page number (4)
constexpr size_t kTrxSysNRsegs = 128;
constexpr size_t kRsegFormat = 0;               // 0 from 10.3.5 on
constexpr size_t kRsegUndoSlots = 8 + 16 + 10;  // history size, FLST_BASE_NODE, FSEG_HEADER
constexpr size_t kBinlogNameLen = 512;
constexpr uint32_t kLegacyMagic = 873422344;  // TRX_SYS_MYSQL_LOG_MAGIC_N
constexpr size_t kLegacyInfoFromEnd = 1000;   // TRX_SYS_MYSQL_LOG_INFO = page size - 1000

std::string NameField(const uint8_t* p) {
  return std::string(reinterpret_cast<const char*>(p),
                     strnlen(reinterpret_cast<const char*>(p), kBinlogNameLen - 1));
}

}  // namespace

std::vector<RsegSlot> RsegSlots(const uint8_t* page, uint32_t page_size) {
  std::vector<RsegSlot> out;
  if (page_size < kFilPageData + kTrxSysRsegs + kTrxSysNRsegs * kRsegSlotSize) return out;
  const uint8_t* slots = page + kFilPageData + kTrxSysRsegs;
  for (size_t i = 0; i < kTrxSysNRsegs; i++) {
    const uint8_t* s = slots + i * kRsegSlotSize;
    const uint32_t page_no = util::LoadBE32(s + 4);
    if (page_no == kFilNull) continue;
    out.push_back({util::LoadBE32(s), page_no});
  }
  return out;
}

std::optional<RecordedBinlog> RsegBinlog(const uint8_t* page, uint32_t page_size) {
  const uint8_t* h = page + kFilPageData;
  if (util::LoadBE32(h + kRsegFormat) != 0) return std::nullopt;
  // TRX_RSEG_MAX_TRX_ID follows the undo slots (page_size / 16 of 4 bytes).
  const size_t max_trx_id = kRsegUndoSlots + size_t{page_size} / 16 * 4;
  if (kFilPageData + max_trx_id + 16 + kBinlogNameLen > page_size) return std::nullopt;
  const uint8_t* name = h + max_trx_id + 16;
  if (name[0] == 0) return std::nullopt;
  return RecordedBinlog{NameField(name), util::LoadBE64(h + max_trx_id + 8),
                        util::LoadBE64(page + kFilPageLsn)};
}

std::optional<RecordedBinlog> LegacyTrxSysBinlog(const uint8_t* page, uint32_t page_size) {
  if (page_size < kLegacyInfoFromEnd + kFilPageData) return std::nullopt;
  const uint8_t* info = page + kFilPageData + page_size - kLegacyInfoFromEnd;
  if (info + 12 + kBinlogNameLen > page + page_size) return std::nullopt;
  if (util::LoadBE32(info) != kLegacyMagic || info[12] == 0) return std::nullopt;
  return RecordedBinlog{NameField(info + 12), util::LoadBE64(info + 4), util::LoadBE64(page + kFilPageLsn)};
}

}  // namespace xbak::innodb
