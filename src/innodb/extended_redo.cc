// EXTENDED redo records, applied as MariaDB 10.11 recovery applies them.
//
// The authority is the server's apply code: log0recv.cc log_phys_t::apply
// (argument decoding and its limits), log_phys_t::undo_append,
// page0page.cc page_create_low, trx0undo.cc trx_undo_page_init and
// page0cur.cc page_apply_insert_redundant / _dynamic, page_apply_delete_*,
// page_mem_free, page_dir_split_slot and page_dir_balance_slot. The checks
// are done in the server's order where that decides which message is given,
// and the page is modified in the server's order, so that even overlapping
// copies of odd (but accepted) records produce the same bytes.
//
// All positions are byte offsets into the frame held in size_t/int64_t, never
// pointers, so that a hostile offset can be compared instead of forming an
// out-of-range pointer. Where the server would read outside its frame (it
// relies on the buffer pool around it) we refuse the record instead.
#include "xbak/innodb/extended_redo.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

// ---- Index page layout (page0page.h, page0types.h, rem0rec.h) -------------
constexpr size_t kPageHeader = 38;
constexpr size_t kPageNDirSlots = kPageHeader + 0;
constexpr size_t kPageHeapTop = kPageHeader + 2;
constexpr size_t kPageNHeap = kPageHeader + 4;  // bit 15: COMPACT format
constexpr size_t kPageFree = kPageHeader + 6;
constexpr size_t kPageGarbage = kPageHeader + 8;
constexpr size_t kPageLastInsert = kPageHeader + 10;
constexpr size_t kPageInstant = kPageHeader + 12;
constexpr size_t kPageDirectionB = kPageHeader + 13;  // low 3 bits
constexpr size_t kPageNDirection = kPageHeader + 14;
constexpr size_t kPageNRecs = kPageHeader + 16;
constexpr size_t kPageHeaderPrivEnd = 26;  // bytes of PAGE_HEADER cleared by page_create_low
constexpr size_t kPageLevel = kPageHeader + 26;
constexpr size_t kPageData = 94;

constexpr size_t kNewInfimum = 99;
constexpr size_t kNewSupremum = 112;
constexpr size_t kNewSupremumEnd = 120;
constexpr size_t kOldInfimum = 101;
constexpr size_t kOldSupremum = 116;
constexpr size_t kOldSupremumEnd = 125;

constexpr size_t kPageDir = 8;  // FIL_PAGE_DATA_END: the directory ends here
constexpr size_t kSlotSize = 2;
constexpr unsigned kMinOwned = 4;  // PAGE_DIR_SLOT_MIN_N_OWNED
constexpr unsigned kMaxOwned = 8;  // PAGE_DIR_SLOT_MAX_N_OWNED

constexpr size_t kNewExtra = 5;         // REC_N_NEW_EXTRA_BYTES
constexpr size_t kOldExtra = 6;         // REC_N_OLD_EXTRA_BYTES
constexpr size_t kMaxFields = 1023;     // REC_MAX_N_FIELDS
constexpr uint16_t kHeapNoUserLow = 2;  // PAGE_HEAP_NO_USER_LOW

constexpr uint8_t kDirLeft = 1;
constexpr uint8_t kDirRight = 2;
constexpr uint8_t kDirNone = 5;
constexpr uint8_t kStatusNodePtr = 1;
constexpr uint8_t kStatusInstant = 4;

// ---- Undo page layout (trx0undo.h) -----------------------------------------
constexpr size_t kUndoPageHdr = 38;
constexpr size_t kUndoPageType = kUndoPageHdr + 0;
constexpr size_t kUndoPageStart = kUndoPageHdr + 2;
constexpr size_t kUndoPageFree = kUndoPageHdr + 4;
constexpr size_t kUndoPageNode = kUndoPageHdr + 6;  // FLST node: prev (4+2), next (4+2)
constexpr size_t kUndoPageHdrSize = 18;
constexpr size_t kUndoSegHdr = kUndoPageHdr + kUndoPageHdrSize;
constexpr size_t kUndoSegHdrSize = 30;  // state 2, last log 2, FSEG header 10, page list base 16

// The infimum and supremum records of an empty page (page0page.cc).
constexpr std::array<uint8_t, 26> kInfSupCompact = {0x01, 0x00, 0x02, 0x00, 0x0d, 'i',  'n',  'f',  'i',
                                                    'm',  'u',  'm',  0,    0x01, 0x00, 0x0b, 0x00, 0x00,
                                                    's',  'u',  'p',  'r',  'e',  'm',  'u',  'm'};
constexpr std::array<uint8_t, 31> kInfSupRedundant = {
    0x08, 0x01, 0x00, 0x00, 0x03, 0x00, 0x74, 'i', 'n', 'f', 'i', 'm', 'u', 'm', 0, 0x09,
    0x01, 0x00, 0x08, 0x03, 0x00, 0x00, 's',  'u', 'p', 'r', 'e', 'm', 'u', 'm', 0};

// ---- Small accessors -----------------------------------------------------------
bool ValidPageSize(size_t n) { return n >= 4096 && n <= 65536 && (n & (n - 1)) == 0; }

uint16_t Get16(const uint8_t* page, size_t off) { return LoadBE16(page + off); }
void Put16(uint8_t* page, size_t off, uint32_t v) { StoreBE16(page + off, static_cast<uint16_t>(v)); }

// Byte offset of directory slot i (slot 0 is the infimum's, at the page end).
int64_t SlotPos(size_t page_size, size_t i) {
  return static_cast<int64_t>(page_size) - static_cast<int64_t>(kPageDir + kSlotSize * (i + 1));
}

bool IsIndexPageType(const uint8_t* page) {
  const uint16_t t = PageType(page);
  return t == kPageTypeIndex || t == kPageTypeRtree || t == kPageTypeInstant;
}
bool IsRtree(const uint8_t* page) { return page[kFilPageType + 1] == uint8_t(kPageTypeRtree & 0xff); }
bool IsLeaf(const uint8_t* page) { return Get16(page, kPageLevel) == 0; }

// n_owned and info bits share the byte at -5 (COMPACT) or -6 (REDUNDANT).
size_t OwnedByte(bool comp) { return comp ? kNewExtra : kOldExtra; }
unsigned NOwned(const uint8_t* page, size_t rec, bool comp) { return page[rec - OwnedByte(comp)] & 0x0f; }
void SetNOwned(uint8_t* page, size_t rec, bool comp, unsigned n) {
  uint8_t& b = page[rec - OwnedByte(comp)];
  b = static_cast<uint8_t>((b & 0xf0) | n);
}
unsigned HeapNo(const uint8_t* page, size_t rec, bool comp) { return Get16(page, rec - (comp ? 4 : 5)) >> 3; }

