#include "xbak/innodb/page.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "page_test_util.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::innodb {
namespace {

using namespace page_test;

// ---- Flags ---------------------------------------------------------------------

TEST(SpaceFlagsTest, FullCrc32Sizes) {
  const struct {
    uint32_t raw, size;
  } cases[] = {{0x13, 4096}, {0x14, 8192}, {0x15, 16384}, {0x16, 32768}, {0x17, 65536}};
  for (auto c : cases) {
    auto f = DecodeSpaceFlags(c.raw);
    ASSERT_TRUE(f.ok()) << std::hex << c.raw << ": " << f.status().message();
    EXPECT_TRUE(f->full_crc32);
    EXPECT_EQ(f->logical_size, c.size);
    EXPECT_EQ(f->physical_size, c.size);
    EXPECT_FALSE(f->page_compressed);
    EXPECT_FALSE(f->zip());
  }
}

TEST(SpaceFlagsTest, FullCrc32PageCompressed) {
  auto f = DecodeSpaceFlags(0x15 | (kCompressionZlib << 5));  // 0x35
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->page_compressed);
  EXPECT_EQ(f->compression_algo, kCompressionZlib);
  f = DecodeSpaceFlags(0x15 | (kCompressionSnappy << 5));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->compression_algo, kCompressionSnappy);
  EXPECT_FALSE(DecodeSpaceFlags(0x15 | (7u << 5)).ok());  // no algorithm 7
}

TEST(SpaceFlagsTest, OldFormatSizes) {
  // PAGE_SSIZE 0 means 16k in this encoding; 3,4,6,7 are 4k,8k,32k,64k.
  const struct {
    uint32_t raw, size;
  } cases[] = {{0x21, 16384},
               {0x0, 16384},
               {0x1, 16384},
               {0x21 | (3u << 6), 4096},
               {0x21 | (4u << 6), 8192},
               {0x21 | (6u << 6), 32768},
               {0x21 | (7u << 6), 65536}};
  for (auto c : cases) {
    auto f = DecodeSpaceFlags(c.raw);
    ASSERT_TRUE(f.ok()) << std::hex << c.raw << ": " << f.status().message();
    EXPECT_FALSE(f->full_crc32);
    EXPECT_EQ(f->logical_size, c.size) << std::hex << c.raw;
    EXPECT_EQ(f->physical_size, c.size);
  }
  auto dd = DecodeSpaceFlags(0x21 | (1u << 10));  // MySQL 5.6 DATA_DIR bit: ignored
  EXPECT_TRUE(dd.ok());
}

TEST(SpaceFlagsTest, OldFormatZipAndPageCompressed) {
  // ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=1,2,4,8,16 on 16k pages.
  for (uint32_t z = 1; z <= 5; z++) {
    auto f = DecodeSpaceFlags(0x21 | (z << 1));
    ASSERT_TRUE(f.ok()) << z;
    EXPECT_EQ(f->physical_size, 512u << z);
    EXPECT_EQ(f->logical_size, 16384u);
    // KEY_BLOCK_SIZE=16 on 16k pages is still ROW_FORMAT=COMPRESSED (page_zip
    // format, no trailer), though its pages are as large as the logical ones.
    EXPECT_TRUE(f->zip()) << z;
    EXPECT_EQ(f->zip_size, 512u << z);
  }
  // innodb_page_size=4k allows KEY_BLOCK_SIZE 1, 2, 4; 8k allows up to 8.
  for (uint32_t z = 1; z <= 3; z++) {
    auto f = DecodeSpaceFlags(0x21 | (z << 1) | (3u << 6));
    ASSERT_TRUE(f.ok()) << z;
    EXPECT_EQ(f->logical_size, 4096u);
    EXPECT_EQ(f->physical_size, 512u << z);
    EXPECT_TRUE(f->zip()) << z;
  }
  EXPECT_FALSE(DecodeSpaceFlags(0x21 | (4u << 1) | (3u << 6)).ok());  // 8k zip on 4k pages
  EXPECT_TRUE(DecodeSpaceFlags(0x21 | (4u << 1) | (4u << 6)).ok());   // 8k zip on 8k pages
  EXPECT_FALSE(Flags(0x21).zip());
  EXPECT_EQ(Flags(0x29).physical_size, 8192u);  // what KEY_BLOCK_SIZE=8 writes
  auto pc = DecodeSpaceFlags(0x10021);
  ASSERT_TRUE(pc.ok());
  EXPECT_TRUE(pc->page_compressed);
  EXPECT_FALSE(pc->full_crc32);
}

