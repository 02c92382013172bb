// Percent-encoding of object keys and query values, the way AWS specifies
// it (RFC 3986 unreserved characters kept), which Azure and Google accept
// too: one encoder for every driver's URLs and signatures.
#pragma once

#include <string>
#include <string_view>

namespace xbak::storage {

// Every byte but A-Z a-z 0-9 - _ . ~ is %XX (and '/' too unless keep_slash).
std::string UriEncode(std::string_view s, bool keep_slash);

}  // namespace xbak::storage
