#include "xbak/storage/md5.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "xbak/util/hex.h"

namespace xbak::storage {

Md5Digest Md5(const void* data, size_t n) {
  Md5Digest d{};
  unsigned int len = 0;
  // EVP_Digest is one-shot and thread-safe; it fails only on allocation failure.
  if (EVP_Digest(data, n, d.data(), &len, EVP_md5(), nullptr) != 1 || len != d.size()) {
    throw std::runtime_error("OpenSSL EVP_Digest(MD5) failed");
  }
  return d;
}

std::string Md5Hex(const Md5Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(32);
  for (uint8_t b : d) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

std::optional<Md5Digest> Md5FromHex(std::string_view hex) {
  Md5Digest d{};
  if (!util::ParseHexBytes(hex, d.data(), d.size())) return std::nullopt;
  return d;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  // EVP_DecodeBlock skips white space and decodes padding as zero bytes:
  // check the alphabet and the padding first, then drop those bytes.
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') pad++;
  for (size_t i = 0; i + pad < text.size(); i++) {
    const char c = text[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/'))
      return std::nullopt;
  }
  std::string out(3 * (text.size() / 4), '\0');
  if (text.empty()) return out;
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0 || static_cast<size_t>(n) != out.size()) return std::nullopt;
  out.resize(out.size() - pad);
  // One text per bytes: unused low bits of the last character must be zero.
  if (Base64(out) != text) return std::nullopt;
  return out;
}

std::optional<Md5Digest> Md5FromBase64(std::string_view text) {
  auto bytes = Base64Decode(text);
  if (!bytes || bytes->size() != 16) return std::nullopt;
  Md5Digest d;
  std::copy(bytes->begin(), bytes->end(), d.begin());
  return d;
}

std::string Md5Base64(const Md5Digest& d) {
  return Base64(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

}  // namespace xbak::storage
