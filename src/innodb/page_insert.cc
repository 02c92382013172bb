// INSERT_HEAP_* / INSERT_REUSE_* redo records applied to an index page, as
// page0cur.cc page_apply_insert_redundant / _dynamic do (index_page.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "index_page.h"

namespace xbak::innodb::index_page {

// ---- INSERT_HEAP_REDUNDANT / INSERT_REUSE_REDUNDANT ----------------------------------
// Long on purpose (as InsertDynamic): it follows page_apply_insert_redundant
// check by check and write by write, in the server's order, because that
// order decides which message a bad record gets and which bytes overlapping
// copies leave; cut into helpers, the correspondence could no longer be read
// against the server's code.
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
  util::StoreBE16(ins - 4, static_cast<uint16_t>((util::LoadBE16(ins - 4) & ~0x7feu) | (n_fields << 1)));
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
    util::StoreBE16(ins - 5, static_cast<uint16_t>((util::LoadBE16(ins - 5) & 7u) | (fheap_no << 3)));
    std::memcpy(page + kPageFree, page + free_rec - 2, 2);
  } else {
    if (heap_top + static_cast<int64_t>(rec_size) > last_slot) {
      return Corrupt(what, "a " + std::to_string(rec_size) + "-byte record does not fit the heap");
    }
    util::StoreBE16(ins - 5, static_cast<uint16_t>((util::LoadBE16(ins - 5) & 7u) | (uint32_t{h} << 3)));
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
// Long on purpose: page_apply_insert_dynamic step by step (see InsertRedundant).
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

}  // namespace xbak::innodb::index_page