TEST(SpaceFlagsTest, RejectsInvalid) {
  const uint32_t bad[] = {
      0x10,                          // full_crc32 with page size code 0
      0x12,                          // full_crc32 1k
      0x18,                          // full_crc32 code 8
      0x115,                         // full_crc32 with bit 8
      0x20,                          // ATOMIC_BLOBS without POST_ANTELOPE
      0x21 | (5u << 6),              // 16k encoded as 5
      0x21 | (1u << 6),              // 1k pages
      0x21 | (8u << 6),              // code 8
      0x21 | (2u << 11),             // reserved bit (10.1.0-10.1.20 layout)
      0x21 | (1u << 17),             // unknown high bit
      0x21 | (1u << 27),             // memory-only DATA_DIR
      0x1 | (4u << 1),               // zip without ATOMIC_BLOBS
      0x21 | (4u << 1) | (3u << 6),  // 8k zip on 4k pages
      0x21 | (6u << 1) | (7u << 6),  // 32k zip
  };
  for (uint32_t raw : bad) {
    auto f = DecodeSpaceFlags(raw);
    EXPECT_FALSE(f.ok()) << std::hex << raw;
    if (!f.ok()) {
      EXPECT_EQ(f.status().code(), ErrorCode::kCorrupt);
      EXPECT_NE(f.status().message().find("invalid tablespace flags"), std::string::npos);
    }
  }
}

// ---- Helpers ------------------------------------------------------------------------

TEST(PageHelpersTest, IsAllZeroAndFields) {
  std::vector<uint8_t> z(16384 + 5, 0);
  EXPECT_TRUE(IsAllZero(z.data(), z.size()));
  EXPECT_TRUE(IsAllZero(z.data(), 0));
  for (size_t pos : {size_t{0}, size_t{63}, size_t{64}, size_t{8000}, z.size() - 1}) {
    z[pos] = 1;
    EXPECT_FALSE(IsAllZero(z.data(), z.size())) << pos;
    EXPECT_TRUE(IsAllZero(z.data() + pos + 1, z.size() - pos - 1)) << pos;
    z[pos] = 0;
  }
  auto p = MakePage(16384, 42, 0x1122334455667788ull, 99);
  EXPECT_EQ(PageNo(p.data()), 42u);
  EXPECT_EQ(PageLsn(p.data()), 0x1122334455667788ull);
  EXPECT_EQ(PageType(p.data()), kPageTypeIndex);
  EXPECT_EQ(PageSpaceId(p.data()), 99u);
}

TEST(PageHelpersTest, Doublewrite) {
  EXPECT_FALSE(InDoublewriteArea(0, 63, 16384));
  EXPECT_TRUE(InDoublewriteArea(0, 64, 16384));
  EXPECT_TRUE(InDoublewriteArea(0, 191, 16384));
  EXPECT_FALSE(InDoublewriteArea(0, 192, 16384));
  EXPECT_FALSE(InDoublewriteArea(5, 100, 16384));
  EXPECT_TRUE(InDoublewriteArea(0, 256, 4096));
  EXPECT_FALSE(InDoublewriteArea(0, 255, 4096));
  EXPECT_TRUE(InDoublewriteArea(0, 128, 8192));
  EXPECT_TRUE(InDoublewriteArea(0, 64, 65536));
  EXPECT_FALSE(InDoublewriteArea(0, 192, 65536));
  EXPECT_EQ(ExtentPages(32768), 64u);
}

// ---- Synthetic pages, every algorithm ----------------------------------------

class SyntheticTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SyntheticTest, StampedPageIsOk) {
  SpaceFlags f = Flags(GetParam());
  auto p = Stamped(GetParam(), 13);
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kOk) << c.detail;
  EXPECT_TRUE(c.detail.empty());
}

TEST_P(SyntheticTest, FlippedBytesAreCorrupt) {
  SpaceFlags f = Flags(GetParam());
  auto p = Stamped(GetParam(), 13);
  // Positions covered by every checksum variant: the page number, the page
  // type, the payload and its end.
  for (size_t pos :
       {size_t{5}, size_t{24}, size_t{kFilPageData}, size_t{1000}, size_t{f.physical_size - 9}}) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      p[pos] ^= bit;
      PageCheck c = CheckPage(p.data(), f, 13);
      EXPECT_EQ(c.verdict, PageVerdict::kCorrupt)
          << "flags " << std::hex << GetParam() << " pos " << std::dec << pos;
      EXPECT_FALSE(c.detail.empty());
      p[pos] ^= bit;
    }
  }
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
}

TEST_P(SyntheticTest, WrongPageNumberIsCorrupt) {
  SpaceFlags f = Flags(GetParam());
  auto p = Stamped(GetParam(), 12);
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kCorrupt);
  EXPECT_EQ(c.detail, "page number field says 12, expected 13");
}

TEST_P(SyntheticTest, AllZeroIsValid) {
  SpaceFlags f = Flags(GetParam());
  std::vector<uint8_t> p(f.physical_size, 0);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kAllZero);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, SyntheticTest,
                         ::testing::Values(0x13u, 0x14u, 0x15u, 0x16u, 0x17u,            // full_crc32 4k..64k
                                           0x21u, 0x21u | (3u << 6), 0x21u | (7u << 6),  // crc32 16k, 4k, 64k
                                           0x0u,                             // REDUNDANT/COMPACT 16k
                                           0x23u, 0x29u, 0x2bu, 0x10021u));  // zip 1k/8k/16k, page_compressed

TEST(FullCrc32Test, TornPageTrailerLsn) {
  SpaceFlags f = Flags(kFull16k);
  auto p = Stamped(kFull16k, 13);
  // A page whose tail is from an older write: the trailer LSN differs. With a
  // recomputed CRC it is the LSN check alone that catches it.
  util::StoreBE32(p.data() + 16384 - 8, 0x12345677);
  util::StoreBE32(p.data() + 16384 - 4, util::crc32c::Value(p.data(), 16384 - 4));
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kCorrupt);
  EXPECT_NE(c.detail.find("torn page"), std::string::npos) << c.detail;
}

TEST(FullCrc32Test, MismatchDetail) {
  SpaceFlags f = Flags(kFull16k);
  auto p = Stamped(kFull16k, 13);
  p[2000] ^= 4;
  PageCheck c = CheckPage(p.data(), f, 13);
  ASSERT_EQ(c.verdict, PageVerdict::kCorrupt);
  EXPECT_EQ(c.detail.rfind("full_crc32 checksum mismatch: stored 0x", 0), 0u) << c.detail;
  EXPECT_EQ(c.stored, util::LoadBE32(p.data() + 16384 - 4));
  EXPECT_EQ(c.computed, util::crc32c::Value(p.data(), 16384 - 4));
}

TEST(FullCrc32Test, EncryptedPageSkipsTrailerLsn) {
  SpaceFlags f = Flags(kFull16k);
  auto p = MakePage(16384, 13);
  util::StoreBE32(p.data(), 3);  // key version: the rest is ciphertext, trailer LSN too
  util::StoreBE32(p.data() + 16384 - 8, 0xABCDEF01);
  util::StoreBE32(p.data() + 16384 - 4, util::crc32c::Value(p.data(), 16384 - 4));
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
  p[5000] ^= 1;
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
}

