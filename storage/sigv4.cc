#include "xbak/storage/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "xbak/util/hex.h"
#include "xbak/util/utc_time.h"

namespace xbak::storage {

std::string HmacSha256(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

namespace {

std::string Hmac(const std::string& key, const std::string& data) { return HmacSha256(key, data); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Leading and trailing blanks go; runs of blanks inside become one.
std::string TrimValue(const std::string& v) {
  std::string out;
  bool blank = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string Sha256Hex(const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, EVP_sha256(), nullptr);
  return util::HexBytes(out, n);
}

std::vector<std::string> SignV4(const SigV4Input& in, const SigV4Keys& keys, int64_t now) {
  const std::string amz_date = util::FormatUtc(now, "%Y%m%dT%H%M%SZ"), date = util::FormatUtc(now, "%Y%m%d");

  // Sorted by name alone (the point of this file), names lowercase.
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : in.headers) headers.emplace_back(Lower(name), TrimValue(value));
  headers.emplace_back("x-amz-date", amz_date);
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  const std::string canonical = in.method + "\n" + in.path + "\n" + in.query + "\n" + canonical_headers +
                                "\n" + signed_headers + "\n" + in.payload_hash;
  const std::string scope = date + "/" + keys.region + "/" + keys.service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical);
  std::string k = Hmac("AWS4" + keys.secret_key, date);
  k = Hmac(k, keys.region);
  k = Hmac(k, keys.service);
  k = Hmac(k, "aws4_request");
  const std::string mac = Hmac(k, to_sign);
  const std::string signature = util::HexBytes(reinterpret_cast<const uint8_t*>(mac.data()), mac.size());
  return {"x-amz-date: " + amz_date, "Authorization: AWS4-HMAC-SHA256 Credential=" + keys.access_key + "/" +
                                         scope + ", SignedHeaders=" + signed_headers +
                                         ", Signature=" + signature};
}

}  // namespace xbak::storage
