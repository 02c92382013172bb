#include "xbak/crypt/cipher.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <cstring>

#include "xbak/util/endian.h"

namespace xbak::crypt {
namespace {

constexpr uint64_t kHeaderNonce = ~uint64_t{0};  // never a chunk number
constexpr size_t kNonceBytes = 12;
constexpr size_t kAadBytes = 32 + 8 + 1 + 4;

const EVP_CIPHER* CipherOf(Algorithm a) {
  return a == Algorithm::kAes256Gcm ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
}

// HKDF-SHA256(backup key, salt = file id, info = label | algorithm).
Result<std::unique_ptr<Key>> DeriveFileKey(const Key& key, const FileHeader& h, const std::string& origin) {
  static constexpr char kInfo[] = "xbak file key v1";
  uint8_t info[sizeof kInfo];  // the label and the algorithm byte
  std::memcpy(info, kInfo, sizeof kInfo - 1);
  info[sizeof kInfo - 1] = static_cast<uint8_t>(h.algorithm);
  uint8_t out[kKeyBytes];
  size_t out_len = sizeof out;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  const bool ok =
      ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_salt(ctx, h.file_id.data(), static_cast<int>(h.file_id.size())) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_key(ctx, key.data(), static_cast<int>(kKeyBytes)) == 1 &&
      EVP_PKEY_CTX_add1_hkdf_info(ctx, info, static_cast<int>(sizeof info)) == 1 &&
      EVP_PKEY_derive(ctx, out, &out_len) == 1 && out_len == sizeof out;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    OPENSSL_cleanse(out, sizeof out);
    return Error(ErrorCode::kInternal, origin + ": deriving the file key failed (OpenSSL HKDF)");
  }
  auto fk = Key::FromBytes(std::string_view(reinterpret_cast<const char*>(out), sizeof out), origin);
  OPENSSL_cleanse(out, sizeof out);
  return fk;
}

}  // namespace

Result<std::unique_ptr<FileCipher>> FileCipher::Create(const Key& key, const FileHeader& header,
                                                       std::string origin) {
  if (header.path.size() > kMaxPathBytes) {
    return Error(ErrorCode::kInvalidArgument, origin + ": path too long for an encrypted file's header");
  }
  std::unique_ptr<FileCipher> c(new FileCipher());
  c->header_ = header;
  c->origin_ = std::move(origin);
  XBAK_ASSIGN_OR_RETURN(c->file_key_, DeriveFileKey(key, header, c->origin_));
  const std::string body = EncodeHeaderBody(header);
  c->body_size_ = body.size();
  unsigned hash_len = 0;
  if (EVP_Digest(body.data(), body.size(), c->header_hash_.data(), &hash_len, EVP_sha256(), nullptr) != 1) {
    return Error(ErrorCode::kInternal, c->origin_ + ": SHA-256 failed (OpenSSL)");
  }
  uint8_t tag[kTagBytes];
  XBAK_RETURN_IF_ERROR(c->Run(true, kHeaderNonce, reinterpret_cast<const uint8_t*>(body.data()), body.size(),
                              nullptr, 0, nullptr, tag));
  c->header_bytes_ = body + std::string(reinterpret_cast<const char*>(tag), kTagBytes);
  return c;
}

Status FileCipher::CheckHeaderTag(const uint8_t* tag) const {
  const auto* want = reinterpret_cast<const uint8_t*>(header_bytes_.data() + body_size_);
  if (CRYPTO_memcmp(tag, want, kTagBytes) != 0) {
    return Error(ErrorCode::kCorrupt,
                 origin_ + ": the header (bytes 0-" + std::to_string(body_size_ + kTagBytes - 1) +
                     ") fails authentication: the key has the right id but is not the one "
                     "this file was encrypted with, or the header was changed");
  }
  return Status::Ok();
}

