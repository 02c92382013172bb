#include "xbak/binlog/gtid.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace xbak::binlog {
namespace {

template <typename T>
bool Number(std::string_view s, T* out) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<Gtid> ParseGtid(std::string_view text) {
  const size_t a = text.find('-'), b = a == std::string_view::npos ? a : text.find('-', a + 1);
  Gtid g;
  if (b == std::string_view::npos || !Number(text.substr(0, a), &g.domain) ||
      !Number(text.substr(a + 1, b - a - 1), &g.server) || !Number(text.substr(b + 1), &g.seq)) {
    std::string what = "'";
    what.append(text.substr(0, 64));
    what += "' is not a GTID (DOMAIN-SERVER-SEQUENCE, e.g. 0-1-42)";
    return Error(ErrorCode::kInvalidArgument, what);
  }
  return g;
}

std::string FormatGtid(const Gtid& g) {
  return std::to_string(g.domain) + "-" + std::to_string(g.server) + "-" + std::to_string(g.seq);
}

Result<GtidPosition> ParseGtidPosition(std::string_view text) {
  GtidPosition p;
  text = Trim(text);
  if (text.empty()) return p;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string_view::npos) comma = text.size();
    XBAK_ASSIGN_OR_RETURN(Gtid g, ParseGtid(Trim(text.substr(at, comma - at))));
    if (std::any_of(p.begin(), p.end(), [&](const Gtid& x) { return x.domain == g.domain; })) {
      return Error(ErrorCode::kInvalidArgument, "GTID position '" + std::string(text.substr(0, 200)) +
                                                    "' names domain " + std::to_string(g.domain) + " twice");
    }
    p.push_back(g);
    at = comma + 1;
  }
  std::sort(p.begin(), p.end(), [](const Gtid& a, const Gtid& b) { return a.domain < b.domain; });
  return p;
}

std::string FormatGtidPosition(const GtidPosition& p) {
  std::string out;
  for (const Gtid& g : p) {
    if (!out.empty()) out += ',';
    out += FormatGtid(g);
  }
  return out;
}

void Advance(GtidPosition* p, const Gtid& g) {
  auto it = std::lower_bound(p->begin(), p->end(), g,
                             [](const Gtid& a, const Gtid& b) { return a.domain < b.domain; });
  if (it != p->end() && it->domain == g.domain) {
    *it = g;
  } else {
    p->insert(it, g);
  }
}

}  // namespace xbak::binlog
