// Tests for the EXTENDED redo applier. The records are encoded here the way
// the server writes them (page0cur.cc page_cur_insert_rec_low +
// mtr_t::page_insert, page_cur_delete_rec + mtr_t::page_delete), including
// the choice of hdr_c/data_c bytes shared with the predecessor record, and the
// expected page bytes are derived from page0page.cc page_create_low,
// trx0undo.cc trx_undo_page_init and the page_apply_* functions.
#include "xbak/innodb/extended_redo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "extended_redo_test_util.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using namespace extended_redo_test;

TEST(ExtendedRedo, InitDynamicWritesPageCreateLowBytes) {
  for (size_t size : {4096u, 16384u, 65536u}) {
    Bytes p = NewPage(size, 0xaa);
    ASSERT_TRUE(Apply(p, {1}).ok());
    EXPECT_EQ(U16(p, 24), 17855);  // FIL_PAGE_INDEX
    EXPECT_EQ(U16(p, kNDirSlots), 2);
    EXPECT_EQ(U16(p, kHeapTop), 120);
    EXPECT_EQ(U16(p, kNHeap), 0x8002);
    EXPECT_EQ(p[kDirection], 5);  // PAGE_NO_DIRECTION
    for (size_t i : {kFree, kGarbage, kLastInsert, kNDirection, kNRecs}) EXPECT_EQ(U16(p, i), 0) << i;
    EXPECT_EQ(p[50], 0);  // PAGE_INSTANT
    for (size_t i = 56; i < 64; i++) EXPECT_EQ(p[i], 0) << "PAGE_MAX_TRX_ID " << i;
    // PAGE_LEVEL, PAGE_INDEX_ID and the segment headers are left to later WRITEs.
    for (size_t i = 64; i < 94; i++) EXPECT_EQ(p[i], 0xaa) << i;
    const Bytes inf_sup = {0x01, 0x00, 0x02, 0x00, 0x0d, 'i', 'n', 'f', 'i', 'm', 'u', 'm', 0,
                           0x01, 0x00, 0x0b, 0x00, 0x00, 's', 'u', 'p', 'r', 'e', 'm', 'u', 'm'};
    EXPECT_TRUE(std::equal(inf_sup.begin(), inf_sup.end(), p.begin() + 94));
    EXPECT_EQ(U16(p, size - 10), 99);
    EXPECT_EQ(U16(p, size - 12), 112);
    for (size_t i = 120; i < size - 12; i++) ASSERT_EQ(p[i], 0) << i;
    for (size_t i = size - 8; i < size; i++) EXPECT_EQ(p[i], 0xaa) << "trailer " << i;
    EXPECT_EQ(PageNo(p.data()), 5u);
    EXPECT_PAGE_OK(p);
  }
}

TEST(ExtendedRedo, InitRedundantWritesPageCreateLowBytes) {
  Bytes p = NewPage(16384, 0x55);
  ASSERT_TRUE(Apply(p, {0}).ok());
  EXPECT_EQ(U16(p, 24), 17855);
  EXPECT_EQ(U16(p, kNDirSlots), 2);
  EXPECT_EQ(U16(p, kHeapTop), 125);
  EXPECT_EQ(U16(p, kNHeap), 2);
  EXPECT_EQ(p[kDirection], 5);
  const Bytes inf_sup = {0x08, 0x01, 0x00, 0x00, 0x03, 0x00, 0x74, 'i', 'n', 'f', 'i', 'm', 'u', 'm', 0, 0x09,
                         0x01, 0x00, 0x08, 0x03, 0x00, 0x00, 's',  'u', 'p', 'r', 'e', 'm', 'u', 'm', 0};
  EXPECT_TRUE(std::equal(inf_sup.begin(), inf_sup.end(), p.begin() + 94));
  EXPECT_EQ(U16(p, 16384 - 10), 101);
  EXPECT_EQ(U16(p, 16384 - 12), 116);
  for (size_t i = 125; i < 16384 - 12; i++) ASSERT_EQ(p[i], 0) << i;
  for (size_t i = 64; i < 94; i++) EXPECT_EQ(p[i], 0x55) << i;
  EXPECT_PAGE_OK(p);
}

