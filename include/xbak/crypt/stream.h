// Encrypting and decrypting one file as a stream of bytes (format.h), on the
// calling thread: --decrypt, --extract --decrypt, and whatever reads an
// encrypted backup file. (The encrypting sink seals chunks on several
// threads with FileCipher directly.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xbak/crypt/cipher.h"
#include "xbak/crypt/format.h"
#include "xbak/crypt/key.h"
#include "xbak/util/status.h"

namespace xbak::crypt {

using ByteWriter = std::function<Status(const uint8_t* data, size_t n)>;

// The keys a reader may use, found by the id each file names (rotation: the
// old key and the new one side by side).
class KeyRing {
 public:
  void Add(std::unique_ptr<Key> key) { keys_.push_back(std::move(key)); }
  bool empty() const { return keys_.empty(); }
  // The key with this id, or an error naming the file, the id it wants and the ids at hand.
  Result<const Key*> Find(const KeyId& id, const std::string& origin) const;

 private:
  std::vector<std::unique_ptr<Key>> keys_;
};

// Opens an encrypted file from its first `n` bytes: parses the header,
// checks the name it carries against `expected_path` ("" accepts any), finds
// its key among `keys` and checks the header's tag, so that a wrong key or a
// changed header fails before any data is read. nullptr (no error) while the
// header is not whole yet; else the file's cipher, its header's length in
// *header_len. Errors name `origin`.
Result<std::unique_ptr<FileCipher>> OpenHeader(const uint8_t* data, size_t n, const KeyRing& keys,
                                               const std::string& origin, const std::string& expected_path,
                                               size_t* header_len);

class Encryptor {
 public:
  // `path`: the file's name in the backup (bound into every chunk).
  static Result<std::unique_ptr<Encryptor>> Create(const Key& key, Algorithm algorithm,
                                                   const BackupId& backup, const std::string& path,
                                                   size_t chunk_bytes, ByteWriter out);
  // The header is written by the first Write or by Finish.
  Status Write(const void* data, size_t n);
  // Seals what is pending and the end chunk.
  Status Finish();

 private:
  Encryptor() = default;
  Status Emit(bool last);
  std::unique_ptr<FileCipher> cipher_;
  ByteWriter out_;
  size_t chunk_bytes_ = kDefaultChunkBytes;
  std::vector<uint8_t> pending_;
  std::string sealed_;
  uint64_t next_index_ = 0;
  bool header_written_ = false;
};

class Decryptor {
 public:
  // `expected_path`: the name the header must carry (the file's name in the
  // backup without kEncryptedSuffix), so that a file renamed or moved inside
  // a backup is named; "" accepts any. `origin` names the file in messages.
  Decryptor(const KeyRing& keys, std::string origin, std::string expected_path, ByteWriter out);
  ~Decryptor();
  // Feeds encrypted bytes; plaintext goes to `out` one authenticated chunk at a time.
  Status Write(const void* data, size_t n);
  // End of the input: the end chunk must have been the last thing in it.
  Status Finish();
  // The header, once it has been read (nullptr before).
  const FileHeader* header() const { return cipher_ ? &cipher_->header() : nullptr; }
  uint64_t offset() const { return consumed_; }

 private:
  Status Step(bool* progressed);
  void Consume(size_t n);
  const KeyRing& keys_;
  std::string origin_;
  std::string expected_path_;
  ByteWriter out_;
  std::unique_ptr<FileCipher> cipher_;
  std::vector<uint8_t> buf_;  // bytes received; from pos_ on, not consumed yet
  size_t pos_ = 0;
  std::vector<uint8_t> plain_;
  uint64_t consumed_ = 0;  // file offset of buf_[pos_]
  uint64_t next_index_ = 0;
  bool ended_ = false;
  Status error_;  // sticky
};

}  // namespace xbak::crypt
