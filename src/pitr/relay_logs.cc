#include "xbak/pitr/relay_logs.h"

#include <algorithm>
#include <cstdio>

#include "xbak/cloud/binlog_archive.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::pitr {
namespace {

std::string RelayName(size_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s.%06zu", kRelayBase, n);
  return buf;
}

// Every domain the position at the backup's binlog offset has must agree
// with the backup's own GTID position: else this archive is not the one the
// backup was taken from (a file of the same name of another server, or one
// written again after RESET MASTER).
Status CheckStartState(const binlog::GtidPosition& at, const ReplayStart& start, const std::string& where) {
  if (start.gtid.empty()) return Status::Ok();  // an older backup without GTIDs: the offset alone
  for (const binlog::Gtid& g : at) {
    auto b = std::find_if(start.gtid.begin(), start.gtid.end(),
                          [&](const binlog::Gtid& x) { return x.domain == g.domain; });
    if (b == start.gtid.end() || *b != g) {
      return Error(ErrorCode::kInvalidArgument,
                   where + " holds GTID position " + binlog::FormatGtidPosition(at) +
                       " at the backup's offset " + std::to_string(start.position) +
                       ", but the backup records " + binlog::FormatGtidPosition(start.gtid) +
                       ": these are not the binary logs of the backed-up server (another server's files of "
                       "the same name, or written again after RESET MASTER)");
    }
  }
  return Status::Ok();
}

// The archive of the server that wrote the backup's binlog file: of those
// that hold a file of that name, the one whose state at that file's start
// does not contradict the backup's GTID position.
Result<cloud::ServerArchive> FindSource(storage::EventLoop& loop, storage::ObjectStore& store,
                                        const std::string& prefix, const ReplayStart& start) {
  XBAK_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, cloud::ListBinlogServers(loop, store, prefix));
  std::vector<cloud::ServerArchive> holding;
  for (uint32_t id : ids) {
    XBAK_ASSIGN_OR_RETURN(cloud::ServerArchive a, cloud::ReadServerArchive(loop, store, prefix, id));
    if (std::find(a.files.begin(), a.files.end(), start.file) != a.files.end())
      holding.push_back(std::move(a));
  }
  const std::string where = (prefix.empty() ? "" : prefix + "/") + "binlogs/";
  if (holding.empty()) {
    return Error(
        ErrorCode::kNotFound,
        "the binlog archive " + where + " has no " + start.file +
            " (the backup's binary log file) of any server" +
            (ids.empty() ? " (it is empty: is xbcloud binlog-push archiving this server under this prefix?)"
                         : ""));
  }
  if (holding.size() == 1 || start.gtid.empty()) return std::move(holding.front());
  for (auto& a : holding) {
    XBAK_ASSIGN_OR_RETURN(auto st, cloud::ReadBinlogState(loop, store, prefix, a.server_id, start.file));
    if (!st) continue;
    bool ok = true;
    for (const binlog::Gtid& g : st->summary.start_state) {
      for (const binlog::Gtid& b : start.gtid) ok = ok && !(b.domain == g.domain && b.seq < g.seq);
    }
    if (ok) return std::move(a);
  }
  return std::move(holding.front());
}

// Writes one archived file as a relay log, feeding the scanner as it goes.
class RelayWriter {
 public:
  RelayWriter(const RelayOptions& o, const ReplayStart& start, RelayLogs* out)
      : o_(o), start_(start), out_(out) {}

  bool done() const { return done_; }
  // Checks done after the first file: the backup's offset was a transaction boundary.
  Status CheckStart(const std::string& where, const binlog::FileSummary& first) {
    if (start_.position < binlog::kMagic.size() ||
        (start_.position != boundary_ &&
         !(before_.empty() && (first_begin_ == 0 || start_.position <= first_begin_)))) {
      return Error(ErrorCode::kInvalidArgument, "the backup's binary log offset " +
                                                    std::to_string(start_.position) + " in " + where +
                                                    " is not between two transactions");
    }
    binlog::GtidPosition at = first.start_state;
    for (const auto& g : before_) binlog::Advance(&at, g);
    XBAK_RETURN_IF_ERROR(CheckStartState(at, start_, where));
    out_->end_state = at;
    return Status::Ok();
  }