// ROW_FORMAT=REDUNDANT header fields, on any buffer holding the record's
// header before `rec`.
unsigned OldNFields(const uint8_t* rec) { return (LoadBE16(rec - 4) & 0x7fe) >> 1; }
bool OldShort(const uint8_t* rec) { return rec[-3] & 1; }
size_t OldExtraSize(const uint8_t* rec) {
  const size_t n = OldNFields(rec);
  return kOldExtra + (OldShort(rec) ? n : 2 * n);
}
// rec_get_data_size_old: the end offset of the last field. Needs
// OldExtraSize(rec) bytes before rec.
size_t OldDataSize(const uint8_t* rec) {
  const size_t n = OldNFields(rec);
  if (n == 0) return 0;
  if (OldShort(rec)) return rec[-static_cast<ptrdiff_t>(kOldExtra + n)] & 0x7f;
  return LoadBE16(rec - (kOldExtra + 2 * n)) & 0x3fff;
}

// rec_get_next_ptr: COMPACT next pointers are relative and wrap within the
// page; REDUNDANT ones are absolute. 0 means "none".
size_t NextRec(const uint8_t* page, size_t page_size, size_t rec, bool comp) {
  const uint16_t v = Get16(page, rec - 2);
  if (v == 0) return 0;
  return comp ? (rec + v) & (page_size - 1) : v;
}

// A record origin whose header bytes we may touch: from the infimum up to
// the directory. Used where the server trusts the page without checking.
bool PlausibleRec(size_t page_size, size_t rec, bool comp) {
  return rec >= (comp ? kNewInfimum : kOldInfimum) && rec < page_size - kPageDir;
}

Status Corrupt(const char* what, const std::string& msg) {
  return Error(ErrorCode::kCorrupt, std::string(what) + ": " + msg);
}

// ---- Argument decoding (log_phys_t::apply) -----------------------------------
// mlog_decode_varint_length: the number of leading 1 bits of the first byte + 1.
size_t VarintLength(uint8_t first) {
  size_t len = 1;
  for (; first & 0x80; len++) first = static_cast<uint8_t>(first << 1);
  return len;
}

// mlog_decode_varint for the lengths apply() allows (1..3 bytes).
uint32_t DecodeVarint(const uint8_t* p) {
  const uint32_t i = p[0];
  if (i < 0x80) return i;
  if (i < 0xc0) return 0x80 + ((i & 0x3f) << 8 | p[1]);
  return 0x4080 + ((i & 0x1f) << 16 | uint32_t{p[1]} << 8 | p[2]);
}

// A cursor over the arguments, `left` bytes remaining.
struct ArgReader {
  const uint8_t* p;
  size_t left;

  // Reads one varint of at most max_len bytes. apply() demands that some
  // bytes remain after most arguments (ll >= rlen is corrupt) but lets the
  // last one end the record (ll > rlen); `must_leave_some` picks the rule.
  bool Read(size_t max_len, bool must_leave_some, size_t* out) {
    if (left == 0) return false;
    const size_t ll = VarintLength(*p);
    if (ll > max_len || (must_leave_some ? ll >= left : ll > left)) return false;
    *out = DecodeVarint(p);
    p += ll;
    left -= ll;
    return true;
  }
};

// ---- page_create_low ------------------------------------------------------------
void CreateIndexPage(uint8_t* page, size_t page_size, bool comp) {
  Put16(page, kFilPageType, kPageTypeIndex);
  std::memset(page + kPageHeader, 0, kPageHeaderPrivEnd);
  page[kPageNDirSlots + 1] = 2;
  page[kPageInstant] = 0;
  page[kPageDirectionB] = kDirNone;
  const size_t sup_end = comp ? kNewSupremumEnd : kOldSupremumEnd;
  if (comp) {
    page[kPageNHeap] = 0x80;
    std::memcpy(page + kPageData, kInfSupCompact.data(), kInfSupCompact.size());
  } else {
    std::memcpy(page + kPageData, kInfSupRedundant.data(), kInfSupRedundant.size());
  }
  page[kPageNHeap + 1] = kHeapNoUserLow;
  page[kPageHeapTop + 1] = static_cast<uint8_t>(sup_end);
  std::memset(page + sup_end, 0, page_size - kPageDir - sup_end);
  // Slot 1 points to the supremum, slot 0 to the infimum; the high bytes
  // were cleared above.
  page[page_size - kPageDir - 2 * kSlotSize + 1] = static_cast<uint8_t>(comp ? kNewSupremum : kOldSupremum);
  page[page_size - kPageDir - kSlotSize + 1] = static_cast<uint8_t>(comp ? kNewInfimum : kOldInfimum);
}

// ---- trx_undo_page_init -----------------------------------------------------------
void InitUndoPage(uint8_t* page, size_t page_size) {
  Put16(page, kFilPageType, kPageTypeUndoLog);
  Put16(page, kUndoPageType, 0);
  Put16(page, kUndoPageStart, kUndoPageHdr + kUndoPageHdrSize);
  Put16(page, kUndoPageFree, kUndoPageHdr + kUndoPageHdrSize);
  // flst_zero_both() on the page list node: prev and next = FIL_NULL, byte 0.
  std::memset(page + kUndoPageNode, 0xff, 4);
  std::memset(page + kUndoPageNode + 4, 0, 2);
  std::memset(page + kUndoPageNode + 6, 0xff, 4);
  std::memset(page + kUndoPageNode + 10, 0, 2);
  // The segment header survives (it is only meaningful on the first page).
  const size_t start = kUndoSegHdr + kUndoSegHdrSize;
  std::memset(page + start, 0, page_size - start - kPageDir);
}

// ---- log_phys_t::undo_append --------------------------------------------------------
Status UndoAppend(uint8_t* page, size_t page_size, const uint8_t* data, size_t len) {
  const size_t free = Get16(page, kUndoPageFree);
  if (free < kUndoPageHdr + kUndoPageHdrSize || free + len + 6 >= page_size - kPageDir) {
    return Corrupt("UNDO_APPEND", "TRX_UNDO_PAGE_FREE " + std::to_string(free) + " cannot take a " +
                                      std::to_string(len) + "-byte undo record");
  }
  // Each record is framed by the offset of the next one and its own start.
  Put16(page, kUndoPageFree, free + 4 + len);
  std::memcpy(page + free, page + kUndoPageFree, 2);
  std::memcpy(page + free + 2, data, len);
  Put16(page, free + 2 + len, free);
  return Status::Ok();
}