TEST(FullCrc32Test, PageCompressed) {
  SpaceFlags f = Flags(0x35);
  std::vector<uint8_t> p(16384, 0);
  util::StoreBE32(p.data() + kFilPageOffset, 13);
  util::StoreBE64(p.data() + kFilPageLsn, 777);
  util::StoreBE16(p.data() + kFilPageType, kPageTypeFcrc32CompressedMarker | 3);  // 768 bytes written
  for (int i = 26; i < 700; i++) p[i] = static_cast<uint8_t>(i);
  util::StoreBE32(p.data() + 768 - 4, util::crc32c::Value(p.data(), 768 - 4));
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk) << CheckPage(p.data(), f, 13).detail;
  p[300] ^= 1;
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
  p[300] ^= 1;
  // A size at or beyond the page is impossible.
  util::StoreBE16(p.data() + kFilPageType, kPageTypeFcrc32CompressedMarker | 0x40);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
  util::StoreBE16(p.data() + kFilPageType, kPageTypeFcrc32CompressedMarker);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
}

TEST(FullCrc32Test, ZeroCrcOnNonZeroPageIsCorrupt) {
  SpaceFlags f = Flags(kFull16k);
  std::vector<uint8_t> p(16384, 0);
  p[100] = 1;
  EXPECT_EQ(CheckPage(p.data(), f, 0).verdict, PageVerdict::kCorrupt);
}

TEST(Crc32Test, BothFieldsAndTornPage) {
  SpaceFlags f = Flags(kOld16k);
  auto p = Stamped(kOld16k, 13);
  EXPECT_EQ(util::LoadBE32(p.data()), util::LoadBE32(p.data() + 16384 - 8));
  EXPECT_EQ(util::LoadBE32(p.data() + 16384 - 4), 0x12345678u);
  // Torn: trailer low LSN from an older write.
  util::StoreBE32(p.data() + 16384 - 4, 0x12340000);
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kCorrupt);
  EXPECT_NE(c.detail.find("torn page"), std::string::npos) << c.detail;
}

TEST(Crc32Test, FieldsExcludedFromChecksum) {
  // The flush-LSN field and the space id are outside the crc32 ranges.
  SpaceFlags f = Flags(kOld16k);
  auto p = Stamped(kOld16k, 0);
  util::StoreBE64(p.data() + kFilPageFileFlushLsn, 0x99999);
  util::StoreBE32(p.data() + kFilPageSpaceId, 1234);
  EXPECT_EQ(CheckPage(p.data(), f, 0).verdict, PageVerdict::kOk);
}

// Legacy "innodb" checksum, computed independently here from the definition of
// ut_fold_binary (the server's 64-bit arithmetic, truncated).
uint64_t Fold(const uint8_t* s, size_t n) {
  uint64_t fold = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t b = s[i];
    fold = ((((fold ^ b ^ 1653893711ull) << 8) + fold) ^ 1463735687ull) + b;
  }
  return fold;
}

TEST(LegacyChecksumTest, InnodbAndNone) {
  SpaceFlags f = Flags(kOld16k);
  auto p = MakePage(16384, 13);
  util::StoreBE32(p.data() + 16384 - 4, 0x12345678);  // trailer low LSN
  uint32_t fresh = static_cast<uint32_t>(Fold(p.data() + 4, 22) + Fold(p.data() + 38, 16384 - 38 - 8));
  util::StoreBE32(p.data(), fresh);
  uint32_t old = static_cast<uint32_t>(Fold(p.data(), 26));
  util::StoreBE32(p.data() + 16384 - 8, old);
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kOk) << c.detail;
  auto q = p;
  q[3000] ^= 0x10;  // breaks the new-formula checksum only
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);
  q = p;
  q[10] ^= 0x10;  // within both ranges
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);

  // innodb_checksum_algorithm=none: the magic in both fields.
  util::StoreBE32(p.data(), kNoChecksumMagic);
  util::StoreBE32(p.data() + 16384 - 8, kNoChecksumMagic);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
  // ... but not the torn-page check.
  util::StoreBE32(p.data() + 16384 - 4, 1);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
}

