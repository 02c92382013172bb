// The layout of InnoDB index and undo pages, as MariaDB 10.11's page0page.h,
// page0types.h, rem0rec.h and trx0undo.h define it, and the page directory's
// maintenance (page0page.cc page_dir_split_slot, page_dir_balance_slot,
// page_mem_free): what the EXTENDED redo records (extended_redo.cc,
// page_insert.cc, page_delete.cc) and CheckIndexPage (index_page_check.cc)
// share. Internal to the innodb layer.
//
// Positions are byte offsets into the frame (size_t/int64_t), never pointers:
// a hostile offset is compared, never formed into an out-of-range pointer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"
#include "xbak/util/status.h"

namespace xbak::innodb::index_page {

// ---- Index page layout (page0page.h, page0types.h, rem0rec.h) -------------
inline constexpr size_t kPageHeader = 38;
inline constexpr size_t kPageNDirSlots = kPageHeader + 0;
inline constexpr size_t kPageHeapTop = kPageHeader + 2;
inline constexpr size_t kPageNHeap = kPageHeader + 4;  // bit 15: COMPACT format
inline constexpr size_t kPageFree = kPageHeader + 6;
inline constexpr size_t kPageGarbage = kPageHeader + 8;
inline constexpr size_t kPageLastInsert = kPageHeader + 10;
inline constexpr size_t kPageInstant = kPageHeader + 12;
inline constexpr size_t kPageDirectionB = kPageHeader + 13;  // low 3 bits
inline constexpr size_t kPageNDirection = kPageHeader + 14;
inline constexpr size_t kPageNRecs = kPageHeader + 16;
inline constexpr size_t kPageHeaderPrivEnd = 26;  // bytes of PAGE_HEADER cleared by page_create_low
inline constexpr size_t kPageLevel = kPageHeader + 26;
inline constexpr size_t kPageData = 94;

inline constexpr size_t kNewInfimum = 99;
inline constexpr size_t kNewSupremum = 112;
inline constexpr size_t kNewSupremumEnd = 120;
inline constexpr size_t kOldInfimum = 101;
inline constexpr size_t kOldSupremum = 116;
inline constexpr size_t kOldSupremumEnd = 125;

inline constexpr size_t kPageDir = 8;  // FIL_PAGE_DATA_END: the directory ends here
inline constexpr size_t kSlotSize = 2;
inline constexpr unsigned kMinOwned = 4;  // PAGE_DIR_SLOT_MIN_N_OWNED
inline constexpr unsigned kMaxOwned = 8;  // PAGE_DIR_SLOT_MAX_N_OWNED

inline constexpr size_t kNewExtra = 5;         // REC_N_NEW_EXTRA_BYTES
inline constexpr size_t kOldExtra = 6;         // REC_N_OLD_EXTRA_BYTES
inline constexpr size_t kMaxFields = 1023;     // REC_MAX_N_FIELDS
inline constexpr uint16_t kHeapNoUserLow = 2;  // PAGE_HEAP_NO_USER_LOW

inline constexpr uint8_t kDirLeft = 1;
inline constexpr uint8_t kDirRight = 2;
inline constexpr uint8_t kDirNone = 5;
inline constexpr uint8_t kStatusNodePtr = 1;
inline constexpr uint8_t kStatusInstant = 4;

// ---- Undo page layout (trx0undo.h) -----------------------------------------
inline constexpr size_t kUndoPageHdr = 38;
inline constexpr size_t kUndoPageType = kUndoPageHdr + 0;
inline constexpr size_t kUndoPageStart = kUndoPageHdr + 2;
inline constexpr size_t kUndoPageFree = kUndoPageHdr + 4;
inline constexpr size_t kUndoPageNode = kUndoPageHdr + 6;  // FLST node: prev (4+2), next (4+2)
inline constexpr size_t kUndoPageHdrSize = 18;
inline constexpr size_t kUndoSegHdr = kUndoPageHdr + kUndoPageHdrSize;
inline constexpr size_t kUndoSegHdrSize = 30;  // state 2, last log 2, FSEG header 10, page list base 16

// The infimum and supremum records of an empty page (page0page.cc).
inline constexpr std::array<uint8_t, 26> kInfSupCompact = {
    0x01, 0x00, 0x02, 0x00, 0x0d, 'i', 'n', 'f', 'i', 'm', 'u', 'm', 0,
    0x01, 0x00, 0x0b, 0x00, 0x00, 's', 'u', 'p', 'r', 'e', 'm', 'u', 'm'};
inline constexpr std::array<uint8_t, 31> kInfSupRedundant = {
    0x08, 0x01, 0x00, 0x00, 0x03, 0x00, 0x74, 'i', 'n', 'f', 'i', 'm', 'u', 'm', 0, 0x09,
    0x01, 0x00, 0x08, 0x03, 0x00, 0x00, 's',  'u', 'p', 'r', 'e', 'm', 'u', 'm', 0};

// ---- Small accessors -----------------------------------------------------------
inline bool ValidPageSize(size_t n) { return n >= 4096 && n <= 65536 && (n & (n - 1)) == 0; }

inline uint16_t Get16(const uint8_t* page, size_t off) { return util::LoadBE16(page + off); }
inline void Put16(uint8_t* page, size_t off, uint32_t v) {
  util::StoreBE16(page + off, static_cast<uint16_t>(v));
}

// Byte offset of directory slot i (slot 0 is the infimum's, at the page end).
inline int64_t SlotPos(size_t page_size, size_t i) {
  return static_cast<int64_t>(page_size) - static_cast<int64_t>(kPageDir + kSlotSize * (i + 1));
}

inline bool IsIndexPageType(const uint8_t* page) {
  const uint16_t t = PageType(page);
  return t == kPageTypeIndex || t == kPageTypeRtree || t == kPageTypeInstant;
}
inline bool IsRtree(const uint8_t* page) { return page[kFilPageType + 1] == uint8_t(kPageTypeRtree & 0xff); }
inline bool IsLeaf(const uint8_t* page) { return Get16(page, kPageLevel) == 0; }

// n_owned and info bits share the byte at -5 (COMPACT) or -6 (REDUNDANT).
inline size_t OwnedByte(bool comp) { return comp ? kNewExtra : kOldExtra; }
inline unsigned NOwned(const uint8_t* page, size_t rec, bool comp) {
  return page[rec - OwnedByte(comp)] & 0x0f;
}
inline void SetNOwned(uint8_t* page, size_t rec, bool comp, unsigned n) {
  uint8_t& b = page[rec - OwnedByte(comp)];
  b = static_cast<uint8_t>((b & 0xf0) | n);
}
inline unsigned HeapNo(const uint8_t* page, size_t rec, bool comp) {
  return Get16(page, rec - (comp ? 4 : 5)) >> 3;
}

// ROW_FORMAT=REDUNDANT header fields, on any buffer holding the record's
// header before `rec`.
inline unsigned OldNFields(const uint8_t* rec) { return (util::LoadBE16(rec - 4) & 0x7fe) >> 1; }
inline bool OldShort(const uint8_t* rec) { return rec[-3] & 1; }
inline size_t OldExtraSize(const uint8_t* rec) {
  const size_t n = OldNFields(rec);
  return kOldExtra + (OldShort(rec) ? n : 2 * n);
}
// rec_get_data_size_old: the end offset of the last field. Needs
// OldExtraSize(rec) bytes before rec.
inline size_t OldDataSize(const uint8_t* rec) {
  const size_t n = OldNFields(rec);
  if (n == 0) return 0;
  if (OldShort(rec)) return rec[-static_cast<ptrdiff_t>(kOldExtra + n)] & 0x7f;
  return util::LoadBE16(rec - (kOldExtra + 2 * n)) & 0x3fff;
}

// rec_get_next_ptr: COMPACT next pointers are relative and wrap within the
// page; REDUNDANT ones are absolute. 0 means "none".
inline size_t NextRec(const uint8_t* page, size_t page_size, size_t rec, bool comp) {
  const uint16_t v = Get16(page, rec - 2);
  if (v == 0) return 0;
  return comp ? (rec + v) & (page_size - 1) : v;
}

// A record origin whose header bytes we may touch: from the infimum up to
// the directory. Used where the server trusts the page without checking.
inline bool PlausibleRec(size_t page_size, size_t rec, bool comp) {
  return rec >= (comp ? kNewInfimum : kOldInfimum) && rec < page_size - kPageDir;
}

inline Status Corrupt(const char* what, const std::string& msg) {
  return Error(ErrorCode::kCorrupt, std::string(what) + ": " + msg);
}

// ---- Directory maintenance (index_page_dir.cc) ----------------------------------
Status SplitSlot(uint8_t* page, size_t page_size, bool comp, int64_t slot, const char* what);
Status BalanceSlot(uint8_t* page, size_t page_size, bool comp, size_t s, const char* what);
int64_t FindOwnerSlot(const uint8_t* page, size_t page_size, int64_t last_slot, size_t owner);
void UpdateDirection(uint8_t* page, size_t last_insert, size_t prev_rec, size_t next_rec);
void MemFree(uint8_t* page, size_t rec, size_t data_size, size_t extra_size, bool comp);

// ---- Record insert and delete (page_insert.cc, page_delete.cc) ------------------
struct InsertArgs {
  bool reuse = false;
  size_t prev = 0;
  size_t shift = 0;    // COMPACT reuse only
  size_t enc_hdr = 0;  // REDUNDANT: n_fields/short/info; COMPACT: hdr_l << 3 | instant | info
  size_t hdr_c = 0;
  size_t data_c = 0;
  const uint8_t* lit = nullptr;  // literal header bytes, then literal data bytes
  size_t lit_len = 0;
};
Status InsertRedundant(uint8_t* page, size_t page_size, const InsertArgs& a);
Status InsertDynamic(uint8_t* page, size_t page_size, const InsertArgs& a);
Status DeleteRedundant(uint8_t* page, size_t page_size, size_t prev);
Status DeleteDynamic(uint8_t* page, size_t page_size, size_t prev, size_t hdr_size, size_t data_size);

}  // namespace xbak::innodb::index_page
