// libFuzzer entry point for the page layer: space flags, the page-0 header and
// page validation all read bytes from data files that a live server rewrites
// under us, so they must never read past the page, and what they accept must
// be self-consistent (a page stamped by StampPageChecksum must pass).
//
// Also PAGE_COMPRESSED decompression (page_compression.h), and the binlog position read from
// TRX_SYS and rollback segment pages (trx_sys.h), on the same bytes.
//
// Input: 4 bytes of FSP flags, then page bytes (zero-padded or cut to the
// physical page size, copied into an exact-size buffer so ASan sees overreads).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/innodb/page_compression.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/innodb/trx_sys.h"
#include "xbak/util/endian.h"

using namespace xbak::innodb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The header parser on the raw input, at its exact size.
  {
    std::vector<uint8_t> raw(data, data + size);
    auto h = ParseSpaceHeader(raw.data(), raw.size());
    if (h.ok() && (h->flags.physical_size == 0 || h->flags.logical_size < h->flags.physical_size))
      std::abort();
  }
  if (size < 4) return 0;
  const uint32_t raw_flags = xbak::util::LoadBE32(data);
  auto flags = DecodeSpaceFlags(raw_flags);
  if (!flags.ok()) return 0;
  const SpaceFlags f = flags.value();
  if (f.physical_size < 1024 || f.physical_size > 65536 || f.logical_size < 4096 || f.logical_size > 65536 ||
      f.physical_size > f.logical_size || (f.full_crc32 && f.zip())) {
    std::abort();
  }
  // Round trip: re-decoding gives the same answer.
  auto again = DecodeSpaceFlags(f.raw);
  if (!again.ok() || again->physical_size != f.physical_size) std::abort();

  std::vector<uint8_t> page(f.physical_size, 0);
  std::memcpy(page.data(), data + 4, std::min(size - 4, page.size()));
  const uint32_t page_no = PageNo(page.data());
  PageCheck c = CheckPage(page.data(), f, page_no);
  if (c.verdict == PageVerdict::kCorrupt && c.detail.empty()) std::abort();
  if (c.verdict != PageVerdict::kCorrupt && !c.detail.empty()) std::abort();
  if (c.verdict == PageVerdict::kAllZero && !IsAllZero(page.data(), page.size()) && f.full_crc32)
    std::abort();
  // The same page with another expected number is never accepted unless empty.
  PageCheck other = CheckPage(page.data(), f, page_no + 1);
  if (other.verdict == PageVerdict::kOk) std::abort();

  // Stamping a plain (uncompressed) page must make it valid.
  const uint16_t type = PageType(page.data());
  const bool compressed_frame =
      f.full_crc32
          ? (type & kPageTypeFcrc32CompressedMarker) != 0
          : (!f.zip() && (type == kPageTypePageCompressed || type == kPageTypePageCompressedEncrypted));
  if (!compressed_frame) {
    StampPageChecksum(page.data(), f);
    PageCheck s = CheckPage(page.data(), f, page_no);
    if (s.verdict == PageVerdict::kCorrupt) std::abort();
  }
  (void)InDoublewriteArea(0, page_no, f.logical_size);

  // The binary log position InnoDB records (trx_sys.h): read from the exact-size page, never past it.
  for (const RsegSlot& s : RsegSlots(page.data(), f.physical_size)) {
    if (s.page_no == kFilNull) std::abort();
  }
  if (auto b = RsegBinlog(page.data(), f.physical_size); b && (b->file.empty() || b->file.size() > 511))
    std::abort();
  if (auto b = LegacyTrxSysBinlog(page.data(), f.physical_size); b && b->file.size() > 511) std::abort();

  // Encryption: decrypting any bytes stays inside the page; a page encrypted
  // and decrypted again is the page (the key version and checksum fields aside).
  {
    AesKey key{};
    for (size_t i = 0; i < key.size(); i++) key[i] = static_cast<uint8_t>(i * 31 + 7);
    const CryptMode mode = (size > 4 && (data[4] & 1)) ? CryptMode::kCtr : CryptMode::kCbc;
    std::vector<uint8_t> d(page);
    (void)DecryptPage(d.data(), f, 5, key, mode);
    // The older format's decryption takes the space id from the page, as
    // the server writes it there.
    std::vector<uint8_t> e(page);
    if (!f.full_crc32) xbak::util::StoreBE32(e.data() + 34, 5);
    const std::vector<uint8_t> before(e);
    if (EncryptPage(e.data(), f, 5, 1, key, mode).ok()) {
      if (!DecryptPage(e.data(), f, 5, key, mode).ok()) std::abort();
      size_t lo = 0, hi = e.size();
      if (f.full_crc32) {
        const uint16_t t = PageType(page.data());
        lo = 4;
        hi = (t & kPageTypeFcrc32CompressedMarker) ? size_t{t & 0xFFu} << 8 : e.size();
        hi = hi >= 4 ? hi - 4 : 0;
      } else {
        std::memset(e.data() + 26, 0, 8);
        std::vector<uint8_t> p2(before);
        std::memset(p2.data() + 26, 0, 8);
        if (e != p2) std::abort();
        lo = hi;
      }
      if (lo < hi && !std::equal(e.begin() + lo, e.begin() + hi, before.begin() + lo)) std::abort();
    }
  }

  // PAGE_COMPRESSED: decompressing never reads or writes outside the page;
  // a page that decompresses, compressed again, decompresses to the same frame.
  if (f.page_compressed && !f.zip()) {
    std::vector<uint8_t> in(data + 4, data + 4 + std::min(size - 4, size_t{f.logical_size}));
    in.resize(f.logical_size, 0);
    std::vector<uint8_t> plain(f.logical_size), out(f.logical_size), back(f.logical_size);
    auto d = DecompressPage(in.data(), f, plain.data());
    if (d.ok() && *d && f.full_crc32 && CompressionSupported(f.compression_algo)) {
      auto w = CompressPageFullCrc32(plain.data(), f, 1, 6, out.data());
      if (w.ok() && *w > 0) {
        auto d2 = DecompressPage(out.data(), f, back.data());
        if (!d2.ok() || !*d2 || back != plain) std::abort();
      }
    }
  }
  return 0;
}
