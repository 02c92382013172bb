// Data-at-rest encryption metadata ("crypt data") on page 0 of a tablespace,
// as MariaDB 10.11 writes it (fil0crypt): after the extent descriptor array,
// a 6-byte magic, the scheme, a 16-byte IV, the minimum key version, the key
// id and the table's ENCRYPTED= mode. Page 0 itself is never encrypted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "xbak/innodb/page.h"

namespace xbak::innodb {

struct CryptData {
  uint8_t scheme = 0;  // 0: unencrypted, 1: pages may be encrypted
  std::array<uint8_t, 16> iv{};
  uint32_t min_key_version = 0;
  uint32_t key_id = 0;
  uint8_t mode = 0;  // 0: DEFAULT (innodb_encrypt_tables), 1: ENCRYPTED=YES, 2: ENCRYPTED=NO

  // True if pages of the tablespace may be (or become) encrypted.
  bool MayEncrypt() const { return scheme == 1 || mode == 1; }
};

inline constexpr uint8_t kCryptMagic[6] = {0x73, 0x0E, 0x0C, 0x52, 0x45, 0x74};
inline constexpr size_t kCryptDataSize = 33;

// Byte offset of the crypt data in page 0: after the XDES array of a page of
// `physical_size` (the ROW_FORMAT=COMPRESSED size, or the page size), whose
// entries are sized by the extent of the server's `logical_size`.
size_t CryptDataOffset(uint32_t logical_size, uint32_t physical_size);

// The crypt data of a page 0 with these flags; nullopt if it has none (a
// tablespace never encrypted and created without an ENCRYPTED= option).
std::optional<CryptData> ReadCryptData(const uint8_t* page0, const SpaceFlags& flags);

// The crypt data a WRITE record to page 0 sets, if it is the one the server
// logs whenever it (re)writes them (fil_space_crypt_t::write_page0): the 27
// bytes from the scheme to the mode, at CryptDataOffset + 6 for any physical
// size a tablespace of `logical_size` pages can have. Recovery takes the
// crypt data from exactly this record (fil_crypt_parse).
std::optional<CryptData> CryptDataFromWrite(uint32_t logical_size, uint32_t offset, const uint8_t* data,
                                            size_t length);

// Whether the server writes the pages of a tablespace with this crypt data
// encrypted (buf_page_encrypt): scheme 1, not ENCRYPTED=NO, and ENCRYPTED=YES
// or innodb_encrypt_tables on. Key version: the latest of its key.
bool EncryptsOnWrite(const CryptData& c, bool encrypt_tables);

// Whether a page of this type and number may be encrypted at all: never page
// 0, the TRX_SYS page (5) of the system tablespace, FSP_HDR and XDES pages,
// nor SPATIAL index pages in the older format (fil_space_encrypt_valid_page_type).
bool PageTypeMayEncrypt(const uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t page_no);

// Whether a page as read may be encrypted (buf_page_decrypt_after_read): not
// page 0, not the TRX_SYS page of the system tablespace, and its key version
// field set. Its post-encryption checksum then tells (CheckPage).
bool ClaimsEncryption(const uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t page_no);

// The key version field of a page (0: not encrypted): bytes 0..3 in the
// full_crc32 format, 26..29 in the older one. Meaningless for page 0.
uint32_t PageKeyVersion(const uint8_t* page, const SpaceFlags& flags);

}  // namespace xbak::innodb
