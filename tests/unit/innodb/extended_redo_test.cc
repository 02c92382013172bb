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
#include <memory>
#include <random>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kPageHeader = 38;
constexpr size_t kNDirSlots = kPageHeader + 0;
constexpr size_t kHeapTop = kPageHeader + 2;
constexpr size_t kNHeap = kPageHeader + 4;
constexpr size_t kFree = kPageHeader + 6;
constexpr size_t kGarbage = kPageHeader + 8;
constexpr size_t kLastInsert = kPageHeader + 10;
constexpr size_t kDirection = kPageHeader + 13;
constexpr size_t kNDirection = kPageHeader + 14;
constexpr size_t kNRecs = kPageHeader + 16;
constexpr size_t kLevel = kPageHeader + 26;

uint16_t U16(const Bytes& p, size_t off) { return LoadBE16(p.data() + off); }
size_t Slot(size_t page_size, size_t i) { return page_size - 8 - 2 * (i + 1); }

// mlog_encode_varint.
void Varint(Bytes& b, uint32_t v) {
  if (v < 0x80) {
    b.push_back(uint8_t(v));
  } else if (v < 0x4080) {
    v -= 0x80;
    b.push_back(uint8_t(0x80 | v >> 8));
    b.push_back(uint8_t(v));
  } else {
    v -= 0x4080;
    b.push_back(uint8_t(0xc0 | v >> 16));
    b.push_back(uint8_t(v >> 8));
    b.push_back(uint8_t(v));
  }
}

Bytes NewPage(size_t size, uint8_t fill = 0, uint32_t page_no = 5) {
  Bytes p(size, fill);
  StoreBE32(p.data() + 4, page_no);
  return p;
}

Status Apply(Bytes& page, const Bytes& body) {
  return ApplyExtendedRecord(page.data(), page.size(), body.data(), body.size());
}

// ---- A model of the server's insert/delete encoders ---------------------------------
// A record as the server builds it: variable header bytes (everything before
// the fixed 5 or 6 bytes, in page order) and data bytes.
struct Rec {
  Bytes hdr;
  Bytes data;
  uint8_t info_bits = 0;  // REC_INFO_MIN_REC_FLAG 0x10 / DELETED 0x20
};

// ROW_FORMAT=REDUNDANT record with 1-byte offsets: hdr = field end offsets,
// stored backwards before the fixed header.
Rec RedundantRec(const std::vector<Bytes>& fields) {
  Rec r;
  size_t end = 0;
  for (const Bytes& f : fields) {
    end += f.size();
    r.hdr.insert(r.hdr.begin(), uint8_t(end));
    r.data.insert(r.data.end(), f.begin(), f.end());
  }
  return r;
}

class Model {
 public:
  Model(size_t size, bool comp) : comp_(comp), page_(NewPage(size)) {
    EXPECT_TRUE(Apply(page_, {uint8_t(comp ? 1 : 0)}).ok());
  }
  Bytes& page() { return page_; }
  size_t infimum() const { return comp_ ? 99 : 101; }
  size_t supremum() const { return comp_ ? 112 : 116; }
  size_t extra() const { return comp_ ? 5 : 6; }
  size_t Next(size_t rec) const {
    const uint16_t v = U16(page_, rec - 2);
    return comp_ ? (rec + v) & (page_.size() - 1) : v;
  }
  // The user records in list order.
  std::vector<size_t> List() const {
    std::vector<size_t> out;
    for (size_t r = Next(infimum()); r != supremum() && out.size() < 10000; r = Next(r)) out.push_back(r);
    return out;
  }
  size_t ExtraSize(const Rec& r) const { return r.hdr.size() + extra(); }