TEST(LegacyChecksumTest, ZeroPageWithFlushLsn) {
  // Old servers wrote FIL_PAGE_FILE_FLUSH_LSN into otherwise empty pages.
  SpaceFlags f = Flags(kOld16k);
  std::vector<uint8_t> p(16384, 0);
  util::StoreBE64(p.data() + kFilPageFileFlushLsn, 123456);
  EXPECT_EQ(CheckPage(p.data(), f, 0).verdict, PageVerdict::kAllZero);
}

TEST(Crc32Test, EncryptedPage) {
  // Non-full_crc32 encryption: key version at 26, crc32 of the encrypted frame at 30.
  SpaceFlags f = Flags(kOld16k);
  auto p = Stamped(kOld16k, 13);
  for (int i = 100; i < 16000; i++) p[i] ^= 0x5A;  // "ciphertext": plain checksums no longer match
  util::StoreBE32(p.data() + 26, 1);
  uint32_t crc = util::crc32c::Value(p.data() + 4, 22) ^ util::crc32c::Value(p.data() + 38, 16384 - 46);
  util::StoreBE32(p.data() + 30, crc);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk) << CheckPage(p.data(), f, 13).detail;
  p[4000] ^= 1;
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kCorrupt);
  EXPECT_NE(c.detail.find("post-encryption"), std::string::npos) << c.detail;
}

TEST(UnknownFormatTest, HasPage0LooksAtItsHeadersOnly) {
  std::vector<uint8_t> head(16384, 0);
  EXPECT_FALSE(HasPage0(head.data(), head.size()));
  std::fill(head.begin() + 8192, head.end(), 0x11);  // a compressed table's page 1, no page 0 yet
  EXPECT_FALSE(HasPage0(head.data(), head.size()));
  head[kFspHeaderEnd - 1] = 1;
  EXPECT_TRUE(HasPage0(head.data(), head.size()));
  EXPECT_FALSE(HasPage0(head.data(), kFspHeaderEnd - 1)) << "too short for its headers";
}

// A window of a file whose page 0 is not on disk: one page in either
// checksum layout, or whole compressed pages of any KEY_BLOCK_SIZE.
TEST(UnknownFormatTest, AcceptsWhatTheServerMayHaveWritten) {
  constexpr uint32_t kLogical = 16384;
  auto stamped = [](uint32_t raw, uint32_t no) {
    SpaceFlags f = DecodeSpaceFlags(raw).value();
    std::vector<uint8_t> p(f.physical_size, static_cast<uint8_t>(0x40 + no));
    std::fill(p.begin(), p.begin() + kFilPageData, 0);
    util::StoreBE32(p.data() + kFilPageOffset, no);
    util::StoreBE32(p.data() + kFilPageSpaceId, 3);
    util::StoreBE64(p.data() + kFilPageLsn, 7000 + no);
    StampPageChecksum(p.data(), f);
    return p;
  };
  EXPECT_EQ(CheckPageOfUnknownFormat(stamped(0x15, 2).data(), kLogical, 2).verdict,
            PageVerdict::kOk);  // full_crc32
  EXPECT_EQ(CheckPageOfUnknownFormat(stamped(0x21, 2).data(), kLogical, 2).verdict,
            PageVerdict::kOk);  // crc32
  std::vector<uint8_t> zero(kLogical, 0);
  EXPECT_EQ(CheckPageOfUnknownFormat(zero.data(), kLogical, 2).verdict, PageVerdict::kAllZero);
  for (uint32_t zssize = 1; zssize <= 4; zssize++) {  // KEY_BLOCK_SIZE 1, 2, 4, 8
    uint32_t raw = 0x21 | (zssize << 1);
    uint32_t per = kLogical / (512u << zssize);
    std::vector<uint8_t> window;
    for (uint32_t k = 0; k < per; k++) {
      auto p = stamped(raw, 2 * per + k);  // window 2
      window.insert(window.end(), p.begin(), p.end());
    }
    EXPECT_EQ(CheckPageOfUnknownFormat(window.data(), kLogical, 2).verdict, PageVerdict::kOk) << zssize;
    // One of them not written yet: still sound.
    std::fill(window.begin(), window.begin() + (512u << zssize), 0);
    EXPECT_EQ(CheckPageOfUnknownFormat(window.data(), kLogical, 2).verdict, PageVerdict::kOk) << zssize;
    // In the wrong place, or damaged: not.
    EXPECT_EQ(CheckPageOfUnknownFormat(window.data(), kLogical, 3).verdict, PageVerdict::kCorrupt) << zssize;
    window[window.size() - 100] ^= 1;
    EXPECT_EQ(CheckPageOfUnknownFormat(window.data(), kLogical, 2).verdict, PageVerdict::kCorrupt) << zssize;
  }
}