// ---- UNDO_INIT / UNDO_APPEND ----------------------------------------------------------------
TEST(ExtendedRedo, UndoInitAndAppendLayout) {
  Bytes p = NewPage(16384, 0x77);
  ASSERT_TRUE(Apply(p, {2}).ok());
  EXPECT_EQ(U16(p, 24), 2);                               // FIL_PAGE_UNDO_LOG
  EXPECT_EQ(U16(p, 38), 0);                               // TRX_UNDO_PAGE_TYPE
  EXPECT_EQ(U16(p, 40), 56);                              // TRX_UNDO_PAGE_START
  EXPECT_EQ(U16(p, 42), 56);                              // TRX_UNDO_PAGE_FREE
  EXPECT_EQ(util::LoadBE32(p.data() + 44), 0xffffffffu);  // list node prev page
  EXPECT_EQ(U16(p, 48), 0);
  EXPECT_EQ(util::LoadBE32(p.data() + 50), 0xffffffffu);  // next page
  EXPECT_EQ(U16(p, 54), 0);
  for (size_t i = 56; i < 86; i++) EXPECT_EQ(p[i], 0x77) << "segment header " << i;
  for (size_t i = 86; i < 16384 - 8; i++) ASSERT_EQ(p[i], 0) << i;
  for (size_t i = 16384 - 8; i < 16384; i++) EXPECT_EQ(p[i], 0x77);

  ASSERT_TRUE(Apply(p, {3, 0xa1, 0xa2, 0xa3, 0xa4}).ok());
  EXPECT_EQ(U16(p, 42), 56 + 4 + 4);
  EXPECT_EQ(U16(p, 56), 64);  // next record pointer = the new free
  EXPECT_EQ(p[58], 0xa1);
  EXPECT_EQ(p[61], 0xa4);
  EXPECT_EQ(U16(p, 62), 56);  // back pointer to the record start
  ASSERT_TRUE(Apply(p, {3, 1, 2, 3}).ok());
  EXPECT_EQ(U16(p, 42), 64 + 7);
  EXPECT_EQ(U16(p, 64), 71);
  EXPECT_EQ(U16(p, 69), 64);

  EXPECT_EQ(Apply(p, {3, 1, 2}).code(), ErrorCode::kCorrupt);  // too short
  util::StoreBE16(p.data() + 42, 16384 - 20);
  EXPECT_EQ(Apply(p, {3, 1, 2, 3, 4, 5, 6}).code(), ErrorCode::kCorrupt);  // does not fit
  util::StoreBE16(p.data() + 42, 40);
  EXPECT_EQ(Apply(p, {3, 1, 2, 3}).code(), ErrorCode::kCorrupt);  // free below the header
}

// ---- COMPACT inserts, splits, deletes, reuse ----------------------------------------
TEST(ExtendedRedo, DynamicFirstInsertExactBytes) {
  Model m(16384, true);
  Rec r = CompactRec(1);
  ASSERT_TRUE(m.Insert(99, r).ok());
  Bytes& p = m.page();
  const size_t rec = 120 + 2 + 5;
  EXPECT_EQ(U16(p, kLastInsert), rec);
  EXPECT_EQ(U16(p, kHeapTop), rec + 12);
  EXPECT_EQ(U16(p, kNHeap), 0x8003);
  EXPECT_EQ(U16(p, kNRecs), 1);
  EXPECT_EQ(p[kDirection], 5);
  EXPECT_EQ(U16(p, kNDirection), 0);
  EXPECT_EQ(p[rec - 5], 0x00);         // info bits 0, n_owned 0
  EXPECT_EQ(U16(p, rec - 4), 2 << 3);  // heap_no 2, REC_STATUS_ORDINARY
  EXPECT_EQ(uint16_t(rec + U16(p, rec - 2)), 112);
  EXPECT_EQ(uint16_t(99 + U16(p, 97)), rec);
  EXPECT_EQ(p[112 - 5] & 15, 2);  // the supremum owns it
  ExpectRecordIs(p, rec, r, 5);
  EXPECT_PAGE_OK(p);

  // Appending after it: PAGE_RIGHT, and data bytes shared with the predecessor.
  Rec r2 = CompactRec(2);
  ASSERT_TRUE(m.Insert(rec, r2).ok());
  EXPECT_GT(m.last_data_c_, 0u);
  EXPECT_EQ(m.last_hdr_c_, 0u);  // the predecessor's header lies below the heap bottom limit
  EXPECT_EQ(p[kDirection], 2);
  EXPECT_EQ(U16(p, kNDirection), 1);
  ExpectRecordIs(p, U16(p, kLastInsert), r2, 5);
  EXPECT_PAGE_OK(p);
}