  // Encodes the insert of `r` after `prev` the way page_cur_insert_rec_low
  // does and applies it. The space comes from PAGE_FREE when its head record
  // (of `free_extra`+`free_data` bytes, known to the test) is large enough.
  Status Insert(size_t prev, const Rec& r, size_t free_extra = 0, size_t free_data = 0) {
    const size_t extra_size = ExtraSize(r);
    const size_t free_rec = U16(page_, kFree);
    const bool reuse = free_rec && free_extra + free_data >= extra_size + r.data.size();
    const size_t insert_buf = reuse ? free_rec - free_extra : U16(page_, kHeapTop);
    // Common header bytes: compare backwards from the byte before the fixed
    // header, not below the heap bottom.
    size_t hdr_c = 0;
    const size_t heap_bot = comp_ ? 120 : 125;
    if ((!comp_ || extra_size > extra()) && prev >= extra_size + heap_bot + extra()) {
      const size_t c_start = prev - extra_size;
      ptrdiff_t ri = ptrdiff_t(r.hdr.size()) - 1;
      size_t c = prev - extra() - 1;
      while (ri >= 0 && r.hdr[ri] == page_[c]) {
        if (c == c_start) break;
        c--;
        ri--;
      }
      hdr_c = r.hdr.size() - 1 - ri;
    }
    // Common data bytes, not reaching into the space being written.
    size_t c_end = prev + r.data.size();
    if (prev <= insert_buf && c_end > insert_buf) {
      c_end = insert_buf;
    } else {
      c_end = std::min(c_end, page_.size() - 8 - 2 * size_t(U16(page_, kNDirSlots)));
    }
    size_t data_c = 0;
    while (prev + data_c != c_end && page_[prev + data_c] == r.data[data_c]) data_c++;

    Bytes b;
    if (comp_) {
      b.push_back(reuse ? 7 : 6);
      Varint(b, uint32_t(prev - 99));
      if (reuse) {
        const ptrdiff_t shift = ptrdiff_t(extra_size) - ptrdiff_t(free_extra);
        Varint(b, uint32_t(shift < 0 ? (-shift) << 1 | 1 : shift << 1));
      }
      Varint(b, uint32_t((r.hdr.size() - hdr_c) << 3 | r.info_bits >> 4));
      Varint(b, uint32_t(hdr_c));
      Varint(b, uint32_t(data_c));
    } else {
      b.push_back(reuse ? 5 : 4);
      Varint(b, uint32_t(prev - 101));
      const size_t n_fields_s = r.hdr.size() << 1 | 1;  // 1-byte offsets
      Varint(b, uint32_t((n_fields_s - 2) << 2 | r.info_bits >> 4));
      Varint(b, uint32_t(hdr_c));
      Varint(b, uint32_t(data_c));
    }
    b.insert(b.end(), r.hdr.begin(), r.hdr.end() - hdr_c);
    b.insert(b.end(), r.data.begin() + data_c, r.data.end());
    last_hdr_c_ = hdr_c;
    last_data_c_ = data_c;
    return Apply(page_, b);
  }

  // mtr_t::page_delete of the successor of `prev`.
  Status Delete(size_t prev, size_t hdr_size, size_t data_size) {
    Bytes b;
    if (comp_) {
      b.push_back(9);
      Varint(b, uint32_t(prev - 99));
      Varint(b, uint32_t(hdr_size));
      Varint(b, uint32_t(data_size));
    } else {
      b.push_back(8);
      Varint(b, uint32_t(prev - 101));
    }
    return Apply(page_, b);
  }

  size_t last_hdr_c_ = 0;
  size_t last_data_c_ = 0;

 private:
  bool comp_;
  Bytes page_;
};

// A COMPACT record with a 2-byte variable header (a length byte and a null
// bitmap) and `n` data bytes derived from key k.
Rec CompactRec(unsigned k, size_t n = 12) {
  Rec r;
  r.hdr = {uint8_t(n), 0x00};
  for (size_t i = 0; i < n; i++) r.data.push_back(uint8_t(i < 4 ? (k >> (8 * (3 - i))) : 0x40 + i));
  return r;
}

Rec OldRec(unsigned k) {
  return RedundantRec({{uint8_t(k >> 24), uint8_t(k >> 16), uint8_t(k >> 8), uint8_t(k)},
                       Bytes(6, 0x11),
                       Bytes(3, uint8_t(k))});
}

void ExpectRecordIs(const Bytes& page, size_t rec, const Rec& r, size_t fixed) {
  ASSERT_GE(rec, r.hdr.size() + fixed);
  EXPECT_TRUE(std::equal(r.hdr.begin(), r.hdr.end(), page.begin() + (rec - fixed - r.hdr.size())));
  EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), page.begin() + rec));
}

#define EXPECT_PAGE_OK(page)                                  \
  do {                                                        \
    Status _s = CheckIndexPage((page).data(), (page).size()); \
    EXPECT_TRUE(_s.ok()) << _s.message();                     \
  } while (0)