// ---- Directory maintenance -------------------------------------------------------------
// page_dir_split_slot: the slot at `slot` owns 9 records; give its first 4 to
// a new slot inserted just before it.
Status SplitSlot(uint8_t* page, size_t page_size, bool comp, int64_t slot, const char* what) {
  const unsigned n_owned = kMaxOwned + 1;
  size_t rec = Get16(page, slot + kSlotSize);  // the preceding slot's record
  for (unsigned i = n_owned / 2; i--;) {
    if (!PlausibleRec(page_size, rec, comp)) break;
    rec = NextRec(page, page_size, rec, comp);
  }
  if (!PlausibleRec(page_size, rec, comp)) {
    return Corrupt(what, "directory slot split walked off the record list");
  }
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  const int64_t last_slot = SlotPos(page_size, n_slots);  // where the new last slot goes
  if (last_slot < static_cast<int64_t>(kPageData) || last_slot > slot) {
    return Corrupt(what, "directory slot split does not fit the page");
  }
  std::memmove(page + last_slot, page + last_slot + kSlotSize, static_cast<size_t>(slot - last_slot));
  Put16(page, kPageNDirSlots, n_slots + 1u);
  Put16(page, slot, rec);
  const size_t upper = Get16(page, slot - kSlotSize);
  if (!PlausibleRec(page_size, upper, comp)) return Corrupt(what, "directory slot points outside the heap");
  SetNOwned(page, rec, comp, n_owned / 2);
  SetNOwned(page, upper, comp, n_owned - n_owned / 2);
  return Status::Ok();
}

// page_dir_balance_slot: slot s owns too few records; merge it into the next
// slot or borrow that slot's first record.
Status BalanceSlot(uint8_t* page, size_t page_size, bool comp, size_t s, const char* what) {
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  if (s + 1 == n_slots) return Status::Ok();  // the supremum's slot may own as few as 1
  if (s + 1 > n_slots) return Corrupt(what, "directory slot beyond PAGE_N_DIR_SLOTS");
  const int64_t slot = SlotPos(page_size, s);
  const size_t up_rec = Get16(page, slot - kSlotSize);
  const size_t slot_rec = Get16(page, slot);
  if (!PlausibleRec(page_size, up_rec, comp) || !PlausibleRec(page_size, slot_rec, comp)) {
    return Corrupt(what, "directory slot points outside the heap");
  }
  const unsigned up_n_owned = NOwned(page, up_rec, comp);
  if (up_n_owned <= kMinOwned) {
    SetNOwned(page, slot_rec, comp, 0);
    SetNOwned(page, up_rec, comp, up_n_owned + (kMinOwned - 1));
    const int64_t last_slot = SlotPos(page_size, n_slots - 1u);
    std::memmove(page + last_slot + kSlotSize, page + last_slot, static_cast<size_t>(slot - last_slot));
    Put16(page, last_slot, 0);
    Put16(page, kPageNDirSlots, n_slots - 1u);
    return Status::Ok();
  }
  SetNOwned(page, slot_rec, comp, 0);
  const size_t new_rec = NextRec(page, page_size, slot_rec, comp);
  if (!PlausibleRec(page_size, new_rec, comp)) return Corrupt(what, "directory balance walked off the list");
  SetNOwned(page, new_rec, comp, kMinOwned);
  SetNOwned(page, up_rec, comp, up_n_owned - 1);
  Put16(page, slot, new_rec);
  return Status::Ok();
}

// Finds the directory slot pointing to `owner`, searching from the last slot
// up to (not including) slot 0, which belongs to the infimum. -1 if none.
int64_t FindOwnerSlot(const uint8_t* page, size_t page_size, int64_t last_slot, size_t owner) {
  const int64_t first_slot = SlotPos(page_size, 0);
  for (int64_t s = last_slot; s != first_slot; s += kSlotSize) {
    if (Get16(page, s) == owner) return s;
  }
  return -1;
}

// Updates PAGE_DIRECTION_B / PAGE_N_DIRECTION after an insert between prev
// and next (not maintained on R-tree pages).
void UpdateDirection(uint8_t* page, size_t last_insert, size_t prev_rec, size_t next_rec) {
  if (IsRtree(page)) return;
  uint8_t& dir = page[kPageDirectionB];
  const unsigned d = dir & 7;
  uint8_t nd = kDirNone;
  if (last_insert == 0) {
  } else if (last_insert == prev_rec && d != kDirLeft) {
    nd = kDirRight;
  } else if (last_insert == next_rec && d != kDirRight) {
    nd = kDirLeft;
  }
  dir = static_cast<uint8_t>((dir & ~7u) | nd);
  if (nd == kDirNone) {
    Put16(page, kPageNDirection, 0);
  } else {
    Put16(page, kPageNDirection, Get16(page, kPageNDirection) + 1u);
  }
}

// page_mem_free: put a deleted record on PAGE_FREE, or give its space back to
// the heap when it is the most recently allocated record.
void MemFree(uint8_t* page, size_t rec, size_t data_size, size_t extra_size, bool comp) {
  const size_t free = Get16(page, kPageFree);
  const uint16_t n_heap = static_cast<uint16_t>(Get16(page, kPageNHeap) - 1);
  const unsigned heap_no = HeapNo(page, rec, comp);
  const bool deleting_top = n_heap == (comp ? (heap_no | 0x8000u) : heap_no);
  if (deleting_top) {
    const uint16_t heap_top = Get16(page, kPageHeapTop);
    const size_t extra_savings = heap_top - (rec + data_size);  // wraps like the server's size_t
    Put16(page, kPageHeapTop, rec - extra_size);
    Put16(page, kPageNHeap, n_heap);
    if (extra_savings) Put16(page, kPageGarbage, Get16(page, kPageGarbage) - extra_savings);
  } else {
    Put16(page, kPageFree, rec);
    Put16(page, kPageGarbage, Get16(page, kPageGarbage) + extra_size + data_size);
  }
  Put16(page, kPageLastInsert, 0);
  Put16(page, kPageNRecs, Get16(page, kPageNRecs) - 1u);
  const size_t end = rec + data_size;
  size_t start = rec;
  if (!deleting_top) {
    const uint16_t next = free ? static_cast<uint16_t>(comp ? free - rec : free) : 0;
    Put16(page, rec - 2, next);
  } else {
    start = rec - extra_size;
  }
  std::memset(page + start, 0, end - start);
}

// ---- INSERT_HEAP_REDUNDANT / INSERT_REUSE_REDUNDANT ----------------------------------
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

