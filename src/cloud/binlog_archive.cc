#include "xbak/cloud/binlog_archive.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

constexpr size_t kReadBytes = size_t{4} << 20;
// ArchivedBinlog::head_md5 covers this much of a file's start (or all of its
// first segment, when shorter).
constexpr size_t kHeadBytes = 512;
constexpr const char* kPassObject = "pass";

}  // namespace

std::optional<uint64_t> BinlogFileNumber(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return std::nullopt;
  uint64_t n = 0;
  for (size_t i = dot + 1; i < name.size(); i++) {
    if (name[i] < '0' || name[i] > '9' || n > (uint64_t{1} << 60)) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return n;
}

namespace {

std::optional<uint64_t> FileNumber(const std::string& name) { return BinlogFileNumber(name); }

// A file's first bytes with the format description's in-use flag clear, as
// the server leaves them when it closes the file (it clears the flag in
// place; the event's CRC32 is of the flag clear): the archive stores them so
// from the start, so that a file's segments are the closed file, byte for
// byte, whenever its first segment was stored.
std::string AsClosed(std::string head) {
  const size_t flags = binlog::kMagic.size() + 17;
  // (replace(), not operator[]=: GCC 12 -O2 warns about the latter here, wrongly.)
  if (head.size() > flags) head.replace(flags, 1, 1, static_cast<char>(head[flags] & ~binlog::kFlagInUse));
  return head;
}
storage::Md5Digest HeadMd5(std::string head) { return storage::Md5(AsClosed(std::move(head))); }

std::string Name(const std::string& base, uint64_t number, size_t digits) {
  std::string n = std::to_string(number);
  if (n.size() < digits) n.insert(0, digits - n.size(), '0');
  return base + "." + n;
}

// One file's archiving: reads it from where the archive stands, feeds the
// scanner, and stores segments cut at transaction ends.
class FilePush {
 public:
  FilePush(storage::EventLoop& loop, storage::ObjectStore& store, BinlogSource& source,
           const BinlogPushOptions& o, ArchivedBinlog state, BinlogPushReport* report)
      : loop_(loop), store_(store), source_(source), o_(o), state_(std::move(state)), report_(report) {}

  bool complete() const { return state_.complete; }
  uint64_t end() const { return state_.end(); }
  const ArchivedBinlog& state() const { return state_; }

  Status Run(bool closed) {
    const std::string& file = state_.file;
    binlog::Scanner scanner =
        state_.segments.empty() ? binlog::Scanner(file) : binlog::Scanner::Resume(file, state_.summary);
    const uint64_t start = state_.end();
    uint64_t read_at = start;
    std::string pending;  // the bytes from the next segment's start
    for (;;) {
      if (o_.stop && o_.stop()) return Status::Ok();  // what is stored is recorded in the state
      XBAK_ASSIGN_OR_RETURN(std::string chunk, source_.Read(file, read_at, kReadBytes));
      if (chunk.empty()) break;
      read_at += chunk.size();
      // Fed in slices, so that a segment is cut soon after it reaches its size.
      const size_t slice = std::clamp<uint64_t>(o_.segment_bytes / 8, 4096, kReadBytes);
      for (size_t at = 0; at < chunk.size(); at += slice) {
        const std::string_view piece = std::string_view(chunk).substr(at, slice);
        XBAK_RETURN_IF_ERROR(scanner.Feed(piece));
        pending.append(piece);
        if (scanner.summary().transaction_end - state_.end() >= o_.segment_bytes) {
          XBAK_RETURN_IF_ERROR(Store(scanner.summary(), &pending));
        }
      }
    }
    // Closed: a later file exists, or the file says it ends (rotate, or a
    // stop event: the server shut down cleanly).
    const bool ended = closed || scanner.summary().stopped || !scanner.summary().rotate_to.empty();
    if (Status fin = scanner.Finish(ended); !fin.ok()) {
      // A file the server had open when it crashed (its in-use flag still
      // set) may end in a torn write: what is whole is all there will be.
      if (!ended || !scanner.summary().in_use || fin.code() != ErrorCode::kCorrupt) return fin;
      state_.truncated = true;
      report_->warnings.push_back(fin.message() + ": the server crashed with it open; archived up to byte " +
                                  std::to_string(scanner.summary().transaction_end));
    }
    const binlog::FileSummary& s = scanner.summary();
    if (s.transaction_end > state_.end()) XBAK_RETURN_IF_ERROR(Store(s, &pending));
    if (ended) {
      state_.complete = true;
      state_.summary = s;
      XBAK_RETURN_IF_ERROR(
          PutSync(loop_, store_, BinlogStateKey(o_.prefix, o_.server_id, file), EncodeBinlogState(state_)));
      report_->completed.push_back(file);
    }
    return Status::Ok();
  }

  // The archived part must be this file's beginning (not an older file of
  // the same name).
  Status CheckSameFile() {
    if (state_.segments.empty()) return Status::Ok();
    XBAK_ASSIGN_OR_RETURN(std::string head, source_.Read(state_.file, 0, state_.head_bytes));
    if (head.size() != state_.head_bytes || HeadMd5(std::move(head)) != state_.head_md5) {
      return Error(ErrorCode::kInvalidArgument,
                   state_.file +
                       " on the server is not the file archived under that name (its first bytes differ: "
                       "was the binary log reset, RESET MASTER?); archive it under another prefix");
    }
    return Status::Ok();
  }

 private:
  // Stores [state_.end(), s.transaction_end) as a segment, its sidecar, then the state.
  Status Store(const binlog::FileSummary& s, std::string* pending) {
    const uint64_t offset = state_.end();
    const uint64_t size = s.transaction_end - offset;
    auto body = std::make_shared<const std::string>(offset == 0 ? AsClosed(pending->substr(0, size))
                                                                : pending->substr(0, size));
    pending->erase(0, size);
    const storage::Md5Digest md5 = storage::Md5(*body);
    if (offset == 0) {
      state_.head_bytes = std::min<uint64_t>(size, kHeadBytes);
      state_.head_md5 = HeadMd5(body->substr(0, state_.head_bytes));
    }
    const std::string key = BinlogSegmentKey(o_.prefix, o_.server_id, state_.file, offset);
    // (Killed after this PUT and before the state's, the next pass stores
    // the segment again under the same key: no duplicate.)
    Status put;
    store_.Put(key, body, md5, [&](Status st) {
      put = st;
      loop_.Stop();
    });
    loop_.Run();
    XBAK_RETURN_IF_ERROR(put);
    XBAK_RETURN_IF_ERROR(PutSync(loop_, store_, key + std::string(kMd5Suffix), Md5SidecarText(key, md5)));
    state_.segments.push_back({offset, size, md5});
    state_.summary = s;
    XBAK_RETURN_IF_ERROR(PutSync(loop_, store_, BinlogStateKey(o_.prefix, o_.server_id, state_.file),
                                 EncodeBinlogState(state_)));
    report_->segments++;
    report_->bytes += size;
    if (s.last_gtid) report_->last_gtid = s.last_gtid;
    return Status::Ok();
  }

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  BinlogSource& source_;
  const BinlogPushOptions& o_;
  ArchivedBinlog state_;
  BinlogPushReport* report_;
};

}  // namespace

std::string BinlogRoot(const std::string& prefix) {
  return (prefix.empty() ? "" : prefix + "/") + "binlogs/";
}
std::string BinlogDir(const std::string& prefix, uint32_t server_id) {
  return BinlogRoot(prefix) + std::to_string(server_id) + "/";
}
std::string BinlogStateKey(const std::string& prefix, uint32_t server_id, const std::string& file) {
  return BinlogDir(prefix, server_id) + file + "/state";
}
std::string BinlogSegmentKey(const std::string& prefix, uint32_t server_id, const std::string& file,
                             uint64_t offset) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(offset));
  return BinlogDir(prefix, server_id) + file + "/" + digits + ".seg";
}

