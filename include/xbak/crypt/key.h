// The key of an encrypted backup (`--encrypt-key-file`, XBAK_ENCRYPT_KEY, or
// `encrypt-key` in an option file): 32 bytes for AES-256, as xtrabackup's
// key file holds them (`openssl rand -base64 24` gives 32 characters; one
// trailing newline is dropped). Never taken from the command line itself.
//
// The bytes live in one page of their own, locked in memory (never swapped
// out), left out of core dumps (MADV_DONTDUMP) and wiped when the Key goes.
// Messages name a key by its id (key_id.h), never by its bytes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "xbak/util/status.h"

namespace xbak::crypt {

inline constexpr size_t kKeyBytes = 32;
using KeyId = std::array<uint8_t, 8>;

class Key {
 public:
  // `bytes` must be kKeyBytes long; `origin` names where it came from, for messages.
  static Result<std::unique_ptr<Key>> FromBytes(std::string_view bytes, const std::string& origin);
  ~Key();
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;

  const uint8_t* data() const { return bytes_; }
  // The first 8 bytes of SHA-256("xbak key id" || key): stored in every
  // encrypted file, so that a wrong key is named before anything is read, and
  // keys can be rotated (each file says which key it needs).
  const KeyId& id() const { return id_; }
  const std::string& origin() const { return origin_; }

 private:
  Key(uint8_t* page, size_t page_size, std::string origin);
  uint8_t* page_;
  size_t page_size_;
  uint8_t* bytes_;
  KeyId id_{};
  std::string origin_;
};

// 16 lowercase hex digits.
std::string KeyIdHex(const KeyId& id);

// Reads a key file. Refused: a file that others than its owner may read or
// write (the key is the backup), a file of another size than 32 bytes (33
// with a trailing newline); the message names the file and never shows its
// content.
Result<std::unique_ptr<Key>> LoadKeyFile(const std::string& path);

// The key from environment variable `name`; nullptr (no error) when it is unset.
Result<std::unique_ptr<Key>> KeyFromEnvironment(const char* name);

}  // namespace xbak::crypt
