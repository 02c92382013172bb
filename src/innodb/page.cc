#include "xbak/innodb/page.h"

#include <zlib.h>

#include <cstring>
#include <functional>
#include <vector>

#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/hex.h"

namespace xbak::innodb {
namespace {

PageCheck Ok() { return PageCheck{PageVerdict::kOk, 0, 0, {}}; }
PageCheck Bad(std::string detail, uint32_t stored = 0, uint32_t computed = 0) {
  return PageCheck{PageVerdict::kCorrupt, stored, computed, std::move(detail)};
}
PageCheck Mismatch(const std::string& what, uint32_t stored, uint32_t computed) {
  return Bad(what + " mismatch: stored " + util::Hex32(stored) + " computed " + util::Hex32(computed), stored,
             computed);
}

// ---- Checksum formulas (written from the format description, not copied) ----

// The "crc32" algorithm of non-full_crc32 files: two CRC-32C ranges combined
// with XOR, skipping the checksum field, the flush-LSN/key-version field, the
// space id and the trailer (which holds the same checksum again).
uint32_t PageCrc32(const uint8_t* page, size_t size) {
  return util::crc32c::Value(page + kFilPageOffset, kFilPageFileFlushLsn - kFilPageOffset) ^
         util::crc32c::Value(page + kFilPageData, size - kFilPageData - kFilPageEndLsnOldChecksum);
}

// InnoDB's ut_fold_ulint_pair/ut_fold_binary. The server computes in a 64-bit
// ulint and truncates at the end; XOR, shift-left and add never move high bits
// into low ones, so 64-bit arithmetic here gives the same low 32 bits.
constexpr uint64_t kFoldMask1 = 1463735687;
constexpr uint64_t kFoldMask2 = 1653893711;
inline uint64_t FoldPair(uint64_t n1, uint64_t n2) {
  return ((((n1 ^ n2 ^ kFoldMask2) << 8) + n1) ^ kFoldMask1) + n2;
}
uint64_t FoldBytes(const uint8_t* p, size_t n) {
  uint64_t fold = 0;
  for (size_t i = 0; i < n; i++) fold = FoldPair(fold, p[i]);
  return fold;
}
// Legacy "innodb" checksum stored at offset 0 (same ranges as PageCrc32).
uint32_t PageFoldNew(const uint8_t* page, size_t size) {
  return static_cast<uint32_t>(
      FoldBytes(page + kFilPageOffset, kFilPageFileFlushLsn - kFilPageOffset) +
      FoldBytes(page + kFilPageData, size - kFilPageData - kFilPageEndLsnOldChecksum));
}
// Legacy "old formula" checksum stored at size-8: the first 26 bytes, checksum
// field included (the server stores the new checksum first).
uint32_t PageFoldOld(const uint8_t* page) {
  return static_cast<uint32_t>(FoldBytes(page, kFilPageFileFlushLsn));
}

// ROW_FORMAT=COMPRESSED: the header minus checksum, LSN and flush LSN, then
// everything from the space id to the end (no trailer on zip pages).
uint32_t ZipCrc32(const uint8_t* page, size_t size) {
  return util::crc32c::Value(page + kFilPageOffset, kFilPageLsn - kFilPageOffset) ^
         util::crc32c::Value(page + kFilPageType, 2) ^
         util::crc32c::Value(page + kFilPageSpaceId, size - kFilPageSpaceId);
}
uint32_t ZipAdler(const uint8_t* page, size_t size) {
  uLong a = adler32(0L, page + kFilPageOffset, static_cast<uInt>(kFilPageLsn - kFilPageOffset));
  a = adler32(a, page + kFilPageType, 2);
  a = adler32(a, page + kFilPageSpaceId, static_cast<uInt>(size - kFilPageSpaceId));
  return static_cast<uint32_t>(a);
}

// The low 32 bits of FIL_PAGE_LSN must reappear in the trailer: if they do
// not, the page was read while half written (a torn page).
bool TrailerLsnMatches(const uint8_t* page, size_t trailer_lsn_at) {
  return std::memcmp(page + kFilPageLsn + 4, page + trailer_lsn_at, 4) == 0;
}
PageCheck TornPage(const uint8_t* page, size_t trailer_lsn_at) {
  uint32_t head = util::LoadBE32(page + kFilPageLsn + 4), tail = util::LoadBE32(page + trailer_lsn_at);
  return Bad("torn page: low 32 bits of FIL_PAGE_LSN are " + util::Hex32(head) +
                 " but the trailer copy at byte " + std::to_string(trailer_lsn_at) + " is " +
                 util::Hex32(tail),
             tail, head);
}

// ---- full_crc32 ------------------------------------------------------------
PageCheck CheckFullCrc32(const uint8_t* page, const SpaceFlags& flags) {
  size_t size = flags.logical_size;
  bool compressed = false;
  const uint16_t type = PageType(page);
  if (type & kPageTypeFcrc32CompressedMarker) {
    // page_compressed: the low bits of the type give the written size / 256;
    // the CRC covers only that many bytes (the rest is a punched hole).
    size_t written = size_t{static_cast<uint16_t>(type & ~kPageTypeFcrc32CompressedMarker)} << 8;
    if (written == 0 || written >= size) {
      return Bad("full_crc32 page_compressed page type " + util::Hex32(type) +
                 " gives a compressed size of " + std::to_string(written) +
                 " bytes, not between 1 and the page size " + std::to_string(size));
    }
    size = written;
    compressed = true;
  }
  const uint32_t stored = util::LoadBE32(page + size - kFilPageFcrc32Checksum);
  const uint32_t computed = util::crc32c::Value(page, size - kFilPageFcrc32Checksum);
  if (stored != computed) {
    return Mismatch(compressed
                        ? "full_crc32 checksum of page_compressed page (" + std::to_string(size) + " bytes)"
                        : std::string("full_crc32 checksum"),
                    stored, computed);
  }
  // Encrypted pages (key version != 0) have their trailer LSN encrypted, and
  // compressed ones have no trailer; only plain pages can be checked for tears
  // beyond the CRC.
  const uint32_t key_version = util::LoadBE32(page + kFilPageSpaceOrChecksum);
  if (!compressed && key_version == 0 && !TrailerLsnMatches(page, size - kFilPageFcrc32EndLsn)) {
    return TornPage(page, size - kFilPageFcrc32EndLsn);
  }
  PageCheck ok = Ok();
  ok.stored = ok.computed = stored;
  ok.encrypted = key_version != 0 && PageNo(page) != 0;
  return ok;
}

// ---- ROW_FORMAT=COMPRESSED ---------------------------------------------------
PageCheck CheckZip(const uint8_t* page, const SpaceFlags& flags) {
  const size_t size = flags.physical_size;
  const uint32_t crc = ZipCrc32(page, size);
  // Encrypted zip page (never page 0): the post-encryption checksum at 30.
  if (PageNo(page) != 0 && util::LoadBE32(page + kFilPageFileFlushLsn) != 0) {
    const uint32_t crypt = util::LoadBE32(page + kFilPageFileFlushLsn + 4);
    if (crypt == crc || crypt == kNoChecksumMagic || crypt == ZipAdler(page, size)) {
      PageCheck ok = Ok();
      ok.encrypted = true;
      return ok;
    }
    // Not encrypted after all (an old nonzero flush-LSN field): judge it as plain.
  }
  const uint32_t stored = util::LoadBE32(page + kFilPageSpaceOrChecksum);
  if (stored == crc || stored == kNoChecksumMagic || stored == ZipAdler(page, size)) {
    PageCheck ok = Ok();
    ok.stored = stored;
    ok.computed = crc;
    return ok;
  }
  return Mismatch("ROW_FORMAT=COMPRESSED (" + std::to_string(size) + "-byte page) checksum", stored, crc);
}

// ---- non-full_crc32 (crc32 / innodb / none) -----------------------------------
PageCheck CheckNonFullPlain(const uint8_t* page, const SpaceFlags& flags, int depth);

// page_compressed pages of non-full_crc32 files carry no checksum of their
// own; the server checks the page after decompression. We check the framing
// and, for zlib (the server's default algorithm and the only one this layer
// links), decompress and check the inner page as mariabackup does.
PageCheck CheckPageCompressedNonFull(const uint8_t* page, const SpaceFlags& flags, int depth) {
  const size_t size = flags.logical_size;
  const uint16_t type = PageType(page);
  const uint32_t field1 = util::LoadBE32(page + kFilPageSpaceOrChecksum);
  if (field1 != kNoChecksumMagic) {
    return Bad("page_compressed page (type " + std::to_string(type) + ") has checksum field " +
                   util::Hex32(field1) + ", expected " + util::Hex32(kNoChecksumMagic),
               field1, kNoChecksumMagic);
  }
  size_t header_len = kFilPageData + kFilPageCompMetadataLen;
  uint32_t algo;
  if (type == kPageTypePageCompressed) {
    if (util::LoadBE32(page + kFilPageCompAlgo) != 0 || util::LoadBE16(page + kFilPageCompAlgo + 4) != 0) {
      return Bad("page_compressed page: algorithm field at byte 26 has nonzero high bytes");
    }
    algo = util::LoadBE16(page + kFilPageCompAlgo + 6);
  } else {
    header_len += 2;
    algo = util::LoadBE16(page + kFilPageEncryptCompAlgo);
  }
  const size_t len = util::LoadBE16(page + kFilPageCompSize);
  if (len == 0 || len > size - header_len) {
    return Bad("page_compressed page: payload length " + std::to_string(len) + " does not fit in a " +
               std::to_string(size) + "-byte page");
  }
  if (algo < kCompressionZlib || algo > kCompressionSnappy) {
    return Bad("page_compressed page: unknown compression algorithm " + std::to_string(algo));
  }
  // An encrypted payload cannot be opened without the key; other algorithms
  // are not linked here. Their framing was all we could check.
  if (type != kPageTypePageCompressed || algo != kCompressionZlib || depth > 0) return Ok();

  std::vector<uint8_t> inner(size);
  uLongf out_len = static_cast<uLongf>(size);
  int rc = uncompress(inner.data(), &out_len, page + header_len, static_cast<uLong>(len));
  if (rc != Z_OK || out_len != size) {
    return Bad("page_compressed page: zlib payload of " + std::to_string(len) +
               " bytes does not inflate to a whole page (zlib " + std::to_string(rc) + ", " +
               std::to_string(out_len) + " bytes)");
  }
  const uint16_t inner_type = PageType(inner.data());
  if (inner_type == kPageTypePageCompressed || inner_type == kPageTypePageCompressedEncrypted) {
    return Bad("page_compressed page decompresses to another page_compressed page");
  }
  if (IsAllZero(inner.data(), size)) return Bad("page_compressed page decompresses to an all-zero page");
  PageCheck c = CheckNonFullPlain(inner.data(), flags, depth + 1);
  if (c.verdict == PageVerdict::kCorrupt) c.detail = "after decompression: " + c.detail;
  if (c.verdict == PageVerdict::kOk && PageNo(inner.data()) != PageNo(page)) {
    return Bad("page_compressed page: page number " + std::to_string(PageNo(inner.data())) +
               " inside differs from " + std::to_string(PageNo(page)) + " outside");
  }
  return c;
}

// Mirrors the server's acceptance rules for innodb_checksum_algorithm=crc32
// or full_crc32 (non-strict): crc32, the legacy fold checksums and the
// "none" magic are all accepted for files in the old format.
PageCheck CheckNonFullPlain(const uint8_t* page, const SpaceFlags& flags, int depth) {
  const size_t size = flags.logical_size;
  const uint16_t type = PageType(page);
  if (type == kPageTypePageCompressed || type == kPageTypePageCompressedEncrypted) {
    return CheckPageCompressedNonFull(page, flags, depth);
  }
  const size_t trailer_lsn_at = size - kFilPageEndLsnOldChecksum + 4;
  if (!TrailerLsnMatches(page, trailer_lsn_at)) return TornPage(page, trailer_lsn_at);

  const uint32_t field1 = util::LoadBE32(page + kFilPageSpaceOrChecksum);
  const uint32_t field2 = util::LoadBE32(page + size - kFilPageEndLsnOldChecksum);
  const uint32_t crc = PageCrc32(page, size);

  // Encrypted (key version at 26, never on page 0): the checksum of the
  // encrypted frame sits at 30. If it does not match, the field may instead be
  // an old flush LSN on a plain page, so fall through to the plain checks.
  std::string crypt_note;
  const uint32_t key_version = util::LoadBE32(page + kFilPageFileFlushLsn);
  if (PageNo(page) != 0 && key_version != 0) {
    const uint32_t crypt = util::LoadBE32(page + kFilPageFileFlushLsn + 4);
    if (crypt == crc || crypt == kNoChecksumMagic || crypt == PageFoldNew(page, size)) {
      PageCheck ok = Ok();
      ok.stored = crypt;
      ok.computed = crc;
      ok.encrypted = true;
      return ok;
    }
    crypt_note = " (nor does the post-encryption checksum for key version " + std::to_string(key_version) +
                 ": stored " + util::Hex32(crypt) + ")";
  }

  if (field1 == 0 && field2 == 0) {
    // Before MariaDB 10.1.25 the flush-LSN field could be written on an
    // otherwise empty page: that page is still "all zero".
    if (IsAllZero(page, kFilPageFileFlushLsn) && IsAllZero(page + kFilPageSpaceId, size - kFilPageSpaceId)) {
      return PageCheck{PageVerdict::kAllZero, 0, 0, {}};
    }
  }
  if (field1 == kNoChecksumMagic && field2 == kNoChecksumMagic) return Ok();

  const bool both_crc = field1 == crc && field2 == crc;
  // Very old pages stored the high LSN word in field2; "none" may be mixed.
  if (field2 != util::LoadBE32(page + kFilPageLsn) && field2 != kNoChecksumMagic && !both_crc) {
    const uint32_t old = PageFoldOld(page);
    if (field2 != old) {
      if (field1 == field2 || field1 == 0 || field1 == kNoChecksumMagic) {
        return Bad("crc32 checksum mismatch: stored " + util::Hex32(field2) + " computed " +
                       util::Hex32(crc) + crypt_note,
                   field2, crc);
      }
      return Bad("checksum field 2 (at byte " + std::to_string(size - kFilPageEndLsnOldChecksum) +
                     ") mismatch: stored " + util::Hex32(field2) + ", crc32 " + util::Hex32(crc) +
                     ", innodb " + util::Hex32(old) + crypt_note,
                 field2, crc);
    }
  }
  if (field1 != 0 && field1 != kNoChecksumMagic && !both_crc) {
    const uint32_t fold = PageFoldNew(page, size);
    if (field1 != fold) {
      return Bad("checksum field 1 (at byte 0) mismatch: stored " + util::Hex32(field1) + ", crc32 " +
                     util::Hex32(crc) + ", innodb " + util::Hex32(fold) + crypt_note,
                 field1, crc);
    }
  }
  PageCheck ok = Ok();
  ok.stored = field1;
  ok.computed = crc;
  return ok;
}

}  // namespace

// ---- Flags -------------------------------------------------------------------
namespace {
// Bits 0..9, which both servers encode alike: the page sizes, and the row
// format bits those depend on (into `f`).
Status DecodeSizeBits(uint32_t raw, SpaceFlags& f, const std::function<Status(const std::string&)>& bad) {
  if ((raw & 0x21) == 0x20) return bad("ATOMIC_BLOBS set without POST_ANTELOPE");
  const uint32_t ssize = (raw >> 6) & 0xF;
  if (ssize == 1 || ssize == 2 || ssize == 5 || ssize > 7) {
    return bad("page size code " + std::to_string(ssize) + " (16k must be encoded as 0)");
  }
  f.logical_size = ssize == 0 ? 16384 : 512u << ssize;
  const uint32_t zssize = (raw >> 1) & 0xF;
  f.physical_size = f.logical_size;
  if (zssize != 0) {
    if (zssize > (ssize ? ssize : 5) || zssize > 5) {
      return bad("ROW_FORMAT=COMPRESSED page size code " + std::to_string(zssize) +
                 " is larger than the page");
    }
    if ((raw & 0x21) != 0x21) return bad("ROW_FORMAT=COMPRESSED needs POST_ANTELOPE and ATOMIC_BLOBS");
    f.physical_size = f.zip_size = 512u << zssize;
  }
  return Status::Ok();
}

Status BadFlags(uint32_t raw, const std::string& why) {
  return Error(ErrorCode::kCorrupt, "invalid tablespace flags " + util::Hex32(raw) + ": " + why);
}
}  // namespace

Result<SpaceFlags> DecodeMysqlSpaceFlags(uint32_t raw) {
  auto bad = [raw](const std::string& why) { return BadFlags(raw, why); };
  if (raw >> 15) return bad("bits above 14 are set (not a MySQL 8.0+ tablespace)");
  SpaceFlags f;
  f.raw = raw;
  XBAK_RETURN_IF_ERROR(DecodeSizeBits(raw, f, bad));
  f.mysql_shared = (raw >> 11) & 1;
  f.mysql_encrypted = (raw >> 13) & 1;
  f.mysql_sdi = (raw >> 14) & 1;
  return f;
}

Result<SpaceFlags> DecodeSpaceFlags(uint32_t raw, Dialect d) {
  return d == Dialect::kMySQL ? DecodeMysqlSpaceFlags(raw) : DecodeSpaceFlags(raw);
}

Result<SpaceFlags> DecodeSpaceFlags(uint32_t raw) {
  auto bad = [raw](const std::string& why) { return BadFlags(raw, why); };
  SpaceFlags f;
  f.raw = raw;
  if (raw & 0x10) {  // full_crc32 marker
    const uint32_t ssize = raw & 0xF;
    if (ssize < 3 || ssize > 7) {
      return bad("full_crc32 page size code " + std::to_string(ssize) + " is not 3..7 (4k..64k)");
    }
    if (raw >> 8) return bad("unknown bits set above bit 7 in full_crc32 flags");
    const uint32_t algo = (raw >> 5) & 7;
    if (algo > kCompressionSnappy) return bad("unknown page compression algorithm " + std::to_string(algo));
    f.full_crc32 = true;
    f.logical_size = f.physical_size = 512u << ssize;
    f.page_compressed = algo != 0;
    f.compression_algo = algo;
    return f;
  }
  // Older encoding: bit 0 POST_ANTELOPE, 1..4 ZIP_SSIZE, 5 ATOMIC_BLOBS,
  // 6..9 PAGE_SSIZE, 10..15 reserved, 16 PAGE_COMPRESSION.
  if (raw >> 17) return bad("bits above 16 are set (memory-only or unknown flags)");
  if (((raw >> 10) & 0x3F) & ~1u) {
    return bad("reserved bits 11..15 set (the buggy MariaDB 10.1.0-10.1.20 layout, or a MySQL tablespace?)");
  }
  XBAK_RETURN_IF_ERROR(DecodeSizeBits(raw, f, bad));
  f.page_compressed = (raw >> 16) & 1;
  return f;
}

Result<SpaceHeader> ParseSpaceHeader(const uint8_t* page0, size_t len, Dialect d) {
  if (page0 == nullptr || len < kFspHeaderEnd) {
    return Error(ErrorCode::kCorrupt,
                 "page 0 is only " + std::to_string(len) + " bytes, too short for an FSP header");
  }
  if (PageNo(page0) != 0) {
    return Error(ErrorCode::kCorrupt, "page 0 says it is page " + std::to_string(PageNo(page0)));
  }
  SpaceHeader h;
  h.space_id = util::LoadBE32(page0 + kFspSpaceId);
  if (PageSpaceId(page0) != h.space_id) {
    return Error(ErrorCode::kCorrupt, "inconsistent tablespace id on page 0: FIL header says " +
                                          std::to_string(PageSpaceId(page0)) + ", FSP header says " +
                                          std::to_string(h.space_id));
  }
  auto flags = DecodeSpaceFlags(util::LoadBE32(page0 + kFspSpaceFlags), d);
  if (!flags.ok()) return flags.status();
  h.flags = flags.value();
  h.size_in_pages = util::LoadBE32(page0 + kFspSize);
  h.free_limit = util::LoadBE32(page0 + kFspFreeLimit);
  return h;
}

// ---- Field access ------------------------------------------------------------
bool IsAllZero(const uint8_t* p, size_t n) {
  // OR 64 bytes at a time and test once per block: cheap on the all-zero
  // pages that dominate freshly extended files, early exit on the others.
  while (n >= 64) {
    uint64_t w[8];
    std::memcpy(w, p, 64);
    if ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0) return false;
    p += 64;
    n -= 64;
  }
  uint8_t acc = 0;
  while (n-- > 0) acc |= *p++;
  return acc == 0;
}

