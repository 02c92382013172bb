#include "xbak/prepare/prepare_crypt.h"

#include <cctype>

#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/log_crypt.h"
#include "xbak/util/ascii.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"

namespace xbak::prepare {

Result<std::shared_ptr<const PrepareCrypt>> PrepareCrypt::Load(const std::string& dir, const KeyOptions& o) {
  const std::string cnf_path = util::JoinPath(dir, backupdir::kBackupCnfFile);
  XBAK_ASSIGN_OR_RETURN(auto m, util::ReadOptionFile(cnf_path, {"mysqld"}));
  auto get = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second.value;
  };
  const std::string plugins = get("plugin-load") + ";" + get("plugin-load-add");
  const bool fkm = plugins.find("file_key_management") != std::string::npos;
  const bool debug_keys =
      !fkm && o.filename.empty() && plugins.find("debug_key_management") != std::string::npos;
  std::string filename = o.filename.empty() ? get("file-key-management-filename") : o.filename;
  if (filename.empty() && !fkm && !debug_keys) {
    // Another ENCRYPTION plugin (hashicorp, aws_key_management) or none.
    return std::shared_ptr<const PrepareCrypt>();
  }
  auto c = std::make_shared<PrepareCrypt>();
  const std::string algorithm =
      o.algorithm.empty() ? get("file-key-management-encryption-algorithm") : o.algorithm;
  auto mode = innodb::ParseCryptMode(algorithm);
  if (!mode.ok()) {
    return mode.status().With(o.algorithm.empty() ? cnf_path : "--file-key-management-encryption-algorithm");
  }
  c->mode_ = *mode;
  const std::string et = util::AsciiLower(get("innodb-encrypt-tables"));
  c->encrypt_tables_ = !(et.empty() || et == "0" || et == "off" || et == "false" || et == "no");
  if (et.empty()) {
    // A backup-my.cnf written before the server had the plugin (the full
    // backup of a chain, say): pages are then written back as with OFF,
    // which the server reads, and re-encrypts if it is configured to.
    util::LogWarning(cnf_path +
                     " does not say innodb_encrypt_tables: pages of tablespaces in the default mode "
                     "(not ENCRYPTED=YES) that the log changes are written back unencrypted");
  }
  if (debug_keys) {
    // The test plugin's keys need no file (key_file.h).
    c->keys_ = innodb::DebugKeyManagementKeys();
    c->origin_ = "debug_key_management";
    return std::shared_ptr<const PrepareCrypt>(std::move(c));
  }
  const std::string from = o.filename.empty() ? " (file_key_management_filename in " + cnf_path + ")" : "";
  if (filename.empty()) {
    c->keys_status_ =
        Error(ErrorCode::kNotFound, cnf_path +
                                        " loads file_key_management but names no key file: give "
                                        "--file-key-management-filename");
    return std::shared_ptr<const PrepareCrypt>(std::move(c));
  }
  c->origin_ = filename;
  const std::string filekey = o.filekey.empty() ? get("file-key-management-filekey") : o.filekey;
  auto keys = innodb::LoadKeyFile({filename, filekey});
  if (keys.ok()) {
    c->keys_ = std::move(keys).value();
  } else {
    c->keys_status_ = Error(keys.status().code(),
                            "cannot read the key file " + filename + from + ": " + keys.status().message() +
                                " (where the key file is elsewhere, give --file-key-management-filename and, "
                                "for an encrypted key file, --file-key-management-filekey=FILE:path)");
  }
  return std::shared_ptr<const PrepareCrypt>(std::move(c));
}

Result<const innodb::EncryptionKeys*> PrepareCrypt::Keys() const {
  if (!keys_status_.ok()) return keys_status_;
  return &keys_;
}

Result<innodb::AesKey> PrepareCrypt::SpaceKey(const innodb::CryptData& c, uint32_t key_version) const {
  XBAK_ASSIGN_OR_RETURN(const innodb::EncryptionKeys* keys, Keys());
  auto k = keys->Get(c.key_id, key_version);
  if (!k.ok()) return k.status();
  return innodb::DeriveKey(**k, c.iv.data());
}

Result<innodb::AesKey> PrepareCrypt::LogKey(const innodb::LogHeader& h) const {
  XBAK_ASSIGN_OR_RETURN(const innodb::EncryptionKeys* keys, Keys());
  return innodb::DeriveLogKey(h, *keys);
}

}  // namespace xbak::prepare
