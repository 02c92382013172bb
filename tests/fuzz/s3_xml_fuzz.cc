// libFuzzer target: arbitrary bytes as an S3 response body, given to every
// S3 XML parser. Whatever the input, they must fail or succeed cleanly (no
// crash, no sanitizer report, no hang). The input also serves as a set of keys
// (split at NUL, which no key can hold in XML): escaping must round-trip any
// bytes, and a Delete request built from the keys must read back as the same
// keys through the real parser.
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/storage/aws_credentials.h"
#include "xbak/storage/s3_xml.h"

namespace {

// Renames a Delete request into a listing so that ParseListObjectsV2 reads it.
// Escaped keys cannot contain "<Object>", so plain replacement is exact.
std::string DeleteRequestAsListing(std::string xml) {
  // Copies into a new string: replacing in place would be quadratic in the number of keys.
  auto replace_all = [&xml](const std::string& from, const std::string& to) {
    std::string out;
    size_t done = 0;
    for (size_t p; (p = xml.find(from, done)) != std::string::npos; done = p + from.size()) {
      out.append(xml, done, p - done).append(to);
    }
    xml = out.append(xml, done);
  };
  replace_all("<Delete>", "<ListBucketResult>");
  replace_all("</Delete>", "</ListBucketResult>");
  replace_all("<Object>", "<Contents><Size>1</Size>");
  replace_all("</Object>", "</Contents>");
  return xml;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xbak::storage;
  std::string_view in(reinterpret_cast<const char*>(data), size);

  auto page = ParseListObjectsV2(in);
  if (page.ok() && page->truncated && page->next_token.empty()) abort();
  (void)ParseErrorBody(in);
  (void)ParseDeleteResult(in);
  (void)XmlUnescape(in);
  // STS's XML and the JSON of IMDS and credential_process: answers from the
  // network (or another program) turned into credentials.
  auto sts = ParseStsCredentials(in, "fuzz");
  if (sts.ok() && (sts->access_key.empty() || sts->expiration == 0)) abort();
  auto json = ParseJsonCredentials(std::string(in), "fuzz");
  if (json.ok() && (json->access_key.empty() || json->secret_key.empty())) abort();
  (void)ParseAwsIni(std::string(in), "fuzz");

  std::string_view k = in.substr(0, 4096);
  auto back = XmlUnescape(XmlEscape(k));
  if (!back.ok() || *back != k) abort();

  // A few dozen keys exercise the same paths as a thousand, at a fraction of the cost per run.
  std::vector<std::string> keys;
  for (size_t start = 0; start <= k.size() && keys.size() < 32;) {
    size_t nul = k.find('\0', start);
    if (nul == std::string_view::npos) nul = k.size();
    keys.emplace_back(k.substr(start, nul - start));
    start = nul + 1;
  }
  auto listed = ParseListObjectsV2(DeleteRequestAsListing(BuildDeleteRequest(keys)));
  if (!listed.ok() || listed->objects.size() != keys.size()) abort();
  for (size_t i = 0; i < keys.size(); i++) {
    if (listed->objects[i].key != keys[i]) abort();
  }
  return 0;
}