TEST(ExtendedRedo, DynamicInsertsSplitSlots) {
  Model m(16384, true);
  Bytes& p = m.page();
  size_t prev = 99;
  std::vector<Rec> recs;
  for (unsigned k = 1; k <= 40; k++) {
    recs.push_back(CompactRec(k, 8 + k % 5));
    ASSERT_TRUE(m.Insert(prev, recs.back()).ok()) << k;
    prev = U16(p, kLastInsert);
    EXPECT_PAGE_OK(p);
    if (k == 7) {
      EXPECT_EQ(U16(p, kNDirSlots), 2);
      EXPECT_EQ(p[112 - 5] & 15, 8);
    }
    if (k == 8) {
      // The supremum's slot owned 9: the first 4 records got a new slot.
      EXPECT_EQ(U16(p, kNDirSlots), 3);
      const std::vector<size_t> list = m.List();
      EXPECT_EQ(U16(p, Slot(16384, 1)), list[3]);
      EXPECT_EQ(p[list[3] - 5] & 15, 4);
      EXPECT_EQ(U16(p, Slot(16384, 2)), 112);
      EXPECT_EQ(p[112 - 5] & 15, 5);
    }
  }
  EXPECT_EQ(U16(p, kNRecs), 40);
  EXPECT_EQ(p[kDirection], 2);
  EXPECT_EQ(U16(p, kNDirection), 39);
  const std::vector<size_t> list = m.List();
  ASSERT_EQ(list.size(), 40u);
  for (size_t i = 0; i < 40; i++) ExpectRecordIs(p, list[i], recs[i], 5);
  // Inserting elsewhere resets the direction; then descending inserts in
  // front of the last inserted record count as PAGE_LEFT.
  ASSERT_TRUE(m.Insert(99, CompactRec(0)).ok());
  EXPECT_EQ(p[kDirection], 5);
  EXPECT_EQ(U16(p, kNDirection), 0);
  for (int i = 1; i <= 3; i++) {
    const size_t first = m.List()[0];
    ASSERT_TRUE(m.Insert(99, CompactRec(0)).ok());
    EXPECT_EQ(m.Next(U16(p, kLastInsert)), first);
    EXPECT_EQ(p[kDirection], 1);
    EXPECT_EQ(U16(p, kNDirection), i);
  }
  // Next to neither the last insert nor its successor: no direction.
  ASSERT_TRUE(m.Insert(m.List()[20], CompactRec(21)).ok());
  EXPECT_EQ(p[kDirection], 5);
  EXPECT_EQ(U16(p, kNDirection), 0);
  EXPECT_PAGE_OK(p);
}

TEST(ExtendedRedo, DynamicDeleteFreeReuseAndHeapTop) {
  Model m(16384, true);
  Bytes& p = m.page();
  size_t prev = 99;
  for (unsigned k = 1; k <= 12; k++) {
    ASSERT_TRUE(m.Insert(prev, CompactRec(k)).ok());
    prev = U16(p, kLastInsert);
  }
  EXPECT_PAGE_OK(p);
  std::vector<size_t> list = m.List();
  // Delete the 3rd record (not the heap top): it goes on PAGE_FREE.
  const size_t victim = list[2];
  const uint16_t heap_top = U16(p, kHeapTop);
  ASSERT_TRUE(m.Delete(list[1], 2, 12).ok());
  EXPECT_EQ(U16(p, kFree), victim);
  EXPECT_EQ(U16(p, kGarbage), 2 + 5 + 12);
  EXPECT_EQ(U16(p, kHeapTop), heap_top);
  EXPECT_EQ(U16(p, kLastInsert), 0);
  EXPECT_EQ(U16(p, kNRecs), 11);
  EXPECT_EQ(U16(p, victim - 2), 0);  // end of the free list
  for (size_t i = 0; i < 12; i++) EXPECT_EQ(p[victim + i], 0) << i;
  EXPECT_EQ(m.Next(list[1]), list[3]);
  EXPECT_PAGE_OK(p);

  // Re-insert a smaller record there: INSERT_REUSE_DYNAMIC with a shift.
  Rec small = CompactRec(3, 10);
  small.hdr = {10};
  ASSERT_TRUE(m.Insert(list[1], small, 7, 12).ok());
  const size_t ins = U16(p, kLastInsert);
  EXPECT_EQ(ins, victim - 7 + 6);  // starts where the free record's header started
  EXPECT_EQ(U16(p, kFree), 0);
  EXPECT_EQ(U16(p, kGarbage), 19 - 16);
  EXPECT_EQ(U16(p, ins - 4) >> 3, 4);  // the heap number of the freed record
  EXPECT_EQ(p[kDirection], 5);
  ExpectRecordIs(p, ins, small, 5);
  EXPECT_PAGE_OK(p);

  // Deleting the most recently allocated record lowers PAGE_HEAP_TOP.
  list = m.List();
  const size_t top_rec = list.back();
  ASSERT_EQ(U16(p, top_rec - 4) >> 3, 13);
  const uint16_t garbage = U16(p, kGarbage);
  ASSERT_TRUE(m.Delete(list[list.size() - 2], 2, 12).ok());
  EXPECT_EQ(U16(p, kHeapTop), top_rec - 7);
  EXPECT_EQ(U16(p, kNHeap), 0x8000 | 13);
  EXPECT_EQ(U16(p, kGarbage), garbage);
  EXPECT_EQ(U16(p, kFree), 0);
  for (size_t i = top_rec - 7; i < top_rec + 12; i++) EXPECT_EQ(p[i], 0) << i;
  EXPECT_PAGE_OK(p);
}