Status InsertRedundant(uint8_t* page, size_t page_size, const InsertArgs& a) {
  const char* what = a.reuse ? "INSERT_REUSE_REDUNDANT" : "INSERT_HEAP_REDUNDANT";
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  const uint16_t h = Get16(page, kPageNHeap);
  if (n_slots < 2 || h < n_slots || h < kHeapNoUserLow || h >= page_size / kOldExtra ||
      !IsIndexPageType(page) || Get16(page, kOldSupremum - 2) != 0) {
    return Corrupt(what, "not a consistent ROW_FORMAT=REDUNDANT index page (PAGE_N_DIR_SLOTS " +
                             std::to_string(n_slots) + ", PAGE_N_HEAP " + std::to_string(h) + ")");
  }
  const int64_t last_slot = SlotPos(page_size, n_slots - 1u);
  const int64_t heap_bot = kOldSupremumEnd;
  const int64_t heap_top = Get16(page, kPageHeapTop);
  if (heap_bot > heap_top || heap_top > last_slot) {
    return Corrupt(what, "PAGE_HEAP_TOP " + std::to_string(heap_top) + " outside the heap");
  }
  if (Get16(page, last_slot) != kOldSupremum || Get16(page, SlotPos(page_size, 0)) != kOldInfimum) {
    return Corrupt(what, "the directory does not start at the infimum and end at the supremum");
  }
  const int64_t prev_rec = static_cast<int64_t>(kOldInfimum + a.prev);
  if (a.prev && (heap_bot + static_cast<int64_t>(kOldExtra + 1) > prev_rec || prev_rec > heap_top)) {
    return Corrupt(what, "prev_rec offset " + std::to_string(prev_rec) + " outside the heap");
  }
  const uint8_t* prev_p = page + prev_rec;
  const size_t pn_fields = OldNFields(prev_p);
  if (pn_fields == 0 || pn_fields > kMaxFields) {
    return Corrupt(what,
                   "prev_rec " + std::to_string(prev_rec) + " has " + std::to_string(pn_fields) + " fields");
  }
  const int64_t pextra_size = static_cast<int64_t>(OldExtraSize(prev_p));
  if (prev_rec != static_cast<int64_t>(kOldInfimum) && prev_rec - pextra_size < heap_bot) {
    return Corrupt(what, "prev_rec header starts below the heap");
  }
  if (a.hdr_c && prev_rec - static_cast<int64_t>(a.hdr_c) < heap_bot) {
    return Corrupt(what, "hdr_c " + std::to_string(a.hdr_c) + " reaches below the heap");
  }
  if (prev_rec < pextra_size) return Corrupt(what, "the infimum's header is damaged");
  const int64_t pdata_size = static_cast<int64_t>(OldDataSize(prev_p));
  if (prev_rec + pdata_size > heap_top) return Corrupt(what, "prev_rec data ends above PAGE_HEAP_TOP");
  const int64_t next_rec = Get16(page, prev_rec - 2);
  if (next_rec != static_cast<int64_t>(kOldSupremum) &&
      (heap_bot + static_cast<int64_t>(kOldExtra) > next_rec || next_rec > heap_top)) {
    return Corrupt(what, "the successor of prev_rec (" + std::to_string(next_rec) + ") is outside the heap");
  }
  const bool is_short = (a.enc_hdr >> 2) & 1;
  const size_t n_fields = (a.enc_hdr >> 3) + 1;
  if (n_fields > kMaxFields) return Corrupt(what, std::to_string(n_fields) + " fields");
  const size_t extra_size = kOldExtra + (is_short ? n_fields : 2 * n_fields);
  const size_t hdr_c = a.hdr_c + kOldExtra;  // the fixed header is always copied, then patched
  if (hdr_c > extra_size) return Corrupt(what, "hdr_c exceeds the record header");
  const size_t hdr_lit = extra_size - hdr_c;
  if (hdr_lit > a.lit_len) return Corrupt(what, "record truncated in the header bytes");

  unsigned n_owned;
  int64_t owner_rec = next_rec;
  for (unsigned ns = kMaxOwned; !(n_owned = NOwned(page, owner_rec, false));) {
    owner_rec = Get16(page, owner_rec - 2);
    if (owner_rec != static_cast<int64_t>(kOldSupremum) &&
        (heap_bot + static_cast<int64_t>(kOldExtra) > owner_rec || owner_rec > heap_top)) {
      return Corrupt(what, "record list leaves the heap while looking for the owner");
    }
    if (!ns--) return Corrupt(what, "no owner within 9 records (cyclic record list?)");
  }
  if (n_owned > kMaxOwned) return Corrupt(what, "owner record owns " + std::to_string(n_owned));
  const int64_t owner_slot = FindOwnerSlot(page, page_size, last_slot, owner_rec);
  if (owner_slot < 0) return Corrupt(what, "no directory slot points to the owner record");

  // Build the header locally so that nothing is written before all checks.
  std::array<uint8_t, kOldExtra + kMaxFields * 2> hdr{};
  std::memcpy(hdr.data(), a.lit, hdr_lit);
  uint8_t* ins = hdr.data() + extra_size;
  std::memcpy(ins - hdr_c, page + prev_rec - hdr_c, hdr_c);
  ins[-6] = static_cast<uint8_t>((ins[-6] & 0x0f) | ((a.enc_hdr & 3) << 4));
  ins[-3] = static_cast<uint8_t>((ins[-3] & ~1u) | (is_short ? 1 : 0));
  StoreBE16(ins - 4, static_cast<uint16_t>((LoadBE16(ins - 4) & ~0x7feu) | (n_fields << 1)));
  ins[-6] &= 0xf0;  // n_owned = 0
  const size_t data_size = OldDataSize(ins);
  if (a.data_c > data_size) return Corrupt(what, "data_c exceeds the record's data size");
  if (hdr_lit + data_size - a.data_c != a.lit_len) {
    return Corrupt(what, "literal length " + std::to_string(a.lit_len) + " does not match the record");
  }
  if (prev_rec + static_cast<int64_t>(a.data_c) > static_cast<int64_t>(page_size)) {
    return Corrupt(what, "data_c reaches beyond the page");
  }
  const size_t rec_size = extra_size + data_size;

  int64_t buf;
  if (a.reuse) {
    const int64_t free_rec = Get16(page, kPageFree);
    if (heap_bot + static_cast<int64_t>(kOldExtra) > free_rec || free_rec > heap_top) {
      return Corrupt(what, "PAGE_FREE " + std::to_string(free_rec) + " outside the heap");
    }
    const int64_t fextra_size = static_cast<int64_t>(OldExtraSize(page + free_rec));
    if (free_rec - fextra_size < heap_bot) return Corrupt(what, "PAGE_FREE record header below the heap");
    const int64_t fdata_size = static_cast<int64_t>(OldDataSize(page + free_rec));
    if (free_rec + fdata_size > heap_top) return Corrupt(what, "PAGE_FREE record data above PAGE_HEAP_TOP");
    if (static_cast<int64_t>(rec_size) > fextra_size + fdata_size) {
      return Corrupt(what, "the record does not fit the PAGE_FREE record");
    }
    const uint16_t garbage = Get16(page, kPageGarbage);
    if (garbage < fextra_size + fdata_size)
      return Corrupt(what, "PAGE_GARBAGE smaller than the PAGE_FREE record");
    buf = free_rec - fextra_size;
    const int64_t next_free = Get16(page, free_rec - 2);
    if (next_free != 0 &&
        (next_free < heap_bot + static_cast<int64_t>(kOldExtra + 1) || heap_top < next_free)) {
      return Corrupt(what, "the PAGE_FREE list leaves the heap");
    }
    Put16(page, kPageGarbage, garbage - rec_size);
    const unsigned fheap_no = HeapNo(page, free_rec, false);
    StoreBE16(ins - 5, static_cast<uint16_t>((LoadBE16(ins - 5) & 7u) | (fheap_no << 3)));
    std::memcpy(page + kPageFree, page + free_rec - 2, 2);
  } else {
    if (heap_top + static_cast<int64_t>(rec_size) > last_slot) {
      return Corrupt(what, "a " + std::to_string(rec_size) + "-byte record does not fit the heap");
    }
    StoreBE16(ins - 5, static_cast<uint16_t>((LoadBE16(ins - 5) & 7u) | (uint32_t{h} << 3)));
    Put16(page, kPageNHeap, h + 1u);
    Put16(page, kPageHeapTop, static_cast<uint64_t>(heap_top) + rec_size);
    buf = heap_top;
  }

  const size_t last_insert = Get16(page, kPageLastInsert);
  std::memcpy(page + buf, hdr.data(), extra_size);
  const int64_t rec = buf + static_cast<int64_t>(extra_size);
  Put16(page, kPageLastInsert, static_cast<uint64_t>(rec));
  std::memcpy(page + prev_rec - 2, page + kPageLastInsert, 2);
  std::memmove(page + rec, page + prev_rec, a.data_c);
  std::memcpy(page + rec + a.data_c, a.lit + hdr_lit, a.lit_len - hdr_lit);
  SetNOwned(page, owner_rec, false, n_owned + 1);
  UpdateDirection(page, last_insert, prev_rec, next_rec);
  Put16(page, kPageNRecs, Get16(page, kPageNRecs) + 1u);
  if (n_owned == kMaxOwned) return SplitSlot(page, page_size, false, owner_slot, what);
  return Status::Ok();
}

