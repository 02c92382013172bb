#include "xbak/innodb/key_file.h"

#include <openssl/evp.h>

#include <cctype>
#include <cstring>
#include <memory>

#include "xbak/util/file.h"
#include "xbak/util/hex.h"

namespace xbak::innodb {
namespace {

constexpr size_t kMaxKeyFile = 1 << 20;  // the plugin's limit
constexpr char kSalted[] = "Salted__";

// The password of an encrypted key file: the filekey itself, or the first
// line of the file "FILE:path" names (the plugin strips the line end and
// takes at most 256 bytes).
Result<std::string> FileKeyPassword(const std::string& filekey) {
  if (filekey.rfind("FILE:", 0) != 0) return filekey;
  const std::string path = filekey.substr(5);
  XBAK_ASSIGN_OR_RETURN(std::string p, util::ReadSmallFile(path, 4096));
  while (!p.empty() && (p.back() == '\n' || p.back() == '\r')) p.pop_back();
  if (p.size() > 256) {
    return Error(ErrorCode::kInvalidArgument,
                 "file_key_management_filekey " + path + ": the filekey is too long");
  }
  return p;
}

// OpenSSL `enc -aes-256-cbc -md sha1` output: "Salted__", 8 bytes of salt,
// then AES-256-CBC (PKCS#7 padding) with key and IV from EVP_BytesToKey(SHA-1,
// one iteration) of the password and salt - the derivation the plugin uses,
// which OpenSSL provides (deprecated for new files, needed to read these).
Result<std::string> DecryptKeyFile(const std::string& data, const std::string& password,
                                   const std::string& path) {
  if (data.size() < 16 + 16) return Error(ErrorCode::kCorrupt, path + ": encrypted key file too short");
  const auto* salt = reinterpret_cast<const unsigned char*>(data.data() + 8);
  unsigned char key[32], iv[16];
  if (EVP_BytesToKey(EVP_aes_256_cbc(), EVP_sha1(), salt,
                     reinterpret_cast<const unsigned char*>(password.data()),
                     static_cast<int>(password.size()), 1, key, iv) != 32) {
    return Error(ErrorCode::kInternal, path + ": deriving the key file's key failed");
  }
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(),
                                                                      EVP_CIPHER_CTX_free);
  std::string out(data.size(), '\0');
  int n1 = 0, n2 = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(data.data() + 16);
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  const bool ok = ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr, key, iv) == 1 &&
                  EVP_DecryptUpdate(ctx.get(), o, &n1, in, static_cast<int>(data.size() - 16)) == 1 &&
                  EVP_DecryptFinal_ex(ctx.get(), o + n1, &n2) == 1;
  OPENSSL_cleanse(key, sizeof key);
  if (!ok) return Error(ErrorCode::kInvalidArgument, path + ": cannot decrypt the key file (wrong filekey?)");
  out.resize(static_cast<size_t>(n1 + n2));
  return out;
}

}  // namespace

EncryptionKeys DebugKeyManagementKeys() {
  EncryptionKeys k;
  k.origin_ = "debug_key_management (key id 1 only)";
  k.versions_.resize(4096);
  for (uint32_t v = 1; v < k.versions_.size(); v++) {
    k.versions_[v].assign(16, 0);
    for (int b = 0; b < 4; b++) k.versions_[v][b] = static_cast<uint8_t>(v >> (24 - 8 * b));
  }
  return k;
}

Result<const std::vector<uint8_t>*> EncryptionKeys::Get(uint32_t id, uint32_t version) const {
  if (!versions_.empty() && id == 1 && version >= 1 && version < versions_.size()) return &versions_[version];
  auto it = keys_.find(id);
  if (it == keys_.end() || version != 1) {
    return Error(ErrorCode::kNotFound, "encryption key id " + std::to_string(id) + " version " +
                                           std::to_string(version) + " is not in " + origin_);
  }
  return &it->second;
}

Result<EncryptionKeys> ParseKeyFile(const std::string& text, const std::string& origin) {
  EncryptionKeys k;
  k.origin_ = origin;
  size_t pos = 0;
  for (int line = 1; pos < text.size(); line++) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t p = pos;
    auto bad = [&](const std::string& what) {
      return Error(ErrorCode::kInvalidArgument, origin + ": " + what + " at line " + std::to_string(line) +
                                                    ", column " + std::to_string(p - pos + 1));
    };
    while (p < end && std::isspace(static_cast<unsigned char>(text[p]))) p++;
    if (p == end || text[p] == '#') {
      pos = end + 1;
      continue;
    }
    uint64_t id = 0;
    const size_t digits = p;
    while (p < end && std::isdigit(static_cast<unsigned char>(text[p])) && id <= 0xFFFFFFFFu) {
      id = id * 10 + static_cast<uint64_t>(text[p++] - '0');
    }
    if (p == digits || p >= end || text[p] != ';') return bad("syntax error (expected id;hexkey)");
    if (id == 0 || id > 0xFFFFFFFFu) return bad("invalid key id");
    p++;
    std::vector<uint8_t> key;
    while (key.size() < 32 && p + 1 < end && util::HexDigitValue(text[p]) >= 0 &&
           util::HexDigitValue(text[p + 1]) >= 0) {
      key.push_back(
          static_cast<uint8_t>(util::HexDigitValue(text[p]) * 16 + util::HexDigitValue(text[p + 1])));
      p += 2;
    }
    if ((p < end && util::HexDigitValue(text[p]) >= 0) ||
        (key.size() != 16 && key.size() != 24 && key.size() != 32)) {
      return bad("invalid key (16, 24 or 32 bytes in hex)");
    }
    k.keys_[static_cast<uint32_t>(id)] = std::move(key);
    pos = end + 1;
  }
  if (!k.keys_.count(1)) return Error(ErrorCode::kInvalidArgument, origin + ": system key id 1 is missing");
  return k;
}

Result<EncryptionKeys> LoadKeyFile(const KeyFileOptions& o) {
  if (o.filename.empty()) {
    return Error(ErrorCode::kInvalidArgument, "file_key_management_filename is not set (no key file)");
  }
  XBAK_ASSIGN_OR_RETURN(std::string data, util::ReadSmallFile(o.filename, kMaxKeyFile));
  const bool salted = data.size() > 8 && data.compare(0, 8, kSalted) == 0;
  if (!salted) {
    if (!o.filekey.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   o.filename + ": a filekey is set but the key file is not encrypted (no Salted__ header)");
    }
    return ParseKeyFile(data, o.filename);
  }
  if (o.filekey.empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        o.filename + " is encrypted: file_key_management_filekey (the password, or FILE:path) is needed");
  }
  XBAK_ASSIGN_OR_RETURN(std::string password, FileKeyPassword(o.filekey));
  XBAK_ASSIGN_OR_RETURN(std::string plain, DecryptKeyFile(data, password, o.filename));
  auto keys = ParseKeyFile(plain, o.filename);
  OPENSSL_cleanse(plain.data(), plain.size());
  return keys;
}

}  // namespace xbak::innodb