// ROW_FORMAT=COMPRESSED pages as large as the logical page (4k pages with
// KEY_BLOCK_SIZE=4, 16k with 16): no trailer, so a zero end is not a torn
// page (xbak 0.x refused every such table: issue 19).
TEST(ZipTest, FullSizeCompressedPagesHaveNoTrailer) {
  const struct {
    uint32_t raw, logical;
  } cases[] = {
      {0x21 | (3u << 1) | (3u << 6), 4096}, {0x21 | (4u << 1) | (4u << 6), 8192}, {0x21 | (5u << 1), 16384}};
  for (auto c : cases) {
    SpaceFlags f = Flags(c.raw);
    ASSERT_EQ(f.physical_size, c.logical);
    auto p = MakePage(c.logical, 5);
    util::StoreBE64(p.data() + kFilPageLsn, 0x123456789ull);
    std::fill(p.end() - 8, p.end(), 0);  // what page_zip leaves at the end
    StampPageChecksum(p.data(), f);
    EXPECT_EQ(CheckPage(p.data(), f, 5).verdict, PageVerdict::kOk) << std::hex << c.raw;
    EXPECT_EQ(CheckPageOfUnknownFormat(p.data(), c.logical, 5).verdict, PageVerdict::kOk)
        << std::hex << c.raw;
    p[100] ^= 1;
    EXPECT_EQ(CheckPage(p.data(), f, 5).verdict, PageVerdict::kCorrupt) << std::hex << c.raw;
  }
}

TEST(ZipTest, InnodbAdlerVariantAndNone) {
  SpaceFlags f = Flags(0x29);
  auto p = MakePage(8192, 13);
  uLong a = adler32(0L, p.data() + 4, 12);
  a = adler32(a, p.data() + 24, 2);
  a = adler32(a, p.data() + 34, 8192 - 34);
  util::StoreBE32(p.data(), static_cast<uint32_t>(a));
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
  // LSN and flush LSN are outside the zip checksum; no trailer either.
  util::StoreBE64(p.data() + kFilPageLsn, 1);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
  p[50] ^= 1;
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kCorrupt);
  util::StoreBE32(p.data(), kNoChecksumMagic);
  EXPECT_EQ(CheckPage(p.data(), f, 13).verdict, PageVerdict::kOk);
}

// Builds a non-full_crc32 page_compressed page the way the server does:
// stamp the plain page, zlib it, frame it with type 34354 and 0xDEADBEEF.
std::vector<uint8_t> MakeNonFullPageCompressed(uint32_t page_no) {
  SpaceFlags f = Flags(0x10021);
  auto plain = MakePage(16384, page_no);
  StampPageChecksum(plain.data(), f);
  std::vector<uint8_t> out(16384, 0);
  uLongf len = 16384 - 40;
  EXPECT_EQ(compress2(out.data() + 40, &len, plain.data(), 16384, 6), Z_OK);
  std::memcpy(out.data(), plain.data(), kFilPageData);
  util::StoreBE32(out.data(), kNoChecksumMagic);
  util::StoreBE64(out.data() + kFilPageCompAlgo, kCompressionZlib);
  util::StoreBE16(out.data() + kFilPageType, kPageTypePageCompressed);
  util::StoreBE16(out.data() + kFilPageCompSize, static_cast<uint16_t>(len));
  return out;
}