// ---- INSERT_HEAP_DYNAMIC / INSERT_REUSE_DYNAMIC ----------------------------------------
Status InsertDynamic(uint8_t* page, size_t page_size, const InsertArgs& a) {
  const char* what = a.reuse ? "INSERT_REUSE_DYNAMIC" : "INSERT_HEAP_DYNAMIC";
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  uint32_t h = Get16(page, kPageNHeap);
  const size_t hdr_l = a.enc_hdr >> 3;
  if (n_slots < 2 || h < (kHeapNoUserLow | 0x8000u) || (h & 0x7fff) >= page_size / kNewExtra ||
      (h & 0x7fff) < n_slots || !IsIndexPageType(page) || Get16(page, kNewSupremum - 2) != 0 ||
      ((a.enc_hdr & kStatusInstant) && !IsLeaf(page)) || hdr_l > a.lit_len) {
    return Corrupt(what,
                   "not a consistent ROW_FORMAT=COMPACT/DYNAMIC index page for this record "
                   "(PAGE_N_DIR_SLOTS " +
                       std::to_string(n_slots) + ", PAGE_N_HEAP " + std::to_string(h) + ")");
  }
  const int64_t last_slot = SlotPos(page_size, n_slots - 1u);
  const int64_t heap_bot = kNewSupremumEnd;
  const int64_t heap_top = Get16(page, kPageHeapTop);
  if (heap_bot > heap_top || heap_top > last_slot) {
    return Corrupt(what, "PAGE_HEAP_TOP " + std::to_string(heap_top) + " outside the heap");
  }
  if (Get16(page, last_slot) != kNewSupremum || Get16(page, SlotPos(page_size, 0)) != kNewInfimum) {
    return Corrupt(what, "the directory does not start at the infimum and end at the supremum");
  }
  // The server computes these positions in 16 bits.
  const int64_t prev_rec = static_cast<uint16_t>(kNewInfimum + a.prev);
  if (a.prev && (heap_bot + static_cast<int64_t>(kNewExtra) > prev_rec || prev_rec > heap_top)) {
    return Corrupt(what, "prev_rec offset " + std::to_string(kNewInfimum + a.prev) + " outside the heap");
  }
  const int64_t next_rec = static_cast<uint16_t>(prev_rec + Get16(page, prev_rec - 2));
  if (next_rec != static_cast<int64_t>(kNewSupremum) &&
      (heap_bot + static_cast<int64_t>(kNewExtra) > next_rec || next_rec > heap_top)) {
    return Corrupt(what, "the successor of prev_rec (" + std::to_string(next_rec) + ") is outside the heap");
  }
  unsigned n_owned;
  int64_t owner_rec = next_rec;
  for (unsigned ns = kMaxOwned; !(n_owned = NOwned(page, owner_rec, true));) {
    owner_rec = static_cast<uint16_t>(owner_rec + Get16(page, owner_rec - 2));
    if (owner_rec != static_cast<int64_t>(kNewSupremum) &&
        (heap_bot + static_cast<int64_t>(kNewExtra) > owner_rec || owner_rec > heap_top)) {
      return Corrupt(what, "record list leaves the heap while looking for the owner");
    }
    if (!ns--) return Corrupt(what, "no owner within 9 records (cyclic record list?)");
  }
  if (n_owned > kMaxOwned) return Corrupt(what, "owner record owns " + std::to_string(n_owned));
  const int64_t owner_slot = FindOwnerSlot(page, page_size, last_slot, owner_rec);
  if (owner_slot < 0) return Corrupt(what, "no directory slot points to the owner record");

  const size_t extra_size = kNewExtra + a.hdr_c + hdr_l;
  const size_t data_size = a.data_c + a.lit_len - hdr_l;
  const size_t rec_size = extra_size + data_size;
  // The server copies these without checking; a genuine record never
  // reaches outside the page, so refuse those that do.
  if (prev_rec < static_cast<int64_t>(kNewExtra + a.hdr_c))
    return Corrupt(what, "hdr_c reaches before the page");
  if (prev_rec + static_cast<int64_t>(a.data_c) > static_cast<int64_t>(page_size)) {
    return Corrupt(what, "data_c reaches beyond the page");
  }

  int64_t buf;
  if (a.reuse) {
    const int64_t free_rec = Get16(page, kPageFree);
    if (heap_bot + static_cast<int64_t>(kNewExtra) > free_rec || free_rec > heap_top) {
      return Corrupt(what, "PAGE_FREE " + std::to_string(free_rec) + " outside the heap");
    }
    buf = free_rec - static_cast<int64_t>(extra_size);
    const int64_t shift = static_cast<int64_t>(a.shift >> 1);
    buf += (a.shift & 1) ? -shift : shift;
    if (heap_bot > buf || buf + static_cast<int64_t>(rec_size) > heap_top) {
      return Corrupt(what, "the reused space (shift " + std::to_string(a.shift) + ") is outside the heap");
    }
    const uint16_t garbage = Get16(page, kPageGarbage);
    if (garbage < rec_size) return Corrupt(what, "PAGE_GARBAGE smaller than the record");
    uint32_t n = Get16(page, free_rec - 2);
    if (n != 0) {
      n = static_cast<uint16_t>(n + free_rec);
      if (n < kNewSupremumEnd + kNewExtra || heap_top < n)
        return Corrupt(what, "the PAGE_FREE list leaves the heap");
    }
    Put16(page, kPageFree, n);
    Put16(page, kPageGarbage, garbage - rec_size);
    h = HeapNo(page, free_rec, true);
  } else {
    if (heap_top + static_cast<int64_t>(rec_size) > last_slot) {
      return Corrupt(what, "a " + std::to_string(rec_size) + "-byte record does not fit the heap");
    }
    Put16(page, kPageNHeap, h + 1);
    h &= 0x7fff;
    Put16(page, kPageHeapTop, static_cast<uint64_t>(heap_top) + rec_size);
    buf = heap_top;
  }

  std::memcpy(page + buf, a.lit, hdr_l);
  buf += static_cast<int64_t>(hdr_l);
  std::memmove(page + buf, page + prev_rec - kNewExtra - a.hdr_c, a.hdr_c);
  buf += static_cast<int64_t>(a.hdr_c);
  page[buf++] = static_cast<uint8_t>((a.enc_hdr & 3) << 4);  // info bits; n_owned = 0
  page[buf++] = static_cast<uint8_t>(h >> 5);
  uint32_t low = (h & 31) << 3;
  low |= IsLeaf(page) ? (a.enc_hdr & kStatusInstant) : kStatusNodePtr;
  page[buf++] = static_cast<uint8_t>(low);
  buf += 2;
  const int64_t rec = buf;
  Put16(page, rec - 2, static_cast<uint16_t>(next_rec - rec));
  const size_t last_insert = Get16(page, kPageLastInsert);
  Put16(page, kPageLastInsert, static_cast<uint64_t>(rec));
  Put16(page, prev_rec - 2, static_cast<uint16_t>(rec - prev_rec));
  std::memmove(page + rec, page + prev_rec, a.data_c);
  std::memcpy(page + rec + a.data_c, a.lit + hdr_l, a.lit_len - hdr_l);
  SetNOwned(page, owner_rec, true, n_owned + 1);
  UpdateDirection(page, last_insert, prev_rec, next_rec);
  Put16(page, kPageNRecs, Get16(page, kPageNRecs) + 1u);
  if (n_owned == kMaxOwned) return SplitSlot(page, page_size, true, owner_slot, what);
  return Status::Ok();
}

