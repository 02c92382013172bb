// The cryptography of one encrypted file (format.h): its key derived from
// the backup key and the file id, the header tag, and chunks sealed and
// opened under their number. Seal and Open are const and thread-safe, so the
// chunks of one file can be sealed on several threads (the encrypting sink).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "xbak/crypt/format.h"
#include "xbak/crypt/key.h"
#include "xbak/util/status.h"

namespace xbak::crypt {

class FileCipher {
 public:
  // `key` must be the key the header names (its id is checked by the caller
  // that picks it); `origin` names the file in messages.
  static Result<std::unique_ptr<FileCipher>> Create(const Key& key, const FileHeader& header,
                                                    std::string origin);

  const FileHeader& header() const { return header_; }
  // The header as written: body then tag.
  const std::string& header_bytes() const { return header_bytes_; }
  size_t header_body_size() const { return body_size_; }
  // Checks a header's tag (the `kTagBytes` after its body): a wrong key or a
  // changed header fails here, before any chunk is read.
  Status CheckHeaderTag(const uint8_t* tag) const;

  // Appends chunk `index` (`last` for the end chunk, which is empty) to *out:
  // length, ciphertext, tag.
  Status Seal(uint64_t index, bool last, const uint8_t* in, size_t n, std::string* out) const;
  // The same into `out`, which holds SealedSize(n) bytes (not zeroed first:
  // every one is written).
  Status SealTo(uint64_t index, bool last, const uint8_t* in, size_t n, uint8_t* out) const;
  static size_t SealedSize(size_t n) { return kChunkHeaderBytes + n + kTagBytes; }
  // Opens the chunk whose ciphertext (`n` bytes) and tag are given, into `out`
  // (n bytes). `offset` is the chunk's byte offset in the file, for messages.
  Status Open(uint64_t index, bool last, const uint8_t* ciphertext, size_t n, const uint8_t* tag,
              uint8_t* out, uint64_t offset) const;

 private:
  FileCipher() = default;
  Status Run(bool encrypt, uint64_t nonce_index, const uint8_t* aad, size_t aad_len, const uint8_t* in,
             size_t n, uint8_t* out, uint8_t* tag) const;

  FileHeader header_;
  std::string origin_;
  std::string header_bytes_;
  size_t body_size_ = 0;
  std::array<uint8_t, 32> header_hash_{};
  std::unique_ptr<Key> file_key_;  // HKDF of the backup key: locked, wiped like it
};

}  // namespace xbak::crypt