  Status Write(storage::EventLoop& loop, storage::ObjectStore& store, const cloud::ArchivedBinlog& file,
               bool first, util::Progress* progress) {
    first_ = first;
    const std::string name = RelayName(out_->names.size() + 1);
    const std::string path = util::JoinPath(o_.dir, name);
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(path));
    XBAK_RETURN_IF_ERROR(f.Truncate(0));
    out_->names.push_back(name);
    out_->files.push_back(file.file);
    for (uint32_t id : file.summary.server_ids) {
      if (std::find(out_->server_ids.begin(), out_->server_ids.end(), id) == out_->server_ids.end())
        out_->server_ids.push_back(id);
    }
    binlog::Scanner scanner(file.file);
    scanner.set_on_transaction([&](const binlog::Transaction& tx) { OnTransaction(file.file, tx); });
    uint64_t written = 0;
    for (const auto& seg : file.segments) {
      XBAK_ASSIGN_OR_RETURN(std::string body, cloud::FetchBinlogSegment(loop, store, o_.prefix, file, seg));
      XBAK_RETURN_IF_ERROR(f.Write(body.data(), body.size()));
      XBAK_RETURN_IF_ERROR(scanner.Feed(body));
      written += body.size();
      progress->AddDone(body.size());
      if (done_) break;
    }
    if (!done_) XBAK_RETURN_IF_ERROR(scanner.Finish(file.complete));
    if (done_) {
      XBAK_RETURN_IF_ERROR(f.Truncate(cut_));
      written = cut_;
    }
    out_->bytes += written;
    XBAK_RETURN_IF_ERROR(f.Close());
    if (first && start_.position > written && !done_) {
      return Error(ErrorCode::kNotFound, "the archive of " + file.file + " ends at byte " +
                                             std::to_string(written) + ", before the backup's offset " +
                                             std::to_string(start_.position) +
                                             " (binlog-push has not stored it yet?)");
    }
    return Status::Ok();
  }

 private:
  void OnTransaction(const std::string& file, const binlog::Transaction& tx) {
    if (done_) return;
    if (first_ && tx.begin < start_.position) {
      // Before the backup's point: its data is in the backup already.
      before_.push_back(tx.gtid);
      if (tx.end == start_.position) boundary_ = tx.end;
      last_before_time_ = tx.time;
      if (target_in_backup_) target_passed_ = true;
      if (o_.target.kind == Target::Kind::kGtid && tx.gtid == o_.target.gtid) target_in_backup_ = true;
      return;
    }
    if (target_in_backup_) {  // the backup ends just after the target: nothing to replay
      done_ = true;
      cut_ = tx.begin;
      return;
    }
    if (first_ && first_begin_ == 0) first_begin_ = tx.begin;
    const Verdict v = Judge(o_.target, tx);
    if (v == Verdict::kStop) {
      done_ = true;
      cut_ = tx.begin;
      return;
    }
    out_->transactions++;
    binlog::Advance(&out_->end_state, tx.gtid);
    binlog::Advance(&out_->replayed, tx.gtid);
    out_->last = tx;
    out_->last_file = file;
    if (v == Verdict::kIncludeLast) {
      done_ = true;
      cut_ = tx.end;
    }
  }

  const RelayOptions& o_;
  const ReplayStart& start_;
  RelayLogs* out_;
  bool first_ = false, done_ = false;
  uint64_t cut_ = 0, boundary_ = 0, first_begin_ = 0;
  std::vector<binlog::Gtid> before_;

 public:
  uint32_t last_before_time_ = 0;  // of the last transaction before the backup's offset
  bool target_in_backup_ = false;  // --to-gtid names a transaction the backup holds already
  bool target_passed_ = false;     // and transactions after it
};

// Where the archive ends, in words, and whether a time target past its last
// transaction is still exact (the last full pass began after the target).
Status EndOfArchive(const Target& t, const cloud::ServerArchive& a, const RelayLogs& r,
                    const std::string& where) {
  const std::string end = r.last ? "its last transaction is GTID " + binlog::FormatGtid(r.last->gtid) +
                                       " at " + FormatLocalTime(r.last->time) + " in " + r.last_file
                                 : "it holds nothing after the backup";
  switch (t.kind) {
    case Target::Kind::kLatest:
      return Status::Ok();
    case Target::Kind::kGtid:
      return Error(ErrorCode::kNotFound, "GTID " + binlog::FormatGtid(t.gtid) + " is not in the archive " +
                                             where + " after the backup's position (" + end + ")");
    case Target::Kind::kTime:
      if (a.pass && a.pass->time > t.time && !r.files.empty() && a.pass->file == r.files.back())
        return Status::Ok();
      return Error(
          ErrorCode::kNotFound,
          "the archive " + where + " cannot reach " + t.Describe() + " exactly: " + end +
              (a.pass ? ", and its last complete binlog-push pass began at " + FormatLocalTime(a.pass->time)
                      : std::string(", and no binlog-push pass has completed")) +
              ", so the server may have written more before the target. Give an earlier --to-time, or "
              "--latest for everything archived");
  }
  return Status::Ok();
}

}  // namespace

