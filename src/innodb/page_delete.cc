// DELETE_ROW_FORMAT_* redo records applied to an index page, as page0cur.cc
// page_apply_delete_redundant / _dynamic do (index_page.h).
#include <cstring>

#include "index_page.h"

namespace xbak::innodb::index_page {

// ---- DELETE_ROW_FORMAT_REDUNDANT / DELETE_ROW_FORMAT_DYNAMIC ---------------------------
namespace {
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

}  // namespace

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

}  // namespace xbak::innodb::index_page