// ---- INIT_ROW_FORMAT_* --------------------------------------------------------------------
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
  EXPECT_EQ(U16(p, 24), 2);                         // FIL_PAGE_UNDO_LOG
  EXPECT_EQ(U16(p, 38), 0);                         // TRX_UNDO_PAGE_TYPE
  EXPECT_EQ(U16(p, 40), 56);                        // TRX_UNDO_PAGE_START
  EXPECT_EQ(U16(p, 42), 56);                        // TRX_UNDO_PAGE_FREE
  EXPECT_EQ(LoadBE32(p.data() + 44), 0xffffffffu);  // list node prev page
  EXPECT_EQ(U16(p, 48), 0);
  EXPECT_EQ(LoadBE32(p.data() + 50), 0xffffffffu);  // next page
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
  StoreBE16(p.data() + 42, 16384 - 20);
  EXPECT_EQ(Apply(p, {3, 1, 2, 3, 4, 5, 6}).code(), ErrorCode::kCorrupt);  // does not fit
  StoreBE16(p.data() + 42, 40);
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
TEST(ExtendedRedo, RejectsMalformedRecords) {
  Model m(16384, true);
  Bytes& p = m.page();
  ASSERT_TRUE(m.Insert(99, CompactRec(1)).ok());
  const Bytes before = p;
  auto code = [&](const Bytes& b) { return Apply(p, b).code(); };
  EXPECT_EQ(code({}), ErrorCode::kCorrupt);
  EXPECT_EQ(code({10}), ErrorCode::kUnsupported);  // TRIM_PAGES
  EXPECT_EQ(code({11}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({0xff, 1, 2}), ErrorCode::kUnsupported);
  EXPECT_EQ(code({1, 0}), ErrorCode::kCorrupt);  // INIT with arguments
  EXPECT_EQ(code({2, 0}), ErrorCode::kCorrupt);
  EXPECT_EQ(code({6}), ErrorCode::kCorrupt);                          // no arguments
  EXPECT_EQ(code({6, 0}), ErrorCode::kCorrupt);                       // prev only
  EXPECT_EQ(code({6, 0, 0x10, 0}), ErrorCode::kCorrupt);              // no data_c
  EXPECT_EQ(code({6, 0xe0, 0, 0, 0, 0, 0, 0}), ErrorCode::kCorrupt);  // 4-byte varint
  Bytes far = {6};
  Varint(far, 17000);
  far.insert(far.end(), {0x10, 0, 0, 1, 2});
  Status st = Apply(p, far);
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
  EXPECT_NE(st.message().find("INSERT_HEAP_DYNAMIC"), std::string::npos) << st.message();
  EXPECT_EQ(code({9, 0}), ErrorCode::kCorrupt);
  EXPECT_EQ(code({9, 0, 2}), ErrorCode::kCorrupt);
  EXPECT_EQ(code({9, 0, 2, 12, 0}), ErrorCode::kCorrupt);       // trailing byte
  EXPECT_EQ(code({8, 0}), ErrorCode::kCorrupt);                 // REDUNDANT delete on a COMPACT page
  EXPECT_EQ(code({4, 0, 0x10, 0, 0, 1}), ErrorCode::kCorrupt);  // REDUNDANT insert on a COMPACT page
  EXPECT_EQ(code({9, 0, 2, 200}), ErrorCode::kCorrupt);         // data size beyond the record
  EXPECT_EQ(p, before);

  // Not an index page; page numbers below 3.
  Bytes q = p;
  StoreBE16(q.data() + 24, 2);
  Bytes ins = {6, 0x0b, 0x10, 0, 0, 1, 2};
  EXPECT_EQ(ApplyExtendedRecord(q.data(), q.size(), ins.data(), ins.size()).code(), ErrorCode::kCorrupt);
  Bytes del = {9, 0, 2, 12};
  EXPECT_EQ(ApplyExtendedRecord(q.data(), q.size(), del.data(), del.size()).code(), ErrorCode::kCorrupt);
  q = p;
  StoreBE32(q.data() + 4, 2);
  EXPECT_EQ(ApplyExtendedRecord(q.data(), q.size(), del.data(), del.size()).code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ApplyExtendedRecord(p.data(), 1000, del.data(), del.size()).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(Apply(p, del).ok());
  EXPECT_PAGE_OK(p);
}

TEST(ExtendedRedo, CheckIndexPageFindsDamage) {
  Model m(16384, true);
  Bytes& p = m.page();
  size_t prev = 99;
  for (unsigned k = 1; k <= 10; k++) {
    ASSERT_TRUE(m.Insert(prev, CompactRec(k)).ok());
    prev = U16(p, kLastInsert);
  }
  EXPECT_PAGE_OK(p);
  Bytes q = p;
  StoreBE16(q.data() + kNRecs, 9);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  q[m.List()[3] - 5] ^= 1;  // n_owned
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  StoreBE16(q.data() + kNHeap, 0x8000 | 5);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  StoreBE16(q.data() + m.List()[5] - 2, 0x3000);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  StoreBE16(q.data() + kLevel, 1);  // leaf records on a non-leaf page
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
}

// ---- Robustness: random input never escapes the buffers ------------------------------------
// Run under the ASan build: every read and write is checked.
TEST(ExtendedRedo, RandomBodiesAndPagesNeverCrash) {
  std::mt19937 rng(12345);
  auto byte = [&] { return uint8_t(rng()); };
  // A few valid pages of both formats to mutate records against.
  std::vector<Bytes> bases;
  for (bool comp : {true, false}) {
    for (size_t size : {4096u, 16384u, 65536u}) {
      Model m(size, comp);
      size_t prev = comp ? 99 : 101;
      for (unsigned k = 1; k <= 25; k++) {
        ASSERT_TRUE(m.Insert(prev, comp ? CompactRec(k) : OldRec(k)).ok());
        prev = U16(m.page(), kLastInsert);
      }
      if (comp) {
        ASSERT_TRUE(m.Delete(m.List()[4], 2, 12).ok());
      } else {
        ASSERT_TRUE(m.Delete(m.List()[4], 0, 0).ok());
      }
      bases.push_back(m.page());
    }
  }
  size_t ok = 0, corrupt = 0, unsupported = 0;
  for (int iter = 0; iter < 60000; iter++) {
    Bytes page = bases[rng() % bases.size()];
    const int mode = iter % 4;
    if (mode == 3) {  // damage the page itself
      for (int i = 0, n = 1 + int(rng() % 8); i < n; i++) page[38 + rng() % (page.size() - 38)] = byte();
    } else if (mode == 2) {
      for (size_t i = 38; i < 120; i++) page[i] = byte();
    }
    Bytes body(1 + rng() % 24);
    for (uint8_t& b : body) b = byte();
    body[0] = uint8_t(rng() % 12);
    if (rng() % 2) {  // plausible small prev offsets reach real records
      body[1 % body.size()] = uint8_t(rng() % 0x80);
    }
    const Bytes before = page;
    // Exact-size heap copies so that ASan sees any overrun.
    std::unique_ptr<uint8_t[]> bp(new uint8_t[body.size()]);
    std::memcpy(bp.get(), body.data(), body.size());
    std::unique_ptr<uint8_t[]> pp(new uint8_t[page.size()]);
    std::memcpy(pp.get(), page.data(), page.size());
    const Status st = ApplyExtendedRecord(pp.get(), page.size(), bp.get(), body.size());
    switch (st.code()) {
      case ErrorCode::kOk:
        ok++;
        break;
      case ErrorCode::kCorrupt:
        corrupt++;
        if (st.message().find("directory") == std::string::npos) {
          ASSERT_EQ(0, std::memcmp(pp.get(), before.data(), before.size())) << st.message();
        }
        break;
      case ErrorCode::kUnsupported:
        unsupported++;
        break;
      default:
        FAIL() << st.message();
    }
    // Keep applying to the result: damaged-but-accepted pages feed later records.
    if (st.ok()) {
      Bytes body2(1 + rng() % 16);
      for (uint8_t& b : body2) b = byte();
      body2[0] = uint8_t(4 + rng() % 6);
      std::unique_ptr<uint8_t[]> bp2(new uint8_t[body2.size()]);
      std::memcpy(bp2.get(), body2.data(), body2.size());
      (void)ApplyExtendedRecord(pp.get(), page.size(), bp2.get(), body2.size());
      (void)CheckIndexPage(pp.get(), page.size());
    }
    (void)CheckIndexPage(pp.get(), page.size());
  }
  EXPECT_GT(ok, 100u);
  EXPECT_GT(corrupt, 1000u);
  EXPECT_GT(unsupported, 100u);
}

}  // namespace
}  // namespace xbak::innodb
