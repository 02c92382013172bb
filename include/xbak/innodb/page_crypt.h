// MariaDB's data-at-rest encryption of pages (fil0crypt): AES in the two
// modes file_key_management offers, without padding, keyed per tablespace.
//  - The tablespace key is AES-ECB(plugin key, crypt data IV): always 16 bytes.
//  - A page's IV is LE32(space id) LE32(page number) LE64(page LSN).
//  - "CBC" encrypts the whole 16-byte blocks in CBC mode and XORs a last
//    partial block with AES-ECB(key, IV); "CTR" is plain AES-CTR.
//  - full_crc32 pages: key version in bytes 0..3, bytes 26..P-5 encrypted,
//    a CRC-32C of the encrypted page at P-4. Older pages: key version at
//    26..29 and the post-encryption checksum at 30..33, bytes 38..P-9
//    encrypted, header checksum and trailer of the plain page kept.
// The algorithm is recorded nowhere in the files: it comes from the server's
// file_key_management_encryption_algorithm (backup-my.cnf).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

enum class CryptMode { kCbc, kCtr };

// "aes_cbc" or "aes_ctr" (file_key_management_encryption_algorithm).
Result<CryptMode> ParseCryptMode(const std::string& algorithm);

using AesKey = std::array<uint8_t, 16>;

// AES-ECB(plugin_key, block): the key of a tablespace (block = its crypt data
// IV) or of the redo log (block = the log header's crypt message).
Result<AesKey> DeriveKey(const std::vector<uint8_t>& plugin_key, const uint8_t block[16]);

// En- or decrypts n bytes (in == out allowed) the way MariaDB's "no padding"
// AES does in `mode`.
Status AesNoPad(CryptMode mode, bool encrypt, const AesKey& key, const uint8_t iv[16], const uint8_t* in,
                uint8_t* out, size_t n);

// Decrypts an encrypted page (its key version field is not 0) of a
// tablespace `space_id` in place, leaving it as the server has it after a
// read: full_crc32 pages get key version 0 and the CRC-32C of the plain page
// (PAGE_COMPRESSED ones of their written size; they are then still to be
// decompressed); older ones key version and post-encryption checksum 0 (their
// own checksums were of the plain page). Older-format PAGE_COMPRESSED
// encrypted pages (type 37401) are kUnsupported.
Status DecryptPage(uint8_t* page, const SpaceFlags& flags, uint32_t space_id, const AesKey& key,
                   CryptMode mode);

// The inverse, as the server's flush writes a page (fil_encrypt_buf): a
// page stamped as plain (checksum and trailer set; full_crc32 PAGE_COMPRESSED
// pages as compressed, with their written size in the page type) gets
// `key_version`, its encrypted bytes and the checksum of what is written.
Status EncryptPage(uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t key_version,
                   const AesKey& key, CryptMode mode);

}  // namespace xbak::innodb