bool HasPage0(const uint8_t* p, size_t n) { return n >= kFspHeaderEnd && !IsAllZero(p, kFspHeaderEnd); }

uint64_t PageLsn(const uint8_t* page) { return util::LoadBE64(page + kFilPageLsn); }
uint16_t PageType(const uint8_t* page) { return util::LoadBE16(page + kFilPageType); }
uint32_t PageNo(const uint8_t* page) { return util::LoadBE32(page + kFilPageOffset); }
uint32_t PageSpaceId(const uint8_t* page) { return util::LoadBE32(page + kFilPageSpaceId); }

// ---- Validation ----------------------------------------------------------------
PageCheck CheckPage(const uint8_t* page, const SpaceFlags& flags, uint32_t expected_page_no) {
  const size_t size = flags.physical_size;
  // SpaceFlags is a plain struct: refuse sizes DecodeSpaceFlags never yields
  // rather than read outside the caller's buffer.
  if (size < 1024 || size > flags.logical_size || flags.logical_size < 4096 || flags.logical_size > 65536 ||
      (flags.full_crc32 && flags.zip())) {
    return Bad("invalid space flags " + util::Hex32(flags.raw) + ": page size " + std::to_string(size));
  }
  if (IsAllZero(page, size)) return PageCheck{PageVerdict::kAllZero, 0, 0, {}};
  PageCheck c = flags.full_crc32 ? CheckFullCrc32(page, flags)
                : flags.zip()    ? CheckZip(page, flags)
                                 : CheckNonFullPlain(page, flags, 0);
  if (c.verdict != PageVerdict::kOk) return c;
  // A page with a good checksum but another number is a stale or misplaced
  // copy (e.g. read from a file being replaced): not the page we want.
  if (PageNo(page) != expected_page_no) {
    return Bad("page number field says " + std::to_string(PageNo(page)) + ", expected " +
                   std::to_string(expected_page_no),
               c.stored, c.computed);
  }
  return c;
}