TEST(PageCompressedTest, NonFullCrc32Zlib) {
  SpaceFlags f = Flags(0x10021);
  auto p = MakeNonFullPageCompressed(13);
  PageCheck c = CheckPage(p.data(), f, 13);
  EXPECT_EQ(c.verdict, PageVerdict::kOk) << c.detail;
  EXPECT_EQ(CheckPage(p.data(), f, 14).verdict, PageVerdict::kCorrupt);
  auto q = p;
  q[100] ^= 0x40;  // inside the zlib stream
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);
  q = p;
  util::StoreBE32(q.data(), 0);  // the checksum field must be the magic
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);
  q = p;
  util::StoreBE16(q.data() + kFilPageCompSize, 16384);
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);
  q = p;
  util::StoreBE64(q.data() + kFilPageCompAlgo, 9);
  EXPECT_EQ(CheckPage(q.data(), f, 13).verdict, PageVerdict::kCorrupt);
}

TEST(SpaceHeaderTest, SyntheticPage0) {
  auto p = MakePage(16384, 0, 100, 55);
  util::StoreBE32(p.data() + kFspSpaceId, 55);
  util::StoreBE32(p.data() + kFspSize, 640);
  util::StoreBE32(p.data() + kFspFreeLimit, 128);
  util::StoreBE32(p.data() + kFspSpaceFlags, kFull16k);
  auto h = ParseSpaceHeader(p.data(), p.size());
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->space_id, 55u);
  EXPECT_EQ(h->size_in_pages, 640u);
  EXPECT_EQ(h->free_limit, 128u);
  EXPECT_EQ(h->flags.raw, kFull16k);
  EXPECT_TRUE(h->flags.full_crc32);

  util::StoreBE32(p.data() + kFilPageSpaceId, 56);
  EXPECT_EQ(ParseSpaceHeader(p.data(), p.size()).status().code(), ErrorCode::kCorrupt);
  util::StoreBE32(p.data() + kFilPageSpaceId, 55);
  util::StoreBE32(p.data() + kFspSpaceFlags, 0x10);
  EXPECT_FALSE(ParseSpaceHeader(p.data(), p.size()).ok());
  util::StoreBE32(p.data() + kFspSpaceFlags, kFull16k);
  util::StoreBE32(p.data() + kFilPageOffset, 1);
  EXPECT_FALSE(ParseSpaceHeader(p.data(), p.size()).ok());
  util::StoreBE32(p.data() + kFilPageOffset, 0);
  EXPECT_FALSE(ParseSpaceHeader(p.data(), 100).ok());
  EXPECT_TRUE(ParseSpaceHeader(p.data(), p.size()).ok());
}

TEST(PossibleSpaceFlagsTest, FromSizesAlone) {
  for (uint32_t logical : {4096u, 8192u, 16384u, 32768u, 65536u}) {
    SCOPED_TRACE(logical);
    auto plain = PossibleSpaceFlags(logical, 0);
    ASSERT_EQ(plain.size(), 2u);
    EXPECT_TRUE(plain[0].full_crc32);
    EXPECT_FALSE(plain[1].full_crc32);
    for (const auto& f : plain) {
      EXPECT_EQ(f.logical_size, logical);
      EXPECT_EQ(f.physical_size, logical);
      EXPECT_FALSE(f.zip());
    }
  }
  // ROW_FORMAT=COMPRESSED: KEY_BLOCK_SIZE up to the page size, 16k included
  // (a compressed page as large as the logical one is still compressed).
  for (uint32_t zip : {1024u, 2048u, 4096u, 8192u, 16384u}) {
    SCOPED_TRACE(zip);
    auto z = PossibleSpaceFlags(16384, zip);
    ASSERT_EQ(z.size(), 1u);
    EXPECT_TRUE(z[0].zip());
    EXPECT_EQ(z[0].physical_size, zip);
    EXPECT_EQ(z[0].logical_size, 16384u);
  }
  EXPECT_TRUE(PossibleSpaceFlags(4096, 8192).empty());   // larger than the page
  EXPECT_TRUE(PossibleSpaceFlags(65536, 1024).empty());  // no ROW_FORMAT=COMPRESSED above 16k pages
}

}  // namespace
}  // namespace xbak::innodb