Result<RelayLogs> WriteRelayLogs(storage::EventLoop& loop, storage::ObjectStore& store, const RelayOptions& o,
                                 const ReplayStart& start) {
  XBAK_ASSIGN_OR_RETURN(cloud::ServerArchive a, FindSource(loop, store, o.prefix, start));
  const std::string where = cloud::BinlogDir(o.prefix, a.server_id);
  RelayLogs r;
  r.server_id = a.server_id;
  r.first_position = start.position;
  XBAK_RETURN_IF_ERROR(util::MakeDirs(o.dir));
  util::Progress progress("fetching binary logs", o.progress_interval);
  RelayWriter writer(o, start, &r);
  size_t i = std::find(a.files.begin(), a.files.end(), start.file) - a.files.begin();
  std::optional<uint64_t> prev;
  for (; i < a.files.size() && !writer.done(); i++) {
    const std::string& name = a.files[i];
    const auto number = cloud::BinlogFileNumber(name);
    if (prev && (!number || *number != *prev + 1 ||
                 name.substr(0, name.rfind('.')) != a.files[i - 1].substr(0, a.files[i - 1].rfind('.')))) {
      std::string gaps;
      for (const auto& g : a.gaps) gaps += " " + g;
      progress.Finish(false);
      return Error(ErrorCode::kNotFound,
                   "the archive " + where + " goes from " + a.files[i - 1] + " to " + name +
                       ": the files between are missing (purged before binlog-push stored "
                       "them" +
                       (gaps.empty() ? std::string(")") : "; recorded:" + gaps + ")") +
                       ", so no restore can go past " + a.files[i - 1]);
    }
    prev = number;
    XBAK_ASSIGN_OR_RETURN(auto state, cloud::ReadBinlogState(loop, store, o.prefix, a.server_id, name));
    if (!state) break;  // begun, no segment recorded yet: the archive ends before it
    progress.AddTotal(state->end(), 1);
    const bool first = r.files.empty();
    Status st = writer.Write(loop, store, *state, first, &progress);
    if (st.ok() && first) st = writer.CheckStart(where + name, state->summary);
    if (st.ok() && first && o.target.kind == Target::Kind::kTime &&
        writer.last_before_time_ > o.target.time) {
      st = Error(ErrorCode::kInvalidArgument, "the backup holds transactions committed after " +
                                                  o.target.Describe() + " (its last at " +
                                                  FormatLocalTime(writer.last_before_time_) +
                                                  "): restore from an older backup (--backup=NAME)");
    }
    if (st.ok() && writer.target_passed_) {
      st = Error(ErrorCode::kInvalidArgument, "the backup holds " + o.target.Describe() +
                                                  " and transactions after it: restore from an older backup "
                                                  "(--backup=NAME)");
    }
    if (!st.ok()) {
      progress.Finish(false);
      return st;
    }
    progress.FileDone();
    if (!state->complete && !writer.done() && i + 1 < a.files.size()) {
      progress.Finish(false);
      return Error(ErrorCode::kNotFound,
                   "the archive " + where + " holds " + name + " only up to byte " +
                       std::to_string(state->end()) +
                       " and later files follow: the rest of it "
                       "was purged before binlog-push stored it, so no restore can go past "
                       "that byte");
    }
    if (!state->complete) break;  // the file the server is writing: nothing after it yet
  }
  progress.Finish(true);
  if (r.files.empty()) {
    return Error(ErrorCode::kNotFound, "the archive " + where + start.file + " holds no segment yet");
  }
  if (!writer.done() && !writer.target_in_backup_) XBAK_RETURN_IF_ERROR(EndOfArchive(o.target, a, r, where));
  std::string index;
  for (const auto& n : r.names) index += util::JoinPath(o.dir, n) + "\n";
  XBAK_RETURN_IF_ERROR(
      util::WriteFileAtomic(util::JoinPath(o.dir, std::string(kRelayBase) + ".index"), index));
  return r;
}

}  // namespace xbak::pitr
