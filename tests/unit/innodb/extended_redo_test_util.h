// What the EXTENDED redo tests share: records encoded the way the server
// writes them, pages to apply them to, and a model of an index page's
// records to check the result against (see extended_redo_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "xbak/innodb/extended_redo.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb::extended_redo_test {

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

inline uint16_t U16(const Bytes& p, size_t off) { return util::LoadBE16(p.data() + off); }
inline size_t Slot(size_t page_size, size_t i) { return page_size - 8 - 2 * (i + 1); }

// mlog_encode_varint.
inline void Varint(Bytes& b, uint32_t v) {
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

inline Bytes NewPage(size_t size, uint8_t fill = 0, uint32_t page_no = 5) {
  Bytes p(size, fill);
  util::StoreBE32(p.data() + 4, page_no);
  return p;
}

inline Status Apply(Bytes& page, const Bytes& body) {
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
inline Rec RedundantRec(const std::vector<Bytes>& fields) {
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
inline Rec CompactRec(unsigned k, size_t n = 12) {
  Rec r;
  r.hdr = {uint8_t(n), 0x00};
  for (size_t i = 0; i < n; i++) r.data.push_back(uint8_t(i < 4 ? (k >> (8 * (3 - i))) : 0x40 + i));
  return r;
}

inline Rec OldRec(unsigned k) {
  return RedundantRec({{uint8_t(k >> 24), uint8_t(k >> 16), uint8_t(k >> 8), uint8_t(k)},
                       Bytes(6, 0x11),
                       Bytes(3, uint8_t(k))});
}

inline void ExpectRecordIs(const Bytes& page, size_t rec, const Rec& r, size_t fixed) {
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

}  // namespace xbak::innodb::extended_redo_test
