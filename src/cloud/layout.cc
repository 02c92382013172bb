#include "xbak/cloud/layout.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "xbak/storage/md5_multi.h"
#include "xbak/util/hex.h"

namespace xbak::cloud {
namespace {

constexpr size_t kSeqDigits = 20;

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseHexMd5(std::string_view s, storage::Md5Digest* d) {
  auto md5 = storage::Md5FromHex(s);
  if (md5) *d = *md5;
  return md5.has_value();
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

std::string StartedKey(std::string_view name) { return std::string(name) + "/" + std::string(kStartedName); }
std::string EncodeStartedMarker(const StartedMarker& m) {
  std::string out = "started " + std::to_string(m.started) + "\ntoken " + m.token + "\n";
  if (!m.lock_mode.empty()) out += "lock " + m.lock_mode + " " + std::to_string(m.lock_until) + "\n";
  if (!m.options.empty()) out += "options " + m.options + "\n";
  return out;
}

StartedMarker ParseStartedMarker(std::string_view text) {
  StartedMarker m;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    uint64_t n = 0;
    if (line.starts_with("started ") && ParseU64(line.substr(8), &n) && n <= uint64_t{INT64_MAX}) {
      m.started = static_cast<int64_t>(n);
    } else if (line.starts_with("token ")) {
      m.token = std::string(line.substr(6));
    } else if (line.starts_with("options ")) {
      m.options = std::string(line.substr(8));
    } else if (line.starts_with("lock ")) {
      size_t sp = line.find(' ', 5);
      if (sp != std::string_view::npos && ParseU64(line.substr(sp + 1), &n) && n <= uint64_t{INT64_MAX}) {
        m.lock_mode = std::string(line.substr(5, sp - 5));
        m.lock_until = static_cast<int64_t>(n);
      }
    }
  }
  return m;
}

std::string TombstoneText(int64_t unix_time) {
  return "xbcloud-deleting " + std::to_string(unix_time) + "\n";
}
bool IsTombstone(std::string_view manifest_text) { return manifest_text.starts_with("xbcloud-deleting "); }

std::string MarkerOwner(std::string_view key) {
  for (std::string_view marker : {kManifestName, kStartedName}) {
    if (key.size() > marker.size() + 1 && key.ends_with(marker) &&
        key[key.size() - marker.size() - 1] == '/') {
      return std::string(key.substr(0, key.size() - marker.size() - 1));
    }
  }
  return {};
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

uint64_t PieceCount(uint64_t size, uint64_t piece_bytes) {
  return piece_bytes == 0 ? 0 : size / piece_bytes + (size % piece_bytes != 0 ? 1 : 0);
}

ObjectDigests DigestObject(std::string_view body, uint64_t piece_bytes) {
  ObjectDigests d;
  size_t n = static_cast<size_t>(PieceCount(body.size(), piece_bytes));
  d.pieces.resize(n);
  if (!storage::Md5ManyIsVectorized()) {
    // The portable multi-message MD5 runs its messages one after the other;
    // OpenSSL's is faster for each.
    d.md5 = storage::Md5(body);
    for (size_t k = 0; k < n; k++) d.pieces[k] = storage::Md5(body.substr(k * piece_bytes, piece_bytes));
    return d;
  }
  std::vector<storage::Md5State> states(n + 1);
  std::vector<storage::Md5Step> steps(n + 1);
  steps[0] = {&states[0], {body}, true, &d.md5};  // the longest first: it keeps one lane all along
  for (size_t k = 0; k < n; k++) {
    steps[k + 1] = {&states[k + 1], {body.substr(k * piece_bytes, piece_bytes)}, true, &d.pieces[k]};
  }
  storage::Md5Advance(steps);
  return d;
}

const std::string* ManifestSummary::File(std::string_view path) const {
  for (const auto& [p, bytes] : files) {
    if (p == path) return &bytes;
  }
  return nullptr;
}

const std::string* ManifestSummary::Meta(backupdir::Meta m, std::string* name) const {
  for (const auto& [p, bytes] : files) {
    if (backupdir::IsMeta(p, m)) {
      if (name) *name = p;
      return &bytes;
    }
  }
  return nullptr;
}

namespace {

std::string EncodeSummary(const ManifestSummary& s) {
  std::string out = "started " + std::to_string(s.started) + "\nfinished " + std::to_string(s.finished) +
                    "\nfile-bytes " + std::to_string(s.file_bytes) + "\nstored-bytes " +
                    std::to_string(s.stored_bytes) + "\nobjects " + std::to_string(s.objects) + "\n";
  if (!s.encoding.empty()) out += "encoding " + s.encoding + "\n";
  if (!s.lock_mode.empty()) out += "lock " + s.lock_mode + " " + std::to_string(s.lock_until) + "\n";
  for (const auto& [path, bytes] : s.files) {
    out += "file " + path + " " +
           util::HexBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) + "\n";
  }
  return out;
}

}  // namespace

std::string EncodeManifest(const std::vector<ManifestEntry>& entries, const ManifestSummary* summary) {
  std::vector<const ManifestEntry*> sorted;
  sorted.reserve(entries.size());
  for (const auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const ManifestEntry* a, const ManifestEntry* b) {
    return std::tie(a->path, a->seq) < std::tie(b->path, b->seq);
  });
  // Version 2 if every object has its piece digests, of one piece size (as
  // every object of a version 2 manifest read back has).
  uint64_t piece_bytes = 0;
  bool v2 = true;
  for (const ManifestEntry* e : sorted) {
    if (e->piece_bytes == 0 || (piece_bytes != 0 && e->piece_bytes != piece_bytes) ||
        e->pieces.size() != PieceCount(e->size, e->piece_bytes)) {
      v2 = false;
      break;
    }
    piece_bytes = e->piece_bytes;
  }
  if (sorted.empty() && summary != nullptr) piece_bytes = kDigestPieceBytes;  // nothing to disagree
  if (piece_bytes == 0) v2 = false;
  std::string out = !v2                  ? "xbcloud-manifest 1\n"
                    : summary == nullptr ? "xbcloud-manifest 2\n"
                                         : "xbcloud-manifest 3\n" + EncodeSummary(*summary);
  if (v2) out += "pieces " + std::to_string(piece_bytes) + "\n";
  for (const ManifestEntry* e : sorted) {
    out += storage::Md5Hex(e->md5) + " " + std::to_string(e->size) + " " + std::to_string(e->seq) + " ";
    if (v2) {
      if (e->pieces.empty()) out += "-";  // an empty object (the check above: no other has none)
      for (const auto& piece : e->pieces) out += storage::Md5Hex(piece);
      out += " ";
    }
    out += e->path + "\n";
  }
  out += "end " + std::to_string(entries.size()) + "\n";
  return out;
}

namespace {

// What ParseManifest knows so far of the manifest it reads, line by line.
struct ManifestState {
  size_t line_no = 0;  // of the line being read, from 1
  bool ended = false;  // the end line was read: nothing may follow
  int version = 0;
  uint64_t piece_bytes = 0;  // version 2 and 3 only
  bool pieces_seen = false;  // the pieces line was read (versions 2 and 3)
  ManifestSummary summary;   // version 3
  std::vector<ManifestEntry> entries;

