#include "xbak/storage/md5.h"

#include <openssl/evp.h>

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

std::string Md5Base64(const Md5Digest& d) {
  return Base64(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

}  // namespace xbak::storage
