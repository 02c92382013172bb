#include "xbak/util/json.h"

#include <cstdio>

namespace xbak::util {
namespace {

// The length of the valid UTF-8 sequence at s[i] (1..4), or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and values above U+10FFFF are not UTF-8.
  if (n == 2 && c < 0xC2) return 0;
  if (n == 3 && ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) >= 0xA0))) return 0;
  if (n == 4 && ((c == 0xF0 && b(i + 1) < 0x90) || c > 0xF4 || (c == 0xF4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

}  // namespace

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = Utf8Length(s, i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (n == 1 && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      out += c;
    } else if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
      out += b;
    }
    i++;
  }
  return out + "\"";
}

}  // namespace xbak::util