namespace {

// What the archive holds for a server: its files (a level each) and gap
// markers, from one listing by delimiter (never every segment).
struct Listing {
  std::set<std::string> files, gaps;
  bool has_pass = false;
};
Result<Listing> ListArchive(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& dir) {
  Listing l;
  for (std::string token;;) {
    XBAK_ASSIGN_OR_RETURN(storage::ListResult page, ListSync(loop, store, dir, token, true));
    for (const auto& p : page.prefixes) l.files.insert(p.substr(dir.size(), p.size() - dir.size() - 1));
    for (const auto& obj : page.objects) {
      std::string name = obj.key.substr(dir.size());
      if (name.starts_with("gap-")) l.gaps.insert(std::move(name));
      if (name == kPassObject) l.has_pass = true;
    }
    if (page.next_token.empty()) return l;
    token = page.next_token;
  }
}

// A file's state, or none when it has none yet (a first segment stored
// without its state, by a pass killed between the two, is simply stored
// again: the same segment under the same key).
Result<std::optional<ArchivedBinlog>> ReadState(storage::EventLoop& loop, storage::ObjectStore& store,
                                                const BinlogPushOptions& o, const std::string& file) {
  return ReadBinlogState(loop, store, o.prefix, o.server_id, file);
}

// The gap before the server's first file `first` (of base `base`): the
// archive's last file of that series before it, if never completed, and the
// files between, which the server purged before they were stored. Records
// it (once) and returns what it covers ("" if none, or already recorded:
// then a warning in the report).
Result<std::string> FindGap(storage::EventLoop& loop, storage::ObjectStore& store, const BinlogPushOptions& o,
                            const Listing& listing, const std::string& first_file, BinlogPushReport* report) {
  const auto first = FileNumber(first_file);
  if (!first) return std::string();
  const std::string base = first_file.substr(0, first_file.rfind('.'));
  const size_t digits = first_file.size() - first_file.rfind('.') - 1;
  std::optional<uint64_t> last;
  for (const auto& a : listing.files) {
    const auto n = FileNumber(a);
    if (n && *n < *first && a.substr(0, a.rfind('.')) == base && (!last || *n > *last)) last = n;
  }
  if (!last) return std::string();
  XBAK_ASSIGN_OR_RETURN(auto st, ReadState(loop, store, o, Name(base, *last, digits)));
  const uint64_t from = st && st->complete ? *last + 1 : *last;
  if (from >= *first) return std::string();
  const std::string name = "gap-" + Name(base, from, digits) + "-" + Name(base, *first - 1, digits);
  std::string what = Name(base, from, digits) + " to " + Name(base, *first - 1, digits);
  if (st && !st->complete) what += " (" + st->file + " from byte " + std::to_string(st->end()) + ")";
  if (listing.gaps.count(name)) {
    report->warnings.push_back("binary logs " + what +
                               " are missing from the archive (a gap recorded earlier)");
    return std::string();
  }
  XBAK_RETURN_IF_ERROR(PutSync(loop, store, BinlogDir(o.prefix, o.server_id) + name,
                               "purged from the server before they were archived\n"));
  return what;
}

}  // namespace

