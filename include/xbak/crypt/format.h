// The encrypted-file format of xbak backups (`--encrypt`): one backup file X
// is stored as X.xbenc, a header and then chunks, each sealed with an AEAD
// (AES-256-GCM, or ChaCha20-Poly1305 where AES has no hardware support) under
// a key of its own file. docs/backup-encryption.md is the reference; this
// file is its one home in code.
//
//   header:  "XBAKENC1" | version 1 | algorithm | header length (u16 BE)
//            | chunk size (u32 BE) | key id (8) | backup id (16) | file id (16)
//            | path length (u16 BE) | path | header tag (16)
//   chunk:   plaintext length L (u32 BE) | L bytes of ciphertext | tag (16)
//   end:     a chunk with L = 0, sealed as the last one
//
// The file key is HKDF-SHA256(backup key, salt = file id, info = "xbak
// file key v1" | algorithm): random file ids give every file its own key, so
// chunk numbers can serve as nonces. Each chunk's associated data is
// SHA-256(header) | chunk number (u64 BE) | last (u8) | L (u32 BE): a chunk
// that is changed, moved, dropped, repeated, taken from another file or
// another backup fails its tag, and a file cut short lacks its end chunk. The
// header tag seals nothing under the nonce 2^64 - 1 with the header as
// associated data: a wrong key, or a changed header, fails before any data
// is read.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "xbak/crypt/key.h"
#include "xbak/util/status.h"

namespace xbak::crypt {

inline constexpr std::string_view kEncryptedSuffix = ".xbenc";
inline constexpr std::string_view kMagic = "XBAKENC1";
// The name file `name` of a backup is stored under when encrypted.
inline std::string EncryptedName(std::string_view name) {
  return std::string(name) + std::string(kEncryptedSuffix);
}
inline constexpr uint8_t kFormatVersion = 1;
inline constexpr size_t kTagBytes = 16;
inline constexpr size_t kChunkHeaderBytes = 4;
// A chunk's plaintext: at most this much (a length above it is damage, not a
// reason to allocate); the writer's default is kDefaultChunkBytes.
inline constexpr size_t kMaxChunkBytes = size_t{64} << 20;
inline constexpr size_t kDefaultChunkBytes = size_t{1} << 20;
inline constexpr size_t kMaxPathBytes = 4096;

enum class Algorithm : uint8_t { kAes256Gcm = 1, kChaCha20Poly1305 = 2 };
std::string_view AlgorithmName(Algorithm a);  // "AES256" (xtrabackup's name), "CHACHA20"
// --encrypt=AES256|CHACHA20 (case-insensitive); xtrabackup's AES128/AES192 are refused by name.
Result<Algorithm> ParseAlgorithm(std::string_view name);

using BackupId = std::array<uint8_t, 16>;
using FileId = std::array<uint8_t, 16>;

struct FileHeader {
  Algorithm algorithm = Algorithm::kAes256Gcm;
  uint32_t chunk_size = kDefaultChunkBytes;
  KeyId key_id{};
  BackupId backup_id{};
  FileId file_id{};
  std::string path;  // the file's name in the backup, without kEncryptedSuffix
};

// The header's bytes without its tag (what the tag and every chunk bind).
std::string EncodeHeaderBody(const FileHeader& h);

// Parses a header from the first `n` bytes of a file. kNotFound-like
// "need more" is reported as *need > n (nothing parsed yet); otherwise the
// header and, in *body_len, the length of its body (its tag follows).
// Errors name `origin`.
Result<FileHeader> ParseHeader(const uint8_t* data, size_t n, const std::string& origin, size_t* body_len,
                               size_t* need);

// Fresh random ids (OpenSSL's RAND_bytes).
Result<BackupId> NewBackupId();
Result<FileId> NewFileId();

}  // namespace xbak::crypt
