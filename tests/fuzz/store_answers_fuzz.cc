// libFuzzer target: arbitrary bytes as an answer of Azure Blob Storage or
// Google Cloud Storage (a List Blobs page, an HTTP date, an objects.list
// page, an upload's object resource, an error document, an OAuth token
// answer), and as base64. Whatever the input, each parser must fail or
// succeed cleanly (no crash, no sanitizer report, no hang), and what it
// accepts must hold what the drivers rely on.
#include <stdlib.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "xbak/storage/azure_xml.h"
#include "xbak/storage/gcs_store.h"
#include "xbak/storage/google_credentials.h"
#include "xbak/storage/md5.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xbak::storage;
  std::string_view in(reinterpret_cast<const char*>(data), size);

  for (auto* parse : {&ParseBlobList, &ParseGcsList}) {
    auto page = parse(in);
    if (!page.ok()) continue;
    for (size_t i = 1; i < page->objects.size(); i++) {
      if (page->objects[i - 1].key > page->objects[i].key) abort();  // handed on sorted
    }
  }
  const int64_t t = ParseHttpDate(in);
  if (t != 0 && ParseHttpDate(FormatHttpDate(t)) != t) abort();
  (void)GcsObjectMd5(in);
  (void)ParseGcsError(in);
  auto token = ParseGoogleToken(std::string(in), "fuzz");
  if (token.ok() && (token->access_token.empty() || token->expires_in <= 0)) abort();
  auto bytes = Base64Decode(in);
  if (bytes && Base64(*bytes) != in) abort();  // strict: one text per bytes
  return 0;
}