Result<BinlogPushReport> PushBinlogs(storage::EventLoop& loop, storage::ObjectStore& store,
                                     BinlogSource& source, const BinlogPushOptions& o) {
  const int64_t began = static_cast<int64_t>(::time(nullptr));
  XBAK_ASSIGN_OR_RETURN(std::vector<std::string> files, source.Files());
  XBAK_ASSIGN_OR_RETURN(Listing listing, ListArchive(loop, store, BinlogDir(o.prefix, o.server_id)));
  BinlogPushReport report;
  BinlogPass pass{began, "", 0};
  bool stopped = false;
  std::string gap;
  if (!files.empty()) {
    XBAK_ASSIGN_OR_RETURN(gap, FindGap(loop, store, o, listing, files.front(), &report));
  }
  for (size_t i = 0; i < files.size(); i++) {
    if (o.stop && o.stop()) {
      stopped = true;
      break;
    }
    const std::string& file = files[i];
    ArchivedBinlog state;
    state.file = file;
    state.server_id = o.server_id;
    if (o.complete && o.complete->count(file)) {
      state = o.complete->at(file);
    } else if (listing.files.count(file)) {
      XBAK_ASSIGN_OR_RETURN(auto st, ReadState(loop, store, o, file));
      if (st) state = std::move(*st);
    }
    FilePush push(loop, store, source, o, std::move(state), &report);
    // Even a complete file is checked: after RESET MASTER the server writes
    // files of archived names again.
    XBAK_RETURN_IF_ERROR(push.CheckSameFile());
    if (!push.complete()) XBAK_RETURN_IF_ERROR(push.Run(i + 1 < files.size()));
    if (o.complete && push.complete() && !o.complete->count(file)) o.complete->emplace(file, push.state());
    pass.file = file;
    pass.offset = push.end();
  }
  stopped = stopped || (o.stop && o.stop());
  if (o.complete) {  // files the server purged are no longer asked about
    const std::set<std::string> present(files.begin(), files.end());
    std::erase_if(*o.complete, [&](const auto& kv) { return present.count(kv.first) == 0; });
  }
  if (gap.empty() && !stopped && !pass.file.empty()) {
    XBAK_RETURN_IF_ERROR(
        PutSync(loop, store, BinlogDir(o.prefix, o.server_id) + kPassObject, EncodeBinlogPass(pass)));
  }
  if (!gap.empty()) {
    return Error(ErrorCode::kNotFound,
                 "binary logs " + gap + " of server " + std::to_string(o.server_id) +
                     " were purged before they were archived: a restore cannot cross "
                     "them (recorded in the archive); raise binlog_expire_logs_seconds or "
                     "run binlog-push more often");
  }
  return report;
}

