// JSON text for machine-readable output (xbcloud list --json): only what
// writing needs, a string quoted and escaped per RFC 8259. Bytes that are
// not UTF-8 (an object key may hold any) are written as \u00XX of each
// byte, so the output is always valid JSON and keeps every byte apparent.
#pragma once

#include <string>
#include <string_view>

namespace xbak::util {

std::string JsonQuote(std::string_view s);

}  // namespace xbak::util