namespace {
// PAGE_SSIZE / ZIP_SSIZE of a page size: 16k -> 5, 1k -> 1.
uint32_t SizeShift(uint32_t size) {
  uint32_t ssize = 0;
  for (uint32_t s = size >> 9; s > 1; s >>= 1) ssize++;
  return ssize;
}
}  // namespace

bool PageHasSpaceIdField(const uint8_t* page) {
  return !(util::LoadBE16(page + kFilPageType) & kPageTypeFcrc32CompressedMarker);
}

std::vector<SpaceFlags> PossibleSpaceFlags(uint32_t logical, uint32_t zip_size) {
  std::vector<SpaceFlags> out;
  // The older layout writes 0 for 16k pages.
  const uint32_t old_pssize = logical == 16384 ? 0 : SizeShift(logical);
  if (zip_size == 0) {
    if (auto full = DecodeSpaceFlags(0x10 | SizeShift(logical)); full.ok()) out.push_back(*full);
    if (auto old = DecodeSpaceFlags(1 | (1u << 5) | (old_pssize << 6)); old.ok()) out.push_back(*old);
  } else if (zip_size <= logical && logical <= 16384) {  // the server refuses COMPRESSED above 16k
    auto zip = DecodeSpaceFlags(1 | (SizeShift(zip_size) << 1) | (1u << 5) | (old_pssize << 6));
    if (zip.ok() && zip->physical_size == zip_size && zip->logical_size == logical) out.push_back(*zip);
  }
  return out;
}

