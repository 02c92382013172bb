// Values of the HTTP response headers the S3 driver acts on. They come from
// any server or proxy on the way, so they are parsed strictly: a value that
// is not exactly the expected form is treated as absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xbak::storage {

// `value` without the optional white space around a header field's value (RFC 9110 5.5: spaces and
// tabs), and without a line's CR LF.
std::string_view TrimHeaderValue(std::string_view value);

// Content-Range of a 206 answer: "bytes FIRST-LAST/SIZE" or "bytes FIRST-LAST/*"
// (RFC 9110 14.4), FIRST <= LAST < SIZE, decimal numbers below 2^63.
struct ContentRange {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> size;  // absent for "*"
};
std::optional<ContentRange> ParseContentRange(std::string_view value);

// An ETag as the driver compares it: without the quotes (and a weak "W/"
// prefix), surrounding white space, in lowercase.
std::string NormalizeEtag(std::string_view value);

}  // namespace xbak::storage
