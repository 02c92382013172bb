#include "xbak/innodb/page_crypt.h"

#include <openssl/evp.h>

#include <cstring>
#include <memory>

#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using Ctx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

Status OneShot(const EVP_CIPHER* cipher, bool encrypt, const uint8_t* key, const uint8_t* iv,
               const uint8_t* in, uint8_t* out, size_t n) {
  Ctx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0, fin = 0;
  if (!ctx || EVP_CipherInit_ex(ctx.get(), cipher, nullptr, key, iv, encrypt ? 1 : 0) != 1 ||
      EVP_CIPHER_CTX_set_padding(ctx.get(), 0) != 1 ||
      EVP_CipherUpdate(ctx.get(), out, &len, in, static_cast<int>(n)) != 1 ||
      EVP_CipherFinal_ex(ctx.get(), out + len, &fin) != 1) {
    return Error(ErrorCode::kInternal, "AES operation failed (OpenSSL)");
  }
  return Status::Ok();
}

}  // namespace

Result<CryptMode> ParseCryptMode(const std::string& algorithm) {
  if (algorithm == "aes_cbc" || algorithm.empty()) return CryptMode::kCbc;  // the plugin's default
  if (algorithm == "aes_ctr") return CryptMode::kCtr;
  return Error(ErrorCode::kUnsupported, "file_key_management_encryption_algorithm '" + algorithm +
                                            "' is not one xbak knows (aes_cbc, aes_ctr)");
}

Result<AesKey> DeriveKey(const std::vector<uint8_t>& plugin_key, const uint8_t block[16]) {
  const EVP_CIPHER* c = plugin_key.size() == 16   ? EVP_aes_128_ecb()
                        : plugin_key.size() == 24 ? EVP_aes_192_ecb()
                        : plugin_key.size() == 32 ? EVP_aes_256_ecb()
                                                  : nullptr;
  if (c == nullptr)
    return Error(ErrorCode::kInvalidArgument,
                 "an encryption key of " + std::to_string(plugin_key.size()) + " bytes");
  AesKey k{};
  XBAK_RETURN_IF_ERROR(OneShot(c, true, plugin_key.data(), nullptr, block, k.data(), 16));
  return k;
}

Status AesNoPad(CryptMode mode, bool encrypt, const AesKey& key, const uint8_t iv[16], const uint8_t* in,
                uint8_t* out, size_t n) {
  if (mode == CryptMode::kCtr) return OneShot(EVP_aes_128_ctr(), encrypt, key.data(), iv, in, out, n);
  const size_t whole = n - n % 16;
  if (whole > 0) XBAK_RETURN_IF_ERROR(OneShot(EVP_aes_128_cbc(), encrypt, key.data(), iv, in, out, whole));
  if (whole < n) {
    // MariaDB's CBC without padding: the partial last block is XORed with
    // AES-ECB(key, IV), the same way in both directions.
    uint8_t mask[16];
    XBAK_RETURN_IF_ERROR(OneShot(EVP_aes_128_ecb(), true, key.data(), nullptr, iv, mask, 16));
    for (size_t i = whole; i < n; i++) out[i] = in[i] ^ mask[i - whole];
  }
  return Status::Ok();
}

namespace {

void PageIv(const uint8_t* page, uint32_t space_id, uint8_t iv[16]) {
  util::StoreLE32(iv, space_id);
  util::StoreLE32(iv + 4, util::LoadBE32(page + kFilPageOffset));
  const uint64_t lsn = util::LoadBE64(page + kFilPageLsn);
  for (int i = 0; i < 8; i++) iv[8 + i] = static_cast<uint8_t>(lsn >> (8 * i));
}

// The bytes a full_crc32 page's encryption and checksum cover: the page, or
// the written size of a PAGE_COMPRESSED one (kept in its page type).
Result<size_t> Fcrc32Extent(const uint8_t* page, size_t size) {
  const uint16_t type = util::LoadBE16(page + kFilPageType);
  if (!(type & kPageTypeFcrc32CompressedMarker)) return size;
  const size_t w = size_t{type & 0xFFu} << 8;
  if (w < 256 || w > size) {
    return Error(ErrorCode::kCorrupt, "PAGE_COMPRESSED page with written size " + std::to_string(w));
  }
  return w;
}

}  // namespace

Status DecryptPage(uint8_t* page, const SpaceFlags& flags, uint32_t space_id, const AesKey& key,
                   CryptMode mode) {
  const size_t size = flags.physical_size;
  uint8_t iv[16];
  if (flags.full_crc32) {
    XBAK_ASSIGN_OR_RETURN(size_t end, Fcrc32Extent(page, size));
    PageIv(page, space_id, iv);
    XBAK_RETURN_IF_ERROR(AesNoPad(mode, false, key, iv, page + 26, page + 26, end - 26 - 4));
    util::StoreBE32(page, 0);  // key version: a plain full_crc32 page has 0 here
    util::StoreBE32(page + end - 4, util::crc32c::Value(page, end - 4));
    return Status::Ok();
  }
  if (util::LoadBE16(page + kFilPageType) == kPageTypePageCompressedEncrypted) {
    return Error(ErrorCode::kUnsupported,
                 "encrypted PAGE_COMPRESSED pages of the older page format (innodb_checksum_algorithm other "
                 "than full_crc32) are not supported yet");
  }
  PageIv(page, util::LoadBE32(page + kFilPageSpaceId), iv);  // the older format takes it from the page
  const size_t end = size - 8;  // the last 8 bytes stay plain (ROW_FORMAT=COMPRESSED frames too)
  XBAK_RETURN_IF_ERROR(
      AesNoPad(mode, false, key, iv, page + kFilPageData, page + kFilPageData, end - kFilPageData));
  std::memset(page + kFilPageFileFlushLsn, 0, 8);  // key version and post-encryption checksum
  return Status::Ok();
}

Status EncryptPage(uint8_t* page, const SpaceFlags& flags, uint32_t space_id, uint32_t key_version,
                   const AesKey& key, CryptMode mode) {
  const size_t size = flags.physical_size;
  uint8_t iv[16];
  if (flags.full_crc32) {
    XBAK_ASSIGN_OR_RETURN(size_t end, Fcrc32Extent(page, size));
    PageIv(page, space_id, iv);
    util::StoreBE32(page, key_version);
    XBAK_RETURN_IF_ERROR(AesNoPad(mode, true, key, iv, page + 26, page + 26, end - 26 - 4));
    util::StoreBE32(page + end - 4, util::crc32c::Value(page, end - 4));
    return Status::Ok();
  }
  if (util::LoadBE16(page + kFilPageType) == kPageTypePageCompressed ||
      util::LoadBE16(page + kFilPageType) == kPageTypePageCompressedEncrypted) {
    return Error(ErrorCode::kUnsupported, "encrypting PAGE_COMPRESSED pages of the older page format");
  }
  PageIv(page, space_id, iv);
  const size_t end = size - 8;
  XBAK_RETURN_IF_ERROR(
      AesNoPad(mode, true, key, iv, page + kFilPageData, page + kFilPageData, end - kFilPageData));
  util::StoreBE32(page + kFilPageFileFlushLsn, key_version);
  util::StoreBE32(page + kFilPageFileFlushLsn + 4, PostEncryptionChecksum(page, flags));
  return Status::Ok();
}

}  // namespace xbak::innodb