PageCheck CheckPageWithAny(const uint8_t* page, const std::vector<SpaceFlags>& candidates, uint32_t page_no) {
  PageCheck first;
  first.detail = "no valid page format for this page size";
  for (size_t i = 0; i < candidates.size(); i++) {
    PageCheck c = CheckPage(page, candidates[i], page_no);
    if (c.verdict != PageVerdict::kCorrupt) return c;
    if (i == 0) first = c;
  }
  return first;
}

PageCheck CheckPageOfUnknownFormat(const uint8_t* window, uint32_t logical, uint32_t window_no) {
  const PageCheck whole = CheckPageWithAny(window, PossibleSpaceFlags(logical, 0), window_no);
  if (whole.verdict != PageVerdict::kCorrupt) return whole;
  // ROW_FORMAT=COMPRESSED: KEY_BLOCK_SIZE 16, 8, 4, 2, 1 KiB, at most the
  // logical page (4k pages take KEY_BLOCK_SIZE=4): logical / zip whole
  // compressed pages in the window, each sound or all zero.
  for (uint32_t zip = 16384; zip >= 1024; zip /= 2) {
    if (zip > logical) continue;
    const auto zf = PossibleSpaceFlags(logical, zip);
    if (zf.empty()) continue;
    const uint32_t per = logical / zip;
    bool sound = true;
    for (uint32_t k = 0; k < per && sound; k++) {
      sound = CheckPage(window + k * zip, zf.front(), window_no * per + k).verdict != PageVerdict::kCorrupt;
    }
    if (sound) {
      PageCheck ok;
      ok.verdict = PageVerdict::kOk;
      return ok;
    }
  }
  return whole;
}