TEST(ExtendedRedo, DynamicDeletesBalanceAndMergeSlots) {
  Model m(16384, true);
  Bytes& p = m.page();
  size_t prev = 99;
  for (unsigned k = 1; k <= 30; k++) {
    ASSERT_TRUE(m.Insert(prev, CompactRec(k)).ok());
    prev = U16(p, kLastInsert);
  }
  const uint16_t slots_before = U16(p, kNDirSlots);
  ASSERT_GE(slots_before, 5);
  // Repeatedly delete the first user record: slot 1 underflows and borrows
  // from or merges with slot 2.
  for (int i = 0; i < 26; i++) {
    ASSERT_TRUE(m.Delete(99, 2, 12).ok()) << i;
    EXPECT_PAGE_OK(p);
  }
  EXPECT_EQ(U16(p, kNRecs), 4);
  EXPECT_LT(U16(p, kNDirSlots), slots_before);
  // Delete the rest from the end (the supremum's slot is never balanced).
  while (U16(p, kNRecs) > 0) {
    const std::vector<size_t> list = m.List();
    ASSERT_TRUE(m.Delete(list.size() > 1 ? list[list.size() - 2] : 99, 2, 12).ok());
    EXPECT_PAGE_OK(p);
  }
  EXPECT_EQ(m.Delete(99, 2, 12).code(), ErrorCode::kCorrupt);  // empty page
}

// ---- ROW_FORMAT=REDUNDANT ------------------------------------------------------------------
TEST(ExtendedRedo, RedundantInsertDeleteReuse) {
  Model m(16384, false);
  Bytes& p = m.page();
  size_t prev = 101;
  std::vector<Rec> recs;
  for (unsigned k = 1; k <= 20; k++) {
    recs.push_back(OldRec(k));
    ASSERT_TRUE(m.Insert(prev, recs.back()).ok()) << k;
    prev = U16(p, kLastInsert);
    EXPECT_PAGE_OK(p);
  }
  const size_t first = m.List()[0];
  EXPECT_EQ(first, 125 + 3 + 6);
  EXPECT_EQ(U16(p, first - 5) >> 3, 2);            // heap_no
  EXPECT_EQ((U16(p, first - 4) & 0x7fe) >> 1, 3);  // n_fields
  EXPECT_EQ(p[first - 3] & 1, 1);                  // 1-byte offsets
  EXPECT_GT(m.last_hdr_c_, 0u);                    // shared field-end bytes
  // Splits at the 8th, 12th, 16th and 20th insert into the supremum's slot.
  EXPECT_EQ(U16(p, kNDirSlots), 6);
  std::vector<size_t> list = m.List();
  for (size_t i = 0; i < list.size(); i++) ExpectRecordIs(p, list[i], recs[i], 6);

  // Delete a middle record, then reuse its space.
  const size_t victim = list[5];
  ASSERT_TRUE(m.Delete(list[4], 0, 0).ok());
  EXPECT_EQ(U16(p, kFree), victim);
  EXPECT_EQ(U16(p, kGarbage), 9 + 13);
  EXPECT_EQ(U16(p, victim - 2), 0);
  EXPECT_PAGE_OK(p);
  Rec again = OldRec(6);
  again.info_bits = 0x20;  // delete-marked
  ASSERT_TRUE(m.Insert(list[4], again, 9, 13).ok());
  EXPECT_EQ(U16(p, kLastInsert), victim);
  EXPECT_EQ(U16(p, kFree), 0);
  EXPECT_EQ(U16(p, kGarbage), 0);
  EXPECT_EQ(p[victim - 6] & 0xf0, 0x20);
  ExpectRecordIs(p, victim, again, 6);
  EXPECT_PAGE_OK(p);

  // Delete everything from the front.
  while (U16(p, kNRecs)) {
    ASSERT_TRUE(m.Delete(101, 0, 0).ok());
    EXPECT_PAGE_OK(p);
  }
  EXPECT_EQ(U16(p, kNDirSlots), 2);
}

// ---- Malformed input ---------------------------------------------------------------------------

}  // namespace
}  // namespace xbak::innodb
