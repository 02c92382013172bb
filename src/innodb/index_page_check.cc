// CheckIndexPage (extended_redo.h): the structural checks of an index page.
#include <algorithm>
#include <string>

#include "index_page.h"
#include "xbak/innodb/extended_redo.h"

namespace xbak::innodb {
namespace {

using namespace index_page;

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

// Long on purpose: one flat list of checks, each with its own message, in the
// order the page's structure is walked (header, directory, record chain).
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