Result<std::optional<ArchivedBinlog>> ReadBinlogState(storage::EventLoop& loop, storage::ObjectStore& store,
                                                      const std::string& prefix, uint32_t server_id,
                                                      const std::string& file) {
  const std::string key = BinlogStateKey(prefix, server_id, file);
  auto text = GetSync(loop, store, key);
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) return std::optional<ArchivedBinlog>();
  if (!text.ok()) return text.status();
  XBAK_ASSIGN_OR_RETURN(ArchivedBinlog st, ParseBinlogState(*text, key));
  if (st.file != file || st.server_id != server_id)
    return Error(ErrorCode::kCorrupt,
                 key + ": the state of " + st.file + " of server " + std::to_string(st.server_id));
  return std::optional<ArchivedBinlog>(std::move(st));
}

Result<std::vector<uint32_t>> ListBinlogServers(storage::EventLoop& loop, storage::ObjectStore& store,
                                                const std::string& prefix) {
  const std::string dir = BinlogRoot(prefix);
  std::vector<uint32_t> ids;
  for (std::string token;;) {
    XBAK_ASSIGN_OR_RETURN(storage::ListResult page, ListSync(loop, store, dir, token, true));
    for (const auto& p : page.prefixes) {
      const std::string id = p.substr(dir.size(), p.size() - dir.size() - 1);
      if (id.empty() || id.size() > 10 || id.find_first_not_of("0123456789") != std::string::npos) continue;
      const uint64_t n = std::stoull(id);
      if (n <= UINT32_MAX && std::to_string(n) == id) ids.push_back(static_cast<uint32_t>(n));
    }
    if (page.next_token.empty()) break;
    token = page.next_token;
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<ServerArchive> ReadServerArchive(storage::EventLoop& loop, storage::ObjectStore& store,
                                        const std::string& prefix, uint32_t server_id) {
  const std::string dir = BinlogDir(prefix, server_id);
  XBAK_ASSIGN_OR_RETURN(Listing l, ListArchive(loop, store, dir));
  ServerArchive a;
  a.server_id = server_id;
  a.files.assign(l.files.begin(), l.files.end());
  // By base name, then number: mysql-bin.999999 comes before mysql-bin.1000000.
  std::stable_sort(a.files.begin(), a.files.end(), [](const std::string& x, const std::string& y) {
    const std::string bx = x.substr(0, x.rfind('.')), by = y.substr(0, y.rfind('.'));
    if (bx != by) return bx < by;
    return FileNumber(x).value_or(0) < FileNumber(y).value_or(0);
  });
  a.gaps.assign(l.gaps.begin(), l.gaps.end());
  if (l.has_pass) {
    const std::string key = dir + kPassObject;
    XBAK_ASSIGN_OR_RETURN(std::string text, GetSync(loop, store, key));
    XBAK_ASSIGN_OR_RETURN(a.pass, ParseBinlogPass(text, key));
  }
  return a;
}

Result<std::string> FetchBinlogSegment(storage::EventLoop& loop, storage::ObjectStore& store,
                                       const std::string& prefix, const ArchivedBinlog& file,
                                       const BinlogSegment& segment) {
  const std::string key = BinlogSegmentKey(prefix, file.server_id, file.file, segment.offset);
  XBAK_ASSIGN_OR_RETURN(std::string body, GetSync(loop, store, key));
  if (body.size() != segment.size || storage::Md5(body) != segment.md5) {
    return Error(ErrorCode::kCorrupt, key + " is damaged: " + std::to_string(body.size()) + " bytes, MD5 " +
                                          storage::Md5Hex(storage::Md5(body)) + ", where its state records " +
                                          std::to_string(segment.size) + " bytes, MD5 " +
                                          storage::Md5Hex(segment.md5));
  }
  return body;
}

}  // namespace xbak::cloud
