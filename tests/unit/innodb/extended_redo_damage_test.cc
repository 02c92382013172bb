// The EXTENDED redo applier on bad input: malformed records refused by
// name, damaged pages found by CheckIndexPage, and random bodies on random
// pages that never crash it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "extended_redo_test_util.h"
#include "xbak/innodb/extended_redo.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using namespace extended_redo_test;

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
  util::StoreBE16(q.data() + 24, 2);
  Bytes ins = {6, 0x0b, 0x10, 0, 0, 1, 2};
  EXPECT_EQ(ApplyExtendedRecord(q.data(), q.size(), ins.data(), ins.size()).code(), ErrorCode::kCorrupt);
  Bytes del = {9, 0, 2, 12};
  EXPECT_EQ(ApplyExtendedRecord(q.data(), q.size(), del.data(), del.size()).code(), ErrorCode::kCorrupt);
  q = p;
  util::StoreBE32(q.data() + 4, 2);
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
  util::StoreBE16(q.data() + kNRecs, 9);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  q[m.List()[3] - 5] ^= 1;  // n_owned
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  util::StoreBE16(q.data() + kNHeap, 0x8000 | 5);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  util::StoreBE16(q.data() + m.List()[5] - 2, 0x3000);
  EXPECT_FALSE(CheckIndexPage(q.data(), q.size()).ok());
  q = p;
  util::StoreBE16(q.data() + kLevel, 1);  // leaf records on a non-leaf page
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
