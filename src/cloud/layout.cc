#include "xbak/cloud/layout.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <tuple>

namespace xbak::cloud {
namespace {

constexpr size_t kSeqDigits = 20;

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHexMd5(std::string_view s, storage::Md5Digest* d) {
  if (s.size() != 32) return false;
  for (size_t i = 0; i < 16; i++) {
    int hi = HexVal(s[2 * i]), lo = HexVal(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*d)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace

Status CheckBackupName(std::string_view name) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "backup name '" + std::string(name) + "': " + why);
  };
  if (name.empty()) return bad("empty");
  if (name.size() > 512) return bad("longer than 512 characters");
  for (char c : name) {
    if (c <= ' ' || c >= 127) return bad("only printable ASCII without spaces is allowed");
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = std::min(name.find('/', start), name.size());
    std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return bad("parts between '/' must not be empty, '.' or '..'");
    start = end + 1;
  }
  return Status::Ok();
}

std::string DataObjectKey(std::string_view name, std::string_view path, uint64_t seq) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(seq));
  std::string key;
  key.reserve(name.size() + path.size() + 23);
  key.append(name).append("/").append(path).append(".").append(digits);
  return key;
}

std::string ManifestKey(std::string_view name) {
  return std::string(name) + "/" + std::string(kManifestName);
}

bool ParseDataObjectKey(std::string_view name, std::string_view key, std::string* path, uint64_t* seq) {
  if (key.size() < name.size() + 1 + 1 + 1 + kSeqDigits || key.substr(0, name.size()) != name ||
      key[name.size()] != '/') {
    return false;
  }
  std::string_view rest = key.substr(name.size() + 1);
  std::string_view digits = rest.substr(rest.size() - kSeqDigits);
  if (rest[rest.size() - kSeqDigits - 1] != '.') return false;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  if (!ParseU64(digits, seq)) return false;
  *path = std::string(rest.substr(0, rest.size() - kSeqDigits - 1));
  return !path->empty();
}

std::string Md5SidecarText(std::string_view key, const storage::Md5Digest& md5) {
  std::string_view base = key.substr(key.rfind('/') == std::string_view::npos ? 0 : key.rfind('/') + 1);
  return storage::Md5Hex(md5) + "  " + std::string(base) + "\n";
}

Result<storage::Md5Digest> ParseMd5Sidecar(std::string_view text, std::string_view key) {
  storage::Md5Digest d{};
  if (text.size() < 32 || !ParseHexMd5(text.substr(0, 32), &d) ||
      (text.size() > 32 && text[32] != ' ' && text[32] != '\n')) {
    return Error(ErrorCode::kCorrupt,
                 "md5 sidecar of " + std::string(key) + " does not start with 32 hex digits");
  }
  return d;
}

std::string EncodeManifest(const std::vector<ManifestEntry>& entries) {
  std::vector<const ManifestEntry*> sorted;
  sorted.reserve(entries.size());
  for (const auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const ManifestEntry* a, const ManifestEntry* b) {
    return std::tie(a->path, a->seq) < std::tie(b->path, b->seq);
  });
  std::string out = "xbcloud-manifest 1\n";
  for (const ManifestEntry* e : sorted) {
    out += storage::Md5Hex(e->md5) + " " + std::to_string(e->size) + " " + std::to_string(e->seq) + " " +
           e->path + "\n";
  }
  out += "end " + std::to_string(entries.size()) + "\n";
  return out;
}

Result<std::vector<ManifestEntry>> ParseManifest(std::string_view text) {
  std::vector<ManifestEntry> entries;
  size_t line_no = 0, pos = 0;
  bool ended = false;
  auto corrupt = [&](const std::string& why) {
    return Error(ErrorCode::kCorrupt, "manifest line " + std::to_string(line_no) + ": " + why);
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      line_no++;
      return corrupt("truncated (no end of line)");
    }
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    line_no++;
    if (ended) return corrupt("text after the end line");
    if (line_no == 1) {
      if (line != "xbcloud-manifest 1") return corrupt("not an xbcloud manifest (version 1)");
      continue;
    }
    if (line.starts_with("end ")) {
      uint64_t n = 0;
      if (!ParseU64(line.substr(4), &n) || n != entries.size()) {
        return corrupt("end line does not match the " + std::to_string(entries.size()) + " entries");
      }
      ended = true;
      continue;
    }
    // <md5> <size> <seq> <path>
    ManifestEntry e;
    size_t s1 = line.find(' ');
    size_t s2 = s1 == std::string_view::npos ? s1 : line.find(' ', s1 + 1);
    size_t s3 = s2 == std::string_view::npos ? s2 : line.find(' ', s2 + 1);
    if (s3 == std::string_view::npos) return corrupt("expected '<md5> <size> <seq> <path>'");
    if (!ParseHexMd5(line.substr(0, s1), &e.md5)) return corrupt("bad md5");
    if (!ParseU64(line.substr(s1 + 1, s2 - s1 - 1), &e.size)) return corrupt("bad size");
    if (!ParseU64(line.substr(s2 + 1, s3 - s2 - 1), &e.seq)) return corrupt("bad sequence number");
    e.path = std::string(line.substr(s3 + 1));
    if (e.path.empty()) return corrupt("empty path");
    entries.push_back(std::move(e));
  }
  if (line_no == 0) return Error(ErrorCode::kCorrupt, "manifest is empty");
  if (!ended) return Error(ErrorCode::kCorrupt, "manifest is truncated (no end line)");
  std::sort(entries.begin(), entries.end(), [](const ManifestEntry& a, const ManifestEntry& b) {
    return std::tie(a.path, a.seq) < std::tie(b.path, b.seq);
  });
  for (size_t i = 0; i < entries.size(); i++) {
    uint64_t want = (i > 0 && entries[i - 1].path == entries[i].path) ? entries[i - 1].seq + 1 : 0;
    if (entries[i].seq != want) {
      return Error(ErrorCode::kCorrupt,
                   "manifest: objects of " + entries[i].path + " are not numbered 0, 1, 2, ...");
    }
  }
  return entries;
}

}  // namespace xbak::cloud
