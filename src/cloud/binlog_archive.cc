#include "xbak/cloud/binlog_archive.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

constexpr size_t kReadBytes = size_t{4} << 20;
// ArchivedBinlog::head_md5 covers this much of a file's start (or all of its
// first segment, when shorter).
constexpr size_t kHeadBytes = 512;

// The file's number: the digits after its last '.' ("mysql-bin.000042" -> 42).
std::optional<uint64_t> FileNumber(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return std::nullopt;
  uint64_t n = 0;
  for (size_t i = dot + 1; i < name.size(); i++) {
    if (name[i] < '0' || name[i] > '9' || n > (uint64_t{1} << 60)) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return n;
}

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

  Status Run(bool closed) {
    const std::string& file = state_.file;
    XBAK_RETURN_IF_ERROR(CheckSameFile());
    binlog::Scanner scanner =
        state_.segments.empty() ? binlog::Scanner(file) : binlog::Scanner::Resume(file, state_.summary);
    const uint64_t start = state_.end();
    uint64_t read_at = start;
    std::string pending;  // the bytes from the next segment's start
    for (;;) {
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
    XBAK_RETURN_IF_ERROR(scanner.Finish(closed));
    const binlog::FileSummary& s = scanner.summary();
    if (closed && s.transaction_end != s.complete_bytes) {
      return Error(ErrorCode::kCorrupt, file + " at byte " + std::to_string(s.transaction_end) +
                                            ": the closed file ends inside a transaction");
    }
    if (s.transaction_end > state_.end()) XBAK_RETURN_IF_ERROR(Store(s, &pending));
    if (closed) {
      state_.complete = true;
      state_.summary = s;
      XBAK_RETURN_IF_ERROR(
          PutSync(loop_, store_, BinlogStateKey(o_.prefix, o_.server_id, file), EncodeBinlogState(state_)));
      report_->completed.push_back(file);
    }
    return Status::Ok();
  }

 private:
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

std::string BinlogDir(const std::string& prefix, uint32_t server_id) {
  return (prefix.empty() ? "" : prefix + "/") + "binlogs/" + std::to_string(server_id) + "/";
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

Result<BinlogPushReport> PushBinlogs(storage::EventLoop& loop, storage::ObjectStore& store,
                                     BinlogSource& source, const BinlogPushOptions& o) {
  XBAK_ASSIGN_OR_RETURN(std::vector<std::string> files, source.Files());
  XBAK_ASSIGN_OR_RETURN(auto listed, ListAllSync(loop, store, BinlogDir(o.prefix, o.server_id)));
  // The archive's files: those with a state object.
  std::map<uint64_t, std::string> archived;  // by number
  const std::string dir = BinlogDir(o.prefix, o.server_id);
  for (const auto& obj : listed) {
    const std::string rest = obj.key.substr(dir.size());
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.substr(slash + 1) != "state") continue;
    const std::string file = rest.substr(0, slash);
    if (auto n = FileNumber(file)) archived[*n] = file;
  }
  BinlogPushReport report;
  // A gap: files between the archive's last and the server's first, which
  // the server purged before they were stored.
  std::string gap;
  const auto first = files.empty() ? std::nullopt : FileNumber(files.front());
  auto before = first ? archived.lower_bound(*first) : archived.end();
  if (first && before != archived.begin()) {
    // The archive's last file before the server's first: if it was not
    // completed, its end is lost; files after it and before the server's
    // first are lost whole.
    --before;
    uint64_t from = before->first + 1;
    const std::string key = BinlogStateKey(o.prefix, o.server_id, before->second);
    XBAK_ASSIGN_OR_RETURN(std::string text, GetSync(loop, store, key));
    XBAK_ASSIGN_OR_RETURN(ArchivedBinlog last, ParseBinlogState(text, key));
    if (!last.complete) from = before->first;
    if (from < *first) {
      const std::string& f = files.front();
      const std::string base = f.substr(0, f.rfind('.'));
      const size_t digits = f.size() - f.rfind('.') - 1;
      gap = Name(base, from, digits) + " to " + Name(base, *first - 1, digits);
      if (!last.complete) gap += " (" + last.file + " from byte " + std::to_string(last.end()) + ")";
      XBAK_RETURN_IF_ERROR(
          PutSync(loop, store, dir + "gap-" + Name(base, from, digits) + "-" + Name(base, *first - 1, digits),
                  "purged from the server before they were archived\n"));
    }
  }
  for (size_t i = 0; i < files.size(); i++) {
    const std::string& file = files[i];
    ArchivedBinlog state;
    state.file = file;
    state.server_id = o.server_id;
    if (auto n = FileNumber(file); n && archived.count(*n)) {
      const std::string key = BinlogStateKey(o.prefix, o.server_id, file);
      XBAK_ASSIGN_OR_RETURN(std::string text, GetSync(loop, store, key));
      XBAK_ASSIGN_OR_RETURN(state, ParseBinlogState(text, key));
      if (state.complete) continue;
    }
    FilePush push(loop, store, source, o, std::move(state), &report);
    XBAK_RETURN_IF_ERROR(push.Run(i + 1 < files.size()));
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

}  // namespace xbak::cloud
