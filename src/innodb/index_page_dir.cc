// The page directory's maintenance, as page0page.cc does it (index_page.h).
#include <cstring>

#include "index_page.h"

namespace xbak::innodb::index_page {

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

}  // namespace xbak::innodb::index_page
