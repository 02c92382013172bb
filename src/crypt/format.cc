#include "xbak/crypt/format.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "xbak/util/endian.h"

namespace xbak::crypt {
namespace {

// Offsets of the fixed part of the header.
constexpr size_t kOffVersion = 8, kOffAlgorithm = 9, kOffHeaderLen = 10, kOffChunkSize = 12, kOffKeyId = 16,
                 kOffBackupId = 24, kOffFileId = 40, kOffPathLen = 56, kFixedBytes = 58;

template <size_t N>
Result<std::array<uint8_t, N>> RandomBytes(const char* what) {
  std::array<uint8_t, N> out{};
  if (RAND_bytes(out.data(), static_cast<int>(N)) != 1) {
    return Error(ErrorCode::kInternal,
                 std::string("no random bytes for a ") + what + " (OpenSSL RAND_bytes)");
  }
  return out;
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) { return a == Algorithm::kAes256Gcm ? "AES256" : "CHACHA20"; }

Result<Algorithm> ParseAlgorithm(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::toupper(c); });
  if (n == "AES256") return Algorithm::kAes256Gcm;
  if (n == "CHACHA20") return Algorithm::kChaCha20Poly1305;
  if (n == "AES128" || n == "AES192") {
    return Error(ErrorCode::kUnsupported,
                 "--encrypt=" + n + " is not supported: xbak encrypts with AES256 (AES-256-GCM) or CHACHA20");
  }
  return Error(ErrorCode::kInvalidArgument,
               "--encrypt: unknown algorithm '" + std::string(name) + "' (AES256 or CHACHA20)");
}

std::string EncodeHeaderBody(const FileHeader& h) {
  std::string out(kFixedBytes + h.path.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kMagic.data(), kMagic.size());
  p[kOffVersion] = kFormatVersion;
  p[kOffAlgorithm] = static_cast<uint8_t>(h.algorithm);
  util::StoreBE16(p + kOffHeaderLen, static_cast<uint16_t>(out.size() + kTagBytes));
  util::StoreBE32(p + kOffChunkSize, h.chunk_size);
  std::memcpy(p + kOffKeyId, h.key_id.data(), h.key_id.size());
  std::memcpy(p + kOffBackupId, h.backup_id.data(), h.backup_id.size());
  std::memcpy(p + kOffFileId, h.file_id.data(), h.file_id.size());
  util::StoreBE16(p + kOffPathLen, static_cast<uint16_t>(h.path.size()));
  std::memcpy(p + kFixedBytes, h.path.data(), h.path.size());
  return out;
}

Result<FileHeader> ParseHeader(const uint8_t* data, size_t n, const std::string& origin, size_t* body_len,
                               size_t* need) {
  *need = 0;
  if (n < kFixedBytes) {
    if (std::memcmp(data, kMagic.data(), std::min(n, kMagic.size())) != 0) {
      return Error(ErrorCode::kCorrupt,
                   origin + ": not an xbak encrypted file (no XBAKENC1 header at byte 0)");
    }
    *need = kFixedBytes;
    return FileHeader{};
  }
  if (std::memcmp(data, kMagic.data(), kMagic.size()) != 0) {
    return Error(ErrorCode::kCorrupt, origin + ": not an xbak encrypted file (no XBAKENC1 header at byte 0)");
  }
  if (data[kOffVersion] != kFormatVersion) {
    return Error(ErrorCode::kUnsupported,
                 origin + ": encrypted-file format version " + std::to_string(data[kOffVersion]) +
                     " (this xbak reads version " + std::to_string(kFormatVersion) + ")");
  }
  const uint8_t alg = data[kOffAlgorithm];
  if (alg != static_cast<uint8_t>(Algorithm::kAes256Gcm) &&
      alg != static_cast<uint8_t>(Algorithm::kChaCha20Poly1305)) {
    return Error(ErrorCode::kCorrupt, origin + ": unknown encryption algorithm " + std::to_string(alg) +
                                          " in the header (byte 9)");
  }
  const size_t path_len = util::LoadBE16(data + kOffPathLen);
  const size_t header_len = util::LoadBE16(data + kOffHeaderLen);
  if (path_len > kMaxPathBytes || header_len != kFixedBytes + path_len + kTagBytes) {
    return Error(ErrorCode::kCorrupt, origin + ": damaged header (header length " +
                                          std::to_string(header_len) + ", path length " +
                                          std::to_string(path_len) + ")");
  }
  const uint32_t chunk_size = util::LoadBE32(data + kOffChunkSize);
  if (chunk_size == 0 || chunk_size > kMaxChunkBytes) {
    return Error(ErrorCode::kCorrupt,
                 origin + ": damaged header (chunk size " + std::to_string(chunk_size) + " at byte 12)");
  }
  if (n < kFixedBytes + path_len) {
    *need = kFixedBytes + path_len;
    return FileHeader{};
  }
  FileHeader h;
  h.algorithm = static_cast<Algorithm>(alg);
  h.chunk_size = chunk_size;
  std::memcpy(h.key_id.data(), data + kOffKeyId, h.key_id.size());
  std::memcpy(h.backup_id.data(), data + kOffBackupId, h.backup_id.size());
  std::memcpy(h.file_id.data(), data + kOffFileId, h.file_id.size());
  h.path.assign(reinterpret_cast<const char*>(data + kFixedBytes), path_len);
  *body_len = kFixedBytes + path_len;
  return h;
}

Result<BackupId> NewBackupId() { return RandomBytes<16>("backup id"); }
Result<FileId> NewFileId() { return RandomBytes<16>("file id"); }

}  // namespace xbak::crypt
