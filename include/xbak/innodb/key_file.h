// The key file of MariaDB's file_key_management plugin: lines "id;hexkey"
// (16, 24 or 32-byte AES keys; '#' comments), plain or encrypted by
// `openssl enc -aes-256-cbc -md sha1` with the password of
// file_key_management_filekey ("FILE:path" reads it from a file). Every key
// has version 1 with this plugin. Key bytes never appear in messages.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::innodb {

struct KeyFileOptions {
  std::string filename;  // file_key_management_filename
  std::string filekey;   // file_key_management_filekey: "", the password, or "FILE:path"
};

class EncryptionKeys {
 public:
  // The key of (id, version); kNotFound naming the id (and the file) if absent.
  Result<const std::vector<uint8_t>*> Get(uint32_t id, uint32_t version) const;
  size_t size() const { return keys_.size(); }

 private:
  friend Result<EncryptionKeys> ParseKeyFile(const std::string& text, const std::string& origin);
  friend EncryptionKeys DebugKeyManagementKeys();
  std::string origin_;
  std::map<uint32_t, std::vector<uint8_t>> keys_;  // file_key_management: every key is version 1
  std::vector<std::vector<uint8_t>> versions_;     // debug_key_management: key 1, version v at [v]
};

// Parses the plain text of a key file as the plugin does (a later line with
// the same id wins; key id 1 must exist). Errors name `origin`, the line and
// the column.
Result<EncryptionKeys> ParseKeyFile(const std::string& text, const std::string& origin);

// The keys of MariaDB's debug_key_management plugin, which its test suites
// (mariabackup's among them) run with: key id 1 only, each version v its own
// 16-byte key, v in big-endian order and 12 zero bytes, no file. Versions up
// to 4095.
EncryptionKeys DebugKeyManagementKeys();

// Reads the file (decrypting it when it starts with "Salted__"; then a
// filekey is required) and parses it.
Result<EncryptionKeys> LoadKeyFile(const KeyFileOptions& o);

}  // namespace xbak::innodb