// ---- DELETE_ROW_FORMAT_REDUNDANT / DELETE_ROW_FORMAT_DYNAMIC ---------------------------
// Shared tail of both deletes: find the owner's slot, unlink, free, balance.
Status FinishDelete(uint8_t* page, size_t page_size, bool comp, int64_t last_slot, int64_t prev_rec,
                    int64_t rec, int64_t next, int64_t owner, unsigned slot_owned, size_t data_size,
                    size_t extra_size, const char* what) {
  const int64_t first_slot = SlotPos(page_size, 0);
  const int64_t slot = FindOwnerSlot(page, page_size, last_slot, static_cast<size_t>(owner));
  if (slot < 0) return Corrupt(what, "no directory slot points to the owner record");
  if (rec == owner) {
    owner = prev_rec;
    Put16(page, slot, static_cast<uint64_t>(owner));
  }
  if (comp) {
    Put16(page, prev_rec - 2, static_cast<uint16_t>(next - prev_rec));
  } else {
    std::memcpy(page + prev_rec - 2, page + rec - 2, 2);
  }
  uint8_t& b = page[owner - static_cast<int64_t>(OwnedByte(comp))];
  b = static_cast<uint8_t>((b & 0xf0) | slot_owned);
  MemFree(page, static_cast<size_t>(rec), data_size, extra_size, comp);
  if (slot_owned < kMinOwned) {
    return BalanceSlot(page, page_size, comp, static_cast<size_t>((first_slot - slot) / 2), what);
  }
  return Status::Ok();
}

Status DeleteRedundant(uint8_t* page, size_t page_size, size_t prev) {
  const char* what = "DELETE_ROW_FORMAT_REDUNDANT";
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  const uint16_t n_recs = Get16(page, kPageNRecs);
  if (!n_recs || n_slots < 2 || !IsIndexPageType(page) || Get16(page, kOldSupremum - 2) != 0 ||
      (Get16(page, kPageNHeap) & 0x8000)) {
    return Corrupt(what, "not a non-empty ROW_FORMAT=REDUNDANT index page");
  }
  const int64_t slot = SlotPos(page_size, n_slots - 1u);
  const int64_t min_rec = kOldSupremumEnd + kOldExtra;
  const int64_t prev_rec = static_cast<int64_t>(kOldInfimum + prev);
  if (prev_rec > slot)
    return Corrupt(what, "prev_rec offset " + std::to_string(prev_rec) + " outside the page");
  const int64_t rec = Get16(page, prev_rec - 2);
  if (rec < min_rec || slot < rec) return Corrupt(what, "the record to delete is outside the heap");
  const size_t extra_size = OldExtraSize(page + rec);
  if (rec < static_cast<int64_t>(kOldSupremumEnd + extra_size)) {
    return Corrupt(what, "the record's header starts below the heap");
  }
  const size_t data_size = OldDataSize(page + rec);
  if (slot < rec + static_cast<int64_t>(data_size))
    return Corrupt(what, "the record's data overlaps the directory");
  const int64_t next = Get16(page, rec - 2);
  if (next != static_cast<int64_t>(kOldSupremum) && (next < min_rec || slot < next)) {
    return Corrupt(what, "the successor record is outside the heap");
  }
  int64_t s = rec;
  unsigned slot_owned;
  for (unsigned i = n_recs; !(slot_owned = NOwned(page, s, false));) {
    s = Get16(page, s - 2);
    if (s != static_cast<int64_t>(kOldSupremum) && (s < min_rec || slot < s)) {
      return Corrupt(what, "record list leaves the heap while looking for the owner");
    }
    if (!i--) return Corrupt(what, "no owner found (cyclic record list?)");
  }
  return FinishDelete(page, page_size, false, slot, prev_rec, rec, next, s, slot_owned - 1, data_size,
                      extra_size, what);
}