Status FileCipher::Run(bool encrypt, uint64_t nonce_index, const uint8_t* aad, size_t aad_len,
                       const uint8_t* in, size_t n, uint8_t* out, uint8_t* tag) const {
  uint8_t nonce[kNonceBytes] = {};
  util::StoreBE64(nonce + 4, nonce_index);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return Error(ErrorCode::kInternal, "cannot allocate a cipher context (OpenSSL)");
  int len = 0;
  bool ok =
      EVP_CipherInit_ex(ctx, CipherOf(header_.algorithm), nullptr, nullptr, nullptr, encrypt ? 1 : 0) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, static_cast<int>(kNonceBytes), nullptr) == 1 &&
      EVP_CipherInit_ex(ctx, nullptr, nullptr, file_key_->data(), nonce, -1) == 1 &&
      EVP_CipherUpdate(ctx, nullptr, &len, aad, static_cast<int>(aad_len)) == 1;
  // In slices below INT_MAX: EVP lengths are ints (chunks are far smaller anyway).
  for (size_t done = 0; ok && done < n;) {
    const int step = static_cast<int>(std::min<size_t>(n - done, size_t{1} << 30));
    ok = EVP_CipherUpdate(ctx, out + done, &len, in + done, step) == 1;
    done += static_cast<size_t>(step);
  }
  if (ok && !encrypt) ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagBytes, tag) == 1;
  // For decryption, Final is where the tag is compared.
  const bool final_ok = ok && EVP_CipherFinal_ex(ctx, out + n, &len) == 1;
  if (final_ok && encrypt) ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagBytes, tag) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) return Error(ErrorCode::kInternal, origin_ + ": the cipher failed (OpenSSL)");
  if (!final_ok) return Error(ErrorCode::kCorrupt, "");  // the caller says which chunk
  return Status::Ok();
}

namespace {

void ChunkAad(const std::array<uint8_t, 32>& header_hash, uint64_t index, bool last, uint32_t n,
              uint8_t (&aad)[kAadBytes]) {
  std::memcpy(aad, header_hash.data(), 32);
  util::StoreBE64(aad + 32, index);
  aad[40] = last ? 1 : 0;
  util::StoreBE32(aad + 41, n);
}

}  // namespace

Status FileCipher::Seal(uint64_t index, bool last, const uint8_t* in, size_t n, std::string* out) const {
  const size_t at = out->size();
  out->resize(at + SealedSize(n));
  return SealTo(index, last, in, n, reinterpret_cast<uint8_t*>(out->data() + at));
}

Status FileCipher::SealTo(uint64_t index, bool last, const uint8_t* in, size_t n, uint8_t* out) const {
  if (n > kMaxChunkBytes || (last && n != 0) || (!last && n == 0) || index == kHeaderNonce) {
    return Error(ErrorCode::kInternal, origin_ + ": bad chunk to seal");
  }
  uint8_t aad[kAadBytes];
  ChunkAad(header_hash_, index, last, static_cast<uint32_t>(n), aad);
  util::StoreBE32(out, static_cast<uint32_t>(n));
  Status st = Run(true, index, aad, sizeof aad, in, n, out + kChunkHeaderBytes, out + kChunkHeaderBytes + n);
  if (!st.ok())
    return st.code() == ErrorCode::kCorrupt ? Error(ErrorCode::kInternal, origin_ + ": sealing failed") : st;
  return Status::Ok();
}

Status FileCipher::Open(uint64_t index, bool last, const uint8_t* ciphertext, size_t n, const uint8_t* tag,
                        uint8_t* out, uint64_t offset) const {
  uint8_t aad[kAadBytes];
  ChunkAad(header_hash_, index, last, static_cast<uint32_t>(n), aad);
  Status st = Run(false, index, aad, sizeof aad, ciphertext, n, out, const_cast<uint8_t*>(tag));
  if (st.code() == ErrorCode::kCorrupt) {
    OPENSSL_cleanse(out, n);  // nothing of a chunk that failed is handed on
    return Error(
        ErrorCode::kCorrupt,
        origin_ + ": chunk " + std::to_string(index) + " at byte " + std::to_string(offset) +
            (last ? " (the end chunk)" : "") +
            " fails authentication: it was changed, moved, dropped or repeated, or comes from another "
            "file or backup");
  }
  return st;
}

}  // namespace xbak::crypt
