// What --prepare needs to decrypt an encrypted backup and write it back
// encrypted as the server would: the file_key_management key file, the
// plugin's algorithm, and innodb_encrypt_tables, from the backup's
// backup-my.cnf (as mariabackup --prepare takes them), each of which the
// command line may override (the key file may live elsewhere on the host
// that prepares). The key file is read once; a backup with nothing encrypted
// never needs it, so a key file that cannot be read is only an error when a
// key is asked for. Keys never appear in messages.
#pragma once

#include <memory>
#include <string>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/key_file.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// --file-key-management-filename, --file-key-management-filekey,
// --file-key-management-encryption-algorithm ("" = as backup-my.cnf says).
struct KeyOptions {
  std::string filename;
  std::string filekey;  // "FILE:path" (or the password itself, not recommended)
  std::string algorithm;
};

class PrepareCrypt {
 public:
  // The settings of DIR/backup-my.cnf with `o` over them. nullptr when
  // neither names file_key_management nor a key file: a server without
  // encryption, or with another key management plugin, which xbak does not
  // read (its encrypted tablespaces are then refused by name).
  static Result<std::shared_ptr<const PrepareCrypt>> Load(const std::string& dir, const KeyOptions& o);

  innodb::CryptMode mode() const { return mode_; }
  bool encrypt_tables() const { return encrypt_tables_; }

  // The AES key of a tablespace's pages of `key_version`; errors name the
  // key id and the key file.
  Result<innodb::AesKey> SpaceKey(const innodb::CryptData& c, uint32_t key_version) const;
  // The key of an encrypted redo log.
  Result<innodb::AesKey> LogKey(const innodb::LogHeader& h) const;

 private:
  Result<const innodb::EncryptionKeys*> Keys() const;

  std::string origin_;  // the key file, for messages
  Status keys_status_;  // why the keys could not be loaded
  innodb::EncryptionKeys keys_;
  innodb::CryptMode mode_ = innodb::CryptMode::kCbc;
  bool encrypt_tables_ = false;
};

}  // namespace xbak::prepare