Status DeleteDynamic(uint8_t* page, size_t page_size, size_t prev, size_t hdr_size, size_t data_size) {
  const char* what = "DELETE_ROW_FORMAT_DYNAMIC";
  const uint16_t n_slots = Get16(page, kPageNDirSlots);
  const uint16_t n_recs = Get16(page, kPageNRecs);
  if (!n_recs || n_slots < 2 || !IsIndexPageType(page) || Get16(page, kNewSupremum - 2) != 0 ||
      !(Get16(page, kPageNHeap) & 0x8000)) {
    return Corrupt(what, "not a non-empty ROW_FORMAT=COMPACT/DYNAMIC index page");
  }
  const int64_t slot = SlotPos(page_size, n_slots - 1u);
  const int64_t min_rec = kNewSupremumEnd + kNewExtra;
  // The server computes these positions in 16 bits.
  const int64_t prev_rec = static_cast<uint16_t>(kNewInfimum + prev);
  if (prev_rec > slot || prev_rec < static_cast<int64_t>(kNewExtra)) {
    return Corrupt(what, "prev_rec offset " + std::to_string(kNewInfimum + prev) + " outside the page");
  }
  const int64_t rec = static_cast<uint16_t>(prev_rec + Get16(page, prev_rec - 2));
  if (rec < min_rec || slot < rec) return Corrupt(what, "the record to delete is outside the heap");
  const size_t extra_size = kNewExtra + hdr_size;
  if (rec < static_cast<int64_t>(kNewSupremumEnd + extra_size) ||
      slot < rec + static_cast<int64_t>(data_size)) {
    return Corrupt(what, "the record (" + std::to_string(extra_size) + "+" + std::to_string(data_size) +
                             " bytes) does not fit the heap");
  }
  const int64_t next = static_cast<uint16_t>(rec + Get16(page, rec - 2));
  if (next != static_cast<int64_t>(kNewSupremum) && (next < min_rec || slot < next)) {
    return Corrupt(what, "the successor record is outside the heap");
  }
  int64_t s = rec;
  unsigned slot_owned;
  for (unsigned i = n_recs; !(slot_owned = NOwned(page, s, true));) {
    const uint16_t step = Get16(page, s - 2);
    if (step < kNewExtra || step > static_cast<uint16_t>(-static_cast<int>(kNewExtra))) {
      return Corrupt(what, "bad next-record offset while looking for the owner");
    }
    s = static_cast<uint16_t>(s + step);
    if (s != static_cast<int64_t>(kNewSupremum) && (s < min_rec || slot < s)) {
      return Corrupt(what, "record list leaves the heap while looking for the owner");
    }
    if (!i--) return Corrupt(what, "no owner found (cyclic record list?)");
  }
  return FinishDelete(page, page_size, true, slot, prev_rec, rec, next, s, slot_owned - 1, data_size,
                      extra_size, what);
}

// ---- Decoding of each subtype's arguments (log_phys_t::apply) -------------------------
Status DecodeInsert(uint8_t* page, size_t page_size, uint8_t subtype, const uint8_t* args, size_t left) {
  const bool dynamic = subtype & 2;
  const char* what = dynamic ? ((subtype & 1) ? "INSERT_REUSE_DYNAMIC" : "INSERT_HEAP_DYNAMIC")
                             : ((subtype & 1) ? "INSERT_REUSE_REDUNDANT" : "INSERT_HEAP_REDUNDANT");
  InsertArgs a;
  a.reuse = subtype & 1;
  ArgReader r{args, left};
  bool ok = r.Read(3, true, &a.prev);
  if (dynamic) {
    if (ok && a.reuse) ok = r.Read(3, true, &a.shift);
    ok = ok && r.Read(3, true, &a.enc_hdr) && r.Read(2, true, &a.hdr_c) && r.Read(3, false, &a.data_c);
  } else {
    ok = ok && r.Read(2, true, &a.enc_hdr) && r.Read(2, true, &a.hdr_c) && r.Read(2, false, &a.data_c);
  }
  if (!ok) return Corrupt(what, "malformed or truncated arguments");
  a.lit = r.p;
  a.lit_len = r.left;
  return dynamic ? InsertDynamic(page, page_size, a) : InsertRedundant(page, page_size, a);
}

Status DecodeDeleteDynamic(uint8_t* page, size_t page_size, const uint8_t* args, size_t left) {
  ArgReader r{args, left};
  size_t prev = 0, hdr_size = 0, data_size = 0;
  // The last varint must end the record exactly.
  if (!r.Read(3, true, &prev) || !r.Read(2, true, &hdr_size) || left == 0 || r.left == 0 ||
      VarintLength(*r.p) > 3 || VarintLength(*r.p) != r.left) {
    return Corrupt("DELETE_ROW_FORMAT_DYNAMIC", "malformed or truncated arguments");
  }
  data_size = DecodeVarint(r.p);
  return DeleteDynamic(page, page_size, prev, hdr_size, data_size);
}

}  // namespace

Status ApplyExtendedRecord(uint8_t* page, size_t page_size, const uint8_t* body, size_t body_len) {
  if (!ValidPageSize(page_size)) {
    return Error(ErrorCode::kInvalidArgument, "EXTENDED record: page size " + std::to_string(page_size));
  }
  if (body_len == 0) return Error(ErrorCode::kCorrupt, "EXTENDED record without a subtype byte");
  const uint8_t subtype = body[0];
  if (subtype >= static_cast<uint8_t>(ExtendedType::kTrimPages)) {
    return Error(ErrorCode::kUnsupported,
                 subtype == static_cast<uint8_t>(ExtendedType::kTrimPages)
                     ? std::string("TRIM_PAGES is a file operation, not applied to a page")
                     : "EXTENDED record of unknown subtype " + std::to_string(subtype));
  }
  const uint32_t page_no = PageNo(page);
  if (page_no < 3) {
    return Error(ErrorCode::kCorrupt, "EXTENDED record for page " + std::to_string(page_no) +
                                          " (the server never logs them below page 3)");
  }
  const uint8_t* args = body + 1;
  const size_t left = body_len - 1;
  switch (static_cast<ExtendedType>(subtype)) {
    case ExtendedType::kInitRowFormatRedundant:
    case ExtendedType::kInitRowFormatDynamic:
      if (left != 0) return Error(ErrorCode::kCorrupt, "INIT_ROW_FORMAT record with arguments");
      CreateIndexPage(page, page_size, subtype == static_cast<uint8_t>(ExtendedType::kInitRowFormatDynamic));
      return Status::Ok();
    case ExtendedType::kUndoInit:
      if (left != 0) return Error(ErrorCode::kCorrupt, "UNDO_INIT record with arguments");
      InitUndoPage(page, page_size);
      return Status::Ok();
    case ExtendedType::kUndoAppend:
      if (left < 3) return Error(ErrorCode::kCorrupt, "UNDO_APPEND record shorter than 3 bytes");
      return UndoAppend(page, page_size, args, left);
    case ExtendedType::kInsertHeapRedundant:
    case ExtendedType::kInsertReuseRedundant:
    case ExtendedType::kInsertHeapDynamic:
    case ExtendedType::kInsertReuseDynamic:
      return DecodeInsert(page, page_size, subtype, args, left);
    case ExtendedType::kDeleteRowFormatRedundant: {
      // Exactly one varint of 1..3 bytes.
      if (left < 1 || left > 3 || VarintLength(args[0]) != left) {
        return Error(ErrorCode::kCorrupt, "DELETE_ROW_FORMAT_REDUNDANT: malformed arguments");
      }
      return DeleteRedundant(page, page_size, DecodeVarint(args));
    }
    case ExtendedType::kDeleteRowFormatDynamic:
      return DecodeDeleteDynamic(page, page_size, args, left);
    case ExtendedType::kTrimPages:
      break;
  }
  return Error(ErrorCode::kUnsupported, "EXTENDED record of unknown subtype " + std::to_string(subtype));
}

