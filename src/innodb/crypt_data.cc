#include "xbak/innodb/crypt_data.h"

#include <cstring>

#include "xbak/util/endian.h"

namespace xbak::innodb {

size_t CryptDataOffset(uint32_t logical_size, uint32_t physical_size) {
  // Pages per extent: 1 MiB extents up to 16 KiB pages, then 64 pages.
  const size_t extent = logical_size <= 16384 ? (size_t{1} << 20) / logical_size : 64;
  const size_t xdes_size = 24 + extent * 2 / 8;  // header + 2 bits per page
  // The XDES array holds one entry per extent of the page's own size; the
  // server adds the FIL header (38) twice on the way, which the format keeps.
  return kFilPageData + kFspHeaderEnd + xdes_size * physical_size / extent;
}

namespace {

// The 27 bytes after the magic: scheme, IV length (16), IV, minimum key
// version, key id, mode. The one reading of them, for page 0 and for the
// log record that writes them.
std::optional<CryptData> ParseFields(const uint8_t* f) {
  if (f[1] != 16) return std::nullopt;  // IV length: the server ignores other values too
  CryptData c;
  c.scheme = f[0];
  std::memcpy(c.iv.data(), f + 2, 16);
  c.min_key_version = util::LoadBE32(f + 18);
  c.key_id = util::LoadBE32(f + 22);
  c.mode = f[26];
  return c;
}

}  // namespace

std::optional<CryptData> ReadCryptData(const uint8_t* page0, const SpaceFlags& flags) {
  const size_t off = CryptDataOffset(flags.logical_size, flags.physical_size);
  if (off + kCryptDataSize > flags.physical_size) return std::nullopt;
  const uint8_t* p = page0 + off;
  if (std::memcmp(p, kCryptMagic, sizeof kCryptMagic) != 0) return std::nullopt;
  return ParseFields(p + sizeof kCryptMagic);
}

std::optional<CryptData> CryptDataFromWrite(uint32_t logical_size, uint32_t offset, const uint8_t* data,
                                            size_t length) {
  if (length != kCryptDataSize - sizeof kCryptMagic) return std::nullopt;
  bool at = offset == CryptDataOffset(logical_size, logical_size) + sizeof kCryptMagic;
  for (uint32_t zip = 1024; zip <= 16384 && zip < logical_size && !at; zip *= 2) {
    at = offset == CryptDataOffset(logical_size, zip) + sizeof kCryptMagic;
  }
  return at ? ParseFields(data) : std::nullopt;
}

bool EncryptsOnWrite(const CryptData& c, bool encrypt_tables) {
  return c.scheme != 0 && c.mode != 2 && (c.mode == 1 || encrypt_tables);
}

bool PageTypeMayEncrypt(const uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t page_no) {
  if (page_no == 0 || (space_id == 0 && page_no == 5)) return false;
  switch (util::LoadBE16(page + kFilPageType)) {
    case kPageTypeFspHdr:
    case kPageTypeXdes:
      return false;
    case kPageTypeRtree:
      return flags.full_crc32;
    default:
      return true;
  }
}

bool ClaimsEncryption(const uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t page_no) {
  return page_no != 0 && !(space_id == 0 && page_no == 5) && PageKeyVersion(page, flags) != 0;
}

uint32_t PageKeyVersion(const uint8_t* page, const SpaceFlags& flags) {
  return flags.full_crc32 ? util::LoadBE32(page) : util::LoadBE32(page + kFilPageFileFlushLsn);
}

}  // namespace xbak::innodb