void StampPageChecksum(uint8_t* page, const SpaceFlags& flags) {
  if (flags.full_crc32) {
    const size_t size = flags.logical_size;
    std::memcpy(page + size - kFilPageFcrc32EndLsn, page + kFilPageLsn + 4, 4);
    util::StoreBE32(page + size - kFilPageFcrc32Checksum,
                    util::crc32c::Value(page, size - kFilPageFcrc32Checksum));
    return;
  }
  if (flags.zip()) {
    util::StoreBE32(page + kFilPageSpaceOrChecksum, ZipCrc32(page, flags.physical_size));
    return;
  }
  const size_t size = flags.logical_size;
  std::memcpy(page + size - kFilPageEndLsnOldChecksum + 4, page + kFilPageLsn + 4, 4);
  const uint32_t crc = PageCrc32(page, size);
  util::StoreBE32(page + kFilPageSpaceOrChecksum, crc);
  util::StoreBE32(page + size - kFilPageEndLsnOldChecksum, crc);
}

uint32_t PostEncryptionChecksum(const uint8_t* page, const SpaceFlags& flags) {
  return flags.zip() ? ZipCrc32(page, flags.physical_size) : PageCrc32(page, flags.physical_size);
}

uint32_t ExtentPages(uint32_t page_size) {
  // One MiB per extent up to 16k pages, then 64 pages.
  if (page_size >= 4096 && page_size <= 16384) return (1u << 20) / page_size;
  return 64;
}

bool InDoublewriteArea(uint32_t space_id, uint32_t page_no, uint32_t page_size) {
  const uint32_t e = ExtentPages(page_size);
  return space_id == 0 && page_no >= e && page_no < 3 * e;
}

}  // namespace xbak::innodb
