#include "xbak/storage/http_headers.h"

#include <cctype>

namespace xbak::storage {

std::string_view TrimHeaderValue(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

namespace {

// Takes a decimal number (at least one digit, below 2^63) from the front of *s.
std::optional<uint64_t> TakeNumber(std::string_view* s) {
  uint64_t v = 0;
  size_t n = 0;
  while (n < s->size() && (*s)[n] >= '0' && (*s)[n] <= '9') {
    if (v > (uint64_t{1} << 63) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>((*s)[n] - '0');
    n++;
  }
  if (n == 0 || v >= (uint64_t{1} << 63)) return std::nullopt;
  s->remove_prefix(n);
  return v;
}

bool TakeChar(std::string_view* s, char c) {
  if (s->empty() || s->front() != c) return false;
  s->remove_prefix(1);
  return true;
}

}  // namespace

std::optional<ContentRange> ParseContentRange(std::string_view value) {
  std::string_view s = TrimHeaderValue(value);
  if (s.size() < 6 || s.substr(0, 6) != "bytes ") return std::nullopt;
  s.remove_prefix(6);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  ContentRange r;
  auto first = TakeNumber(&s);
  if (!first || !TakeChar(&s, '-')) return std::nullopt;
  auto last = TakeNumber(&s);
  if (!last || !TakeChar(&s, '/')) return std::nullopt;
  r.first = *first;
  r.last = *last;
  if (r.first > r.last) return std::nullopt;
  if (s == "*") return r;
  auto size = TakeNumber(&s);
  if (!size || !s.empty() || r.last >= *size) return std::nullopt;
  r.size = size;
  return r;
}

std::string NormalizeEtag(std::string_view value) {
  std::string_view s = TrimHeaderValue(value);
  if (s.size() >= 2 && s.substr(0, 2) == "W/") s.remove_prefix(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace xbak::storage
