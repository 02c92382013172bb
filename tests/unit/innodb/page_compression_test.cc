#include "xbak/innodb/page_compression.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

// A 16k full_crc32 INDEX page whose body is compressible to a varying degree.
std::vector<uint8_t> Frame(std::mt19937& rng, uint32_t page_no, int randomness) {
  std::vector<uint8_t> p(16384, 0);
  util::StoreBE32(p.data() + kFilPageOffset, page_no);
  util::StoreBE64(p.data() + kFilPageLsn, 0x1234567890ull + page_no);
  util::StoreBE16(p.data() + kFilPageType, kPageTypeIndex);
  util::StoreBE32(p.data() + kFilPageSpaceId, 9);
  for (size_t i = kFilPageData; i < p.size() - 8; i++) {
    p[i] = static_cast<int>(rng() % 100) < randomness ? static_cast<uint8_t>(rng())
                                                      : static_cast<uint8_t>(i / 97);
  }
  // The frame as the flush compresses it: the LSN's low half at the end, twice.
  util::StoreBE64(p.data() + p.size() - 8, 0x1234567890ull + page_no);
  std::memcpy(p.data() + p.size() - 8, p.data() + kFilPageLsn + 4, 4);
  return p;
}

class RoundTrip : public ::testing::TestWithParam<uint32_t> {};

// Compressed as the server writes it, the page passes the (independent)
// page checker and decompresses to the same frame, at every compressibility
// (lz4's length byte is exercised across many written sizes).
TEST_P(RoundTrip, CompressedPagesCheckAndDecompressToTheFrame) {
  const uint32_t algo = GetParam();
  if (!CompressionSupported(algo))
    GTEST_SKIP() << CompressionName(algo) << ": its library was not found by this build";
  SpaceFlags flags = DecodeSpaceFlags(0x15 | (algo << 5)).value();
  ASSERT_TRUE(flags.page_compressed);
  std::mt19937 rng(algo);
  int compressed = 0, plain = 0;
  for (int r = 0; r <= 100; r += 2) {
    auto frame = Frame(rng, 3 + r, r);
    std::vector<uint8_t> out(16384), back(16384);
    auto w = CompressPageFullCrc32(frame.data(), flags, 9, 6, out.data());
    ASSERT_TRUE(w.ok()) << w.status().message();
    if (*w == 0) {
      plain++;
      continue;
    }
    compressed++;
    EXPECT_EQ(*w % 256, 0u);
    EXPECT_EQ(StoredCompression(out.data(), flags), algo);
    PageCheck c = CheckPage(out.data(), flags, 3 + r);
    EXPECT_EQ(c.verdict, PageVerdict::kOk) << r << ": " << c.detail;
    auto d = DecompressPage(out.data(), flags, back.data());
    ASSERT_TRUE(d.ok()) << r << ": " << d.status().message();
    EXPECT_TRUE(*d);
    EXPECT_EQ(back, frame) << r;
    out[*w - 10] ^= 1;  // the checksum covers the written bytes
    EXPECT_EQ(CheckPage(out.data(), flags, 3 + r).verdict, PageVerdict::kCorrupt) << r;
  }
  EXPECT_GT(compressed, 20);
  EXPECT_GT(plain, 0);  // random pages do not shrink: written plain
}

INSTANTIATE_TEST_SUITE_P(Algorithms, RoundTrip,
                         ::testing::Values(kCompressionZlib, kCompressionLz4, kCompressionLzo,
                                           kCompressionLzma, kCompressionBzip2, kCompressionSnappy),
                         [](const auto& info) { return CompressionName(info.param); });

TEST(PageCompression, PagesTheServerNeverCompresses) {
  SpaceFlags flags = DecodeSpaceFlags(0x15 | (kCompressionZlib << 5)).value();
  std::mt19937 rng(5);
  std::vector<uint8_t> out(16384);
  auto frame = Frame(rng, 0, 0);  // page 0
  EXPECT_EQ(*CompressPageFullCrc32(frame.data(), flags, 9, 6, out.data()), 0u);
  frame = Frame(rng, 5, 0);  // page 5 of the system tablespace
  EXPECT_EQ(*CompressPageFullCrc32(frame.data(), flags, 0, 6, out.data()), 0u);
  EXPECT_GT(*CompressPageFullCrc32(frame.data(), flags, 9, 6, out.data()), 0u);
  util::StoreBE16(frame.data() + kFilPageType, kPageTypeXdes);
  EXPECT_EQ(*CompressPageFullCrc32(frame.data(), flags, 9, 6, out.data()), 0u);
}

// zlib and lz4 are always built in; the others when their library was found.
TEST(PageCompression, AlgorithmsNotBuiltInAreNamed) {
  EXPECT_TRUE(CompressionSupported(kCompressionZlib));
  EXPECT_TRUE(CompressionSupported(kCompressionLz4));
  for (uint32_t algo : {kCompressionLzo, kCompressionLzma, kCompressionBzip2, kCompressionSnappy}) {
    if (CompressionSupported(algo)) continue;
    SpaceFlags flags = DecodeSpaceFlags(0x15 | (algo << 5)).value();
    std::mt19937 rng(1);
    auto frame = Frame(rng, 7, 0);
    std::vector<uint8_t> out(16384);
    auto w = CompressPageFullCrc32(frame.data(), flags, 9, 6, out.data());
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find(CompressionName(algo)), std::string::npos);
  }
}

// A damaged length byte (lz4: W = 256, byte W-5 = 1..4) must not wrap the
// payload length: refused, nothing read outside the page.
TEST(PageCompression, ADamagedLengthByteIsRefused) {
  SpaceFlags flags = DecodeSpaceFlags(0x15 | (kCompressionLz4 << 5)).value();
  std::vector<uint8_t> page(16384, 0), out(16384);
  util::StoreBE16(page.data() + kFilPageType, kPageTypeFcrc32CompressedMarker | 1);  // W = 256
  for (uint8_t b = 1; b <= 31; b++) {
    page[256 - 5] = b;
    auto d = DecompressPage(page.data(), flags, out.data());
    EXPECT_FALSE(d.ok()) << int(b);
  }
}

TEST(PageCompression, PlainPagesAreLeftAlone) {
  SpaceFlags flags = DecodeSpaceFlags(0x15 | (kCompressionZlib << 5)).value();
  std::mt19937 rng(2);
  auto frame = Frame(rng, 4, 0);
  std::vector<uint8_t> out(16384);
  auto d = DecompressPage(frame.data(), flags, out.data());
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(*d);
}

}  // namespace
}  // namespace xbak::innodb