  // Every error of a line names it.
  Status Corrupt(const std::string& why) const {
    return Error(ErrorCode::kCorrupt, "manifest line " + std::to_string(line_no) + ": " + why);
  }
};

// Line 1.
Status ParseVersionLine(std::string_view line, ManifestState* m) {
  if (line == "xbcloud-manifest 1")
    m->version = 1;
  else if (line == "xbcloud-manifest 2")
    m->version = 2;
  else if (line == "xbcloud-manifest 3")
    m->version = 3;
  else
    return m->Corrupt("not an xbcloud manifest (version 1, 2 or 3)");
  return Status::Ok();
}

// A summary line of version 3, before the pieces line.
Status ParseSummaryLine(std::string_view line, ManifestState* m) {
  ManifestSummary& s = m->summary;
  uint64_t n = 0;
  auto number = [&](std::string_view field, size_t at) {
    return line.starts_with(field) && ParseU64(line.substr(at), &n) && n <= uint64_t{INT64_MAX};
  };
  // Times: up to the end of year 9999, which every formatter can print.
  constexpr uint64_t kMaxUnixTime = 253402300799;
  if (number("started ", 8) && n <= kMaxUnixTime) {
    s.started = static_cast<int64_t>(n);
  } else if (number("finished ", 9) && n <= kMaxUnixTime) {
    s.finished = static_cast<int64_t>(n);
  } else if (number("file-bytes ", 11)) {
    s.file_bytes = n;
  } else if (number("stored-bytes ", 13)) {
    s.stored_bytes = n;
  } else if (number("objects ", 8)) {
    s.objects = n;
  } else if (line.starts_with("lock ")) {
    size_t sp = line.find(' ', 5);
    std::string_view mode = line.substr(5, sp == std::string_view::npos ? 0 : sp - 5);
    if ((mode != "GOVERNANCE" && mode != "COMPLIANCE") || !ParseU64(line.substr(sp + 1), &n) ||
        n > kMaxUnixTime) {
      return m->Corrupt("expected 'lock GOVERNANCE|COMPLIANCE <unix time>'");
    }
    s.lock_mode = std::string(mode);
    s.lock_until = static_cast<int64_t>(n);
  } else if (line.starts_with("encoding ") && line.size() > 9 && line.size() < 100 &&
             line.find(' ', 9) == std::string_view::npos) {
    s.encoding = std::string(line.substr(9));
  } else if (line.starts_with("file ")) {
    size_t sp = line.find(' ', 5);
    if (sp == std::string_view::npos || sp == 5) return m->Corrupt("expected 'file <path> <hex>'");
    std::string_view hex = line.substr(sp + 1);
    if (s.files.size() >= 8 || hex.size() > 2 * kSummaryFileMax || hex.size() % 2 != 0) {
      return m->Corrupt("more or larger summary files than a put writes");
    }
    std::string bytes(hex.size() / 2, '\0');
    if (!util::ParseHexBytes(hex, reinterpret_cast<uint8_t*>(bytes.data()), bytes.size())) {
      return m->Corrupt("summary file is not hex");
    }
    s.files.emplace_back(std::string(line.substr(5, sp - 5)), std::move(bytes));
  } else {
    return m->Corrupt(
        "expected a summary line (started, finished, file-bytes, stored-bytes, objects, encoding, lock, "
        "file) or "
        "'pieces <bytes>'");
  }
  return Status::Ok();
}

// The pieces line (line 2 of version 2, after the summary in version 3).
Status ParsePiecesLine(std::string_view line, ManifestState* m) {
  m->pieces_seen = true;
  // A piece is what get holds of a download at a time, so not too
  // large; 4 KiB or more keeps the digests under 1% of the data.
  if (!line.starts_with("pieces ") || !ParseU64(line.substr(7), &m->piece_bytes) ||
      m->piece_bytes < (uint64_t{4} << 10) || m->piece_bytes > (uint64_t{64} << 20)) {
    return m->Corrupt("expected 'pieces <bytes>' (4 KiB to 64 MiB)");
  }
  return Status::Ok();
}

// "end <n>": the count makes a manifest cut at a line's end detectable.
Status ParseEndLine(std::string_view line, ManifestState* m) {
  uint64_t n = 0;
  if (!ParseU64(line.substr(4), &n) || n != m->entries.size()) {
    return m->Corrupt("end line does not match the " + std::to_string(m->entries.size()) + " entries");
  }
  m->ended = true;
  return Status::Ok();
}

// The <piece md5s> field of an entry of version 2 (e->size already read).
Status ParsePieceMd5s(std::string_view hex, ManifestEntry* e, const ManifestState& m) {
  e->piece_bytes = m.piece_bytes;
  if (e->size == 0) {
    if (hex != "-") return m.Corrupt("an empty object has no piece md5s ('-')");
    return Status::Ok();
  }
  // Checked before anything is allocated: the count comes from the size.
  if (hex.size() % 32 != 0 || hex.size() / 32 != PieceCount(e->size, m.piece_bytes)) {
    return m.Corrupt("expected " + std::to_string(PieceCount(e->size, m.piece_bytes)) + " piece md5s for " +
                     std::to_string(e->size) + " bytes");
  }
  e->pieces.resize(hex.size() / 32);
  for (size_t k = 0; k < e->pieces.size(); k++) {
    if (!ParseHexMd5(hex.substr(32 * k, 32), &e->pieces[k])) return m.Corrupt("bad piece md5");
  }
  return Status::Ok();
}

// <md5> <size> <seq> [<piece md5s>] <path>
Status ParseEntryLine(std::string_view line, ManifestState* m) {
  ManifestEntry e;
  size_t s1 = line.find(' ');
  size_t s2 = s1 == std::string_view::npos ? s1 : line.find(' ', s1 + 1);
  size_t s3 = s2 == std::string_view::npos ? s2 : line.find(' ', s2 + 1);
  size_t s4 = m->version == 1 || s3 == std::string_view::npos ? s3 : line.find(' ', s3 + 1);
  if (s4 == std::string_view::npos) {
    return m->Corrupt(m->version == 1 ? "expected '<md5> <size> <seq> <path>'"
                                      : "expected '<md5> <size> <seq> <piece md5s> <path>'");
  }
  if (!ParseHexMd5(line.substr(0, s1), &e.md5)) return m->Corrupt("bad md5");
  if (!ParseU64(line.substr(s1 + 1, s2 - s1 - 1), &e.size)) return m->Corrupt("bad size");
  if (!ParseU64(line.substr(s2 + 1, s3 - s2 - 1), &e.seq)) return m->Corrupt("bad sequence number");
  if (m->version >= 2) XBAK_RETURN_IF_ERROR(ParsePieceMd5s(line.substr(s3 + 1, s4 - s3 - 1), &e, *m));
  e.path = std::string(line.substr(s4 + 1));
  if (e.path.empty()) return m->Corrupt("empty path");
  m->entries.push_back(std::move(e));
  return Status::Ok();
}

// One line, m->line_no already its number. Which kind of line it is
// depends on its number and the version, except the end line.
Status ParseManifestLine(std::string_view line, ManifestState* m) {
  if (m->ended) return m->Corrupt("text after the end line");
  if (m->line_no == 1) return ParseVersionLine(line, m);
  if (m->version >= 2 && !m->pieces_seen) {
    if (m->version == 3 && !line.starts_with("pieces ")) return ParseSummaryLine(line, m);
    return ParsePiecesLine(line, m);
  }
  if (line.starts_with("end ")) return ParseEndLine(line, m);
  return ParseEntryLine(line, m);
}

// After the last line: a manifest cut before its end line is refused even
// when it is cut at a line's end.
Status CheckManifestComplete(const ManifestState& m) {
  if (m.line_no == 0) return Error(ErrorCode::kCorrupt, "manifest is empty");
  if (m.version >= 2 && !m.pieces_seen)
    return Error(ErrorCode::kCorrupt, "manifest is truncated (no pieces line)");
  if (!m.ended) return Error(ErrorCode::kCorrupt, "manifest is truncated (no end line)");
  return Status::Ok();
}

// Sorts by (path, seq) and checks that each path's objects are numbered
// 0, 1, 2, ... without gaps: in that order they are the file's xbstream.
Status SortAndCheckSequences(std::vector<ManifestEntry>* entries) {
  std::sort(entries->begin(), entries->end(), [](const ManifestEntry& a, const ManifestEntry& b) {
    return std::tie(a.path, a.seq) < std::tie(b.path, b.seq);
  });
  const std::vector<ManifestEntry>& sorted = *entries;
  for (size_t i = 0; i < sorted.size(); i++) {
    uint64_t want = (i > 0 && sorted[i - 1].path == sorted[i].path) ? sorted[i - 1].seq + 1 : 0;
    if (sorted[i].seq != want) {
      return Error(ErrorCode::kCorrupt,
                   "manifest: objects of " + sorted[i].path + " are not numbered 0, 1, 2, ...");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ManifestHead> ParseManifestHead(std::string_view text) {
  ManifestState m;
  ManifestHead head;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;  // cut by the range read: read more
    m.line_no++;
    XBAK_RETURN_IF_ERROR(ParseManifestLine(text.substr(pos, nl - pos), &m));
    pos = nl + 1;
    if (m.version == 1 || m.pieces_seen) {
      head.complete = true;
      break;
    }
  }
  head.version = m.version;
  head.summary = std::move(m.summary);
  return head;
}

Result<std::vector<ManifestEntry>> ParseManifest(std::string_view text, ManifestSummary* summary) {
  ManifestState m;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    m.line_no++;
    if (nl == std::string_view::npos) return m.Corrupt("truncated (no end of line)");
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    XBAK_RETURN_IF_ERROR(ParseManifestLine(line, &m));
  }
  XBAK_RETURN_IF_ERROR(CheckManifestComplete(m));
  XBAK_RETURN_IF_ERROR(SortAndCheckSequences(&m.entries));
  if (summary != nullptr) *summary = std::move(m.summary);
  return std::move(m.entries);
}

}  // namespace xbak::cloud
