// libFuzzer target: arbitrary bytes as the value of a Content-Range or ETag
// header (storage/http_headers.h). Whatever the input: no crash, no sanitizer
// report, and what is accepted keeps the promised shape.
#include <stdlib.h>

#include <cstdint>
#include <string_view>

#include "xbak/storage/http_headers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xbak::storage;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = ParseContentRange(in)) {
    if (r->first > r->last) abort();
    if (r->size && r->last >= *r->size) abort();
  }
  std::string etag = NormalizeEtag(in);
  if (etag.size() > in.size()) abort();
  for (char c : etag) {
    if (c >= 'A' && c <= 'Z') abort();
  }
  return 0;
}