// ---- CheckIndexPage --------------------------------------------------------------------
namespace {
// The status bits of a COMPACT record: fixed for infimum (2) and supremum (3);
// user records are node pointers (1) above the leaf level, ordinary (0) or
// instant-ALTER metadata (4) on it.
bool StatusFits(const uint8_t* page, size_t rec, unsigned status) {
  if (rec == kNewInfimum) return status == 2;
  if (rec == kNewSupremum) return status == 3;
  if (!IsLeaf(page)) return status == kStatusNodePtr;
  return status == 0 || status == kStatusInstant;
}
}  // namespace

Status CheckIndexPage(const uint8_t* page, size_t page_size) {
  auto bad = [](const std::string& m) { return Error(ErrorCode::kCorrupt, "index page: " + m); };
  if (!ValidPageSize(page_size))
    return Error(ErrorCode::kInvalidArgument, "page size " + std::to_string(page_size));
  if (!IsIndexPageType(page))
    return bad("FIL_PAGE_TYPE " + std::to_string(PageType(page)) + " is not an index");
  const uint16_t n_heap_raw = Get16(page, kPageNHeap);
  const bool comp = n_heap_raw & 0x8000;
  const size_t n_heap = n_heap_raw & 0x7fff;
  const size_t infimum = comp ? kNewInfimum : kOldInfimum;
  const size_t supremum = comp ? kNewSupremum : kOldSupremum;
  const size_t heap_bot = comp ? kNewSupremumEnd : kOldSupremumEnd;
  const size_t extra = comp ? kNewExtra : kOldExtra;
  const size_t n_slots = Get16(page, kPageNDirSlots);
  const size_t heap_top = Get16(page, kPageHeapTop);
  if (n_slots < 2 || kPageDir + kSlotSize * n_slots > page_size - heap_bot) {
    return bad("PAGE_N_DIR_SLOTS " + std::to_string(n_slots));
  }
  const size_t last_slot = static_cast<size_t>(SlotPos(page_size, n_slots - 1));
  if (heap_top < heap_bot || heap_top > last_slot) return bad("PAGE_HEAP_TOP " + std::to_string(heap_top));
  if (n_heap < kHeapNoUserLow) return bad("PAGE_N_HEAP " + std::to_string(n_heap));
  if (Get16(page, static_cast<size_t>(SlotPos(page_size, 0))) != infimum)
    return bad("slot 0 is not the infimum");
  if (Get16(page, last_slot) != supremum) return bad("the last slot is not the supremum");

  std::vector<bool> seen(n_heap, false);
  auto in_heap = [&](size_t rec) { return rec >= heap_bot + extra && rec <= heap_top; };
  auto mark = [&](size_t rec, const char* list) -> Status {
    const size_t hn = HeapNo(page, rec, comp);
    if (hn >= n_heap)
      return bad(std::string(list) + " record " + std::to_string(rec) + " has heap_no " + std::to_string(hn) +
                 " >= PAGE_N_HEAP");
    if (seen[hn])
      return bad("heap_no " + std::to_string(hn) + " used twice (record " + std::to_string(rec) + ")");
    seen[hn] = true;
    return Status::Ok();
  };
  auto next_of = [&](size_t rec) -> size_t {
    const uint16_t v = Get16(page, rec - 2);
    if (v == 0) return 0;
    return comp ? (rec + v) & (page_size - 1) : v;
  };

  // Walk the record list, checking ownership against the directory.
  size_t rec = infimum;
  size_t slot_no = 0;
  size_t since_owner = 0;
  size_t n_recs = 0;
  for (size_t steps = 0;; steps++) {
    if (steps > n_heap) return bad("the record list is longer than PAGE_N_HEAP (cycle?)");
    XBAK_RETURN_IF_ERROR(mark(rec, "listed"));
    if (comp && !StatusFits(page, rec, page[rec - 3] & 7u)) {
      return bad("record " + std::to_string(rec) + " has status " + std::to_string(page[rec - 3] & 7u));
    }
    since_owner++;
    const unsigned owned = NOwned(page, rec, comp);
    if (owned) {
      if (slot_no >= n_slots) return bad("more owner records than directory slots");
      const size_t slot_rec = Get16(page, static_cast<size_t>(SlotPos(page_size, slot_no)));
      if (slot_rec != rec) {
        return bad("slot " + std::to_string(slot_no) + " points to " + std::to_string(slot_rec) +
                   " but the owner is " + std::to_string(rec));
      }
      if (owned != since_owner) {
        return bad("record " + std::to_string(rec) + " owns " + std::to_string(owned) + " but " +
                   std::to_string(since_owner) + " records precede it in its slot");
      }
      const bool first = slot_no == 0, last = slot_no + 1 == n_slots;
      if (first ? owned != 1 : last ? owned > kMaxOwned : (owned < kMinOwned || owned > kMaxOwned)) {
        return bad("slot " + std::to_string(slot_no) + " owns " + std::to_string(owned) + " records");
      }
      slot_no++;
      since_owner = 0;
    }
    if (rec == supremum) break;
    if (rec != infimum) n_recs++;
    const size_t next = next_of(rec);
    if (next != supremum && !in_heap(next)) {
      return bad("record " + std::to_string(rec) + " points to " + std::to_string(next) +
                 ", outside the heap");
    }
    rec = next;
  }
  if (!NOwned(page, supremum, comp)) return bad("the supremum owns nothing");
  if (slot_no != n_slots)
    return bad(std::to_string(slot_no) + " owners for " + std::to_string(n_slots) + " slots");
  if (n_recs != Get16(page, kPageNRecs)) {
    return bad("PAGE_N_RECS " + std::to_string(Get16(page, kPageNRecs)) + " but " + std::to_string(n_recs) +
               " user records are linked");
  }
  // The free list holds every other heap number.
  size_t free = Get16(page, kPageFree);
  for (size_t steps = 0; free != 0; steps++) {
    if (steps > n_heap) return bad("the PAGE_FREE list is longer than PAGE_N_HEAP (cycle?)");
    if (!in_heap(free)) return bad("PAGE_FREE list entry " + std::to_string(free) + " outside the heap");
    XBAK_RETURN_IF_ERROR(mark(free, "free"));
    free = next_of(free);
  }
  const size_t missing = static_cast<size_t>(std::count(seen.begin(), seen.end(), false));
  if (missing) return bad(std::to_string(missing) + " heap numbers are neither linked nor free");
  return Status::Ok();
}

}  // namespace xbak::innodb
