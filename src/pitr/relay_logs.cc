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

// The archives that hold a file of the backup's binlog file's name, the
// likeliest first: of a server that wrote a transaction of the backup's GTID
// position (the backed-up primary), then those whose state at that file's
// start does not contradict it. (A replica with log_slave_updates has files
// of the same names holding the same transactions at other offsets: which
// one the backup's offset belongs to, the check of the first file tells.)
Result<std::vector<cloud::ServerArchive>> FindSources(storage::EventLoop& loop, storage::ObjectStore& store,
                                                      const std::string& prefix, const ReplayStart& start) {
  XBAK_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, cloud::ListBinlogServers(loop, store, prefix));
  std::vector<std::pair<int, cloud::ServerArchive>> holding;
  for (uint32_t id : ids) {
    XBAK_ASSIGN_OR_RETURN(cloud::ServerArchive a, cloud::ReadServerArchive(loop, store, prefix, id));
    if (std::find(a.files.begin(), a.files.end(), start.file) == a.files.end()) continue;
    int rank = 2;
    for (const auto& g : start.gtid) rank = g.server == id ? 0 : rank;
    if (rank != 0) {
      XBAK_ASSIGN_OR_RETURN(auto st, cloud::ReadBinlogState(loop, store, prefix, id, start.file));
      bool ok = st.has_value();
      for (const binlog::Gtid& g : ok ? st->summary.start_state : binlog::GtidPosition()) {
        for (const binlog::Gtid& b : start.gtid) ok = ok && !(b.domain == g.domain && b.seq < g.seq);
      }
      rank = ok ? 1 : 2;
    }
    holding.emplace_back(rank, std::move(a));
  }
  if (holding.empty()) {
    const std::string where = cloud::BinlogRoot(prefix);
    return Error(
        ErrorCode::kNotFound,
        "the binlog archive " + where + " has no " + start.file +
            " (the backup's binary log file) of any server" +
            (ids.empty() ? " (it is empty: is xbcloud binlog-push archiving this server under this prefix?)"
                         : ""));
  }
  std::stable_sort(holding.begin(), holding.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<cloud::ServerArchive> out;
  for (auto& h : holding) out.push_back(std::move(h.second));
  return out;
}

// Writes one archived file as a relay log, feeding the scanner as it goes.
class RelayWriter {
 public:
  RelayWriter(const RelayOptions& o, const ReplayStart& start, RelayLogs* out)
      : o_(o), start_(start), out_(out) {}

  bool done() const { return done_; }
  // The target reached (or nothing to replay: the backup is at it).
  bool reached() const { return done_ || (target_in_backup_ && !target_passed_); }

  // Checks done after the first file: the backup's offset was a transaction
  // boundary of the backed-up server's binlog, and before the target.
  Status CheckFirst(const std::string& where, const binlog::FileSummary& first) {
    XBAK_RETURN_IF_ERROR(CheckStart(where, first));
    if (o_.target.kind == Target::Kind::kTime && last_before_time_ > o_.target.time) {
      return Error(ErrorCode::kInvalidArgument, "the backup holds transactions committed after " +
                                                    o_.target.Describe() + " (its last at " +
                                                    FormatLocalTime(last_before_time_) +
                                                    "): restore from an older backup (--backup=NAME)");
    }
    if (target_passed_) {
      return Error(ErrorCode::kInvalidArgument,
                   "the backup holds " + o_.target.Describe() +
                       " and transactions after it: restore from an older backup "
                       "(--backup=NAME)");
    }
    return Status::Ok();
  }

  Status CheckStart(const std::string& where, const binlog::FileSummary& first) {
    // (Between two transactions: after one's end, before the next one's GTID
    // event; other events, a binlog checkpoint, may be in between.)
    if (start_.position < binlog::kMagic.size() || inside_) {
      return Error(ErrorCode::kInvalidArgument, "the backup's binary log offset " +
                                                    std::to_string(start_.position) + " in " + where +
                                                    " is not between two transactions");
    }
    binlog::GtidPosition at = first.start_state;
    for (const auto& g : before_) binlog::Advance(&at, g);
    XBAK_RETURN_IF_ERROR(CheckStartState(at, start_, where));
    // What the first file replayed after the offset comes on top.
    out_->end_state = at;
    for (const auto& g : out_->replayed) binlog::Advance(&out_->end_state, g);
    return Status::Ok();
  }

  // `skip_to` (a file after a switchover): the file's transactions before
  // that offset were replayed from the other server's archive; the relay log
  // is the file's first events (format description, GTID list) and the
  // rest from there. (The SQL thread does not need a relay log's offsets to
  // be the source's: the IO thread's relay logs never are.)
  Status Write(storage::EventLoop& loop, storage::ObjectStore& store, const cloud::ArchivedBinlog& file,
               bool first, uint64_t skip_to, util::Progress* progress) {
    first_ = first;
    skip_ = first ? start_.position : skip_to;
    file_first_begin_ = 0;
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
    // (With skip_to: header, the bytes kept before the first transaction; tail, those after skip_to.)
    uint64_t written = 0, header = 0, tail = 0;
    for (const auto& seg : file.segments) {
      XBAK_ASSIGN_OR_RETURN(std::string body, cloud::FetchBinlogSegment(loop, store, o_.prefix, file, seg));
      XBAK_RETURN_IF_ERROR(scanner.Feed(body));
      if (!error_.ok()) return error_;
      progress->AddDone(body.size());
      if (skip_to == 0) {
        XBAK_RETURN_IF_ERROR(f.Write(body.data(), body.size()));
        written += body.size();
      } else {
        // Segments hold whole transactions: once one is fed, where the file's
        // first transaction begins is known if it has one; a segment in which
        // none began is all header (format description, GTID list, ...).
        const uint64_t s = seg.offset, e = seg.offset + body.size();
        const uint64_t head = file_first_begin_ != 0 ? file_first_begin_ : e;
        if (s < head) {
          const uint64_t n = std::min(e, head) - s;
          XBAK_RETURN_IF_ERROR(f.Write(body.data(), n));
          header += n;
        }
        if (e > skip_to) {
          const uint64_t from = std::max(s, skip_to);
          XBAK_RETURN_IF_ERROR(f.Write(body.data() + (from - s), e - from));
          tail += e - from;
        }
        written = header + tail;
      }
      if (done_) break;
    }
    if (!done_) XBAK_RETURN_IF_ERROR(scanner.Finish(file.complete));
    if (!error_.ok()) return error_;
    if (done_) {
      written = skip_to == 0 ? cut_ : header + (cut_ - skip_to);
      XBAK_RETURN_IF_ERROR(f.Truncate(written));
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
    if (file_first_begin_ == 0) file_first_begin_ = tx.begin;
    last_seen_ = tx;
    if (!first_ && tx.begin < skip_) return;  // replayed from the server before the switchover
    if (first_ && tx.begin < start_.position) {
      // Before the backup's point: its data is in the backup already.
      before_.push_back(tx.gtid);
      if (tx.end > start_.position) inside_ = true;
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
    if (o_.target.kind == Target::Kind::kGtid && tx.gtid.domain == o_.target.gtid.domain &&
        tx.gtid.seq >= o_.target.gtid.seq && tx.gtid != o_.target.gtid) {
      error_ = Error(ErrorCode::kNotFound,
                     o_.target.Describe() + " is not in the binary log: " + binlog::FormatGtid(tx.gtid) +
                         " (in " + file + " at byte " + std::to_string(tx.begin) +
                         ") comes where it would be; is the server id in the GTID right?");
      done_ = true;
      return;
    }
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
  uint64_t cut_ = 0;
  bool inside_ = false;  // the backup's offset is inside a transaction of its file
  uint64_t skip_ = 0, file_first_begin_ = 0;
  std::vector<binlog::Gtid> before_;

 public:
  uint32_t last_before_time_ = 0;                 // of the last transaction before the backup's offset
  bool target_in_backup_ = false;                 // --to-gtid names a transaction the backup holds already
  bool target_passed_ = false;                    // and transactions after it
  std::optional<binlog::Transaction> last_seen_;  // the last transaction read, replayed or not
  Status error_;                                  // found while scanning: ends the walk
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

struct Continuation {
  cloud::ServerArchive archive;
  size_t index = 0;     // the file that holds the transaction joined at
  uint64_t offset = 0;  // where that transaction ends in it
};

// The archive of another server (not yet followed) whose binlog holds
// transaction `last` and goes on after it: a replica promoted after a
// switchover (with log_slave_updates, as a failover candidate is set up).
// None if no archive does (the history ends here, or diverged).
Result<std::optional<Continuation>> FindContinuation(storage::EventLoop& loop, storage::ObjectStore& store,
                                                     const std::string& prefix,
                                                     const std::vector<uint32_t>& followed,
                                                     const binlog::Gtid& last) {
  XBAK_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, cloud::ListBinlogServers(loop, store, prefix));
  for (uint32_t id : ids) {
    if (std::find(followed.begin(), followed.end(), id) != followed.end()) continue;
    XBAK_ASSIGN_OR_RETURN(cloud::ServerArchive a, cloud::ReadServerArchive(loop, store, prefix, id));
    // The file that holds `last`: the last one whose GTID state at its start is before it.
    std::optional<cloud::ArchivedBinlog> holder;
    size_t index = 0;
    for (size_t k = 0; k < a.files.size(); k++) {
      XBAK_ASSIGN_OR_RETURN(auto st, cloud::ReadBinlogState(loop, store, prefix, id, a.files[k]));
      if (!st) break;
      uint64_t seq = 0;
      for (const auto& g : st->summary.start_state) {
        if (g.domain == last.domain) seq = g.seq;
      }
      if (seq >= last.seq) break;
      holder = std::move(*st);
      index = k;
    }
    if (!holder) continue;
    binlog::Scanner scanner(holder->file);
    std::optional<uint64_t> end;
    scanner.set_on_transaction([&](const binlog::Transaction& tx) {
      if (tx.gtid == last) end = tx.end;
    });
    for (const auto& seg : holder->segments) {
      XBAK_ASSIGN_OR_RETURN(std::string body, cloud::FetchBinlogSegment(loop, store, prefix, *holder, seg));
      XBAK_RETURN_IF_ERROR(scanner.Feed(body));
      if (end) break;
    }
    if (!end) continue;  // not this history
    // Something after it: more of that file, or later files.
    if (*end >= holder->end() && index + 1 >= a.files.size()) continue;
    return std::optional<Continuation>(Continuation{std::move(a), index, *end});
  }
  return std::optional<Continuation>();
}

// Writes the relay logs of one server's archive, from a.files[i] on, until the
// target or the archive's end.
Status FollowArchive(storage::EventLoop& loop, storage::ObjectStore& store, const RelayOptions& o,
                     const cloud::ServerArchive& a, size_t i, uint64_t skip_to, RelayWriter* writer,
                     RelayLogs* r, util::Progress* progress) {
  const std::string where = cloud::BinlogDir(o.prefix, a.server_id);
  for (size_t k = i; k < a.files.size() && !writer->done(); k++) {
    const std::string& name = a.files[k];
    if (k > i) {
      const auto number = cloud::BinlogFileNumber(name), prev = cloud::BinlogFileNumber(a.files[k - 1]);
      if (!number || !prev || *number != *prev + 1 ||
          name.substr(0, name.rfind('.')) != a.files[k - 1].substr(0, a.files[k - 1].rfind('.'))) {
        std::string gaps;
        for (const auto& g : a.gaps) gaps += " " + g;
        return Error(ErrorCode::kNotFound,
                     "the archive " + where + " goes from " + a.files[k - 1] + " to " + name +
                         ": the files between are missing (purged before binlog-push stored "
                         "them" +
                         (gaps.empty() ? std::string(")") : "; recorded:" + gaps + ")") +
                         ", so no restore can go past " + a.files[k - 1]);
      }
    }
    XBAK_ASSIGN_OR_RETURN(auto state, cloud::ReadBinlogState(loop, store, o.prefix, a.server_id, name));
    if (!state) break;  // begun, no segment recorded yet: the archive ends before it
    progress->AddTotal(state->end(), 1);
    const bool first = r->files.empty();
    if (first && k > 0) {
      // The backup's offset may come before its file's first transaction:
      // the time of the last one before it is then the previous file's.
      XBAK_ASSIGN_OR_RETURN(auto prev,
                            cloud::ReadBinlogState(loop, store, o.prefix, a.server_id, a.files[k - 1]));
      if (prev) writer->last_before_time_ = prev->summary.last_time;
    }
    XBAK_RETURN_IF_ERROR(writer->Write(loop, store, *state, first, k == i ? skip_to : 0, progress));
    if (first) XBAK_RETURN_IF_ERROR(writer->CheckFirst(where + name, state->summary));
    progress->FileDone();
    if (!state->complete && !writer->done() && k + 1 < a.files.size()) {
      return Error(ErrorCode::kNotFound, "the archive " + where + " holds " + name + " only up to byte " +
                                             std::to_string(state->end()) +
                                             " and later files follow: the rest of it was purged before "
                                             "binlog-push stored it, so no restore can go past that byte");
    }
    if (!state->complete) break;  // the file the server is writing: nothing after it yet
  }
  return Status::Ok();
}

// The relay logs from the archive `a` (a source that holds the backup's file) on.
Result<RelayLogs> WriteFrom(storage::EventLoop& loop, storage::ObjectStore& store, const RelayOptions& o,
                            const ReplayStart& start, cloud::ServerArchive a) {
  RelayLogs r;
  r.server_id = a.server_id;
  r.first_position = start.position;
  XBAK_RETURN_IF_ERROR(util::MakeDirs(o.dir));
  util::Progress progress("fetching binary logs", o.progress_interval);
  auto failed = [&](Status st) {
    progress.Finish(false);
    return st;
  };
  RelayWriter writer(o, start, &r);
  size_t i = std::find(a.files.begin(), a.files.end(), start.file) - a.files.begin();
  uint64_t skip_to = 0;            // in a.files[i], after a switchover
  std::vector<uint32_t> followed;  // the servers whose archives were followed
  for (;;) {
    followed.push_back(a.server_id);
    Status st = FollowArchive(loop, store, o, a, i, skip_to, &writer, &r, &progress);
    if (!st.ok()) return failed(st);
    if (writer.reached()) break;
    // The archive ends before the target: after a switchover, the binlog goes
    // on in the new primary's archive.
    std::optional<Continuation> next;
    if (writer.last_seen_) {
      auto c = FindContinuation(loop, store, o.prefix, followed, writer.last_seen_->gtid);
      if (!c.ok()) return failed(c.status());
      next = std::move(*c);
    }
    if (!next) {
      if (r.files.empty()) {
        return failed(Error(ErrorCode::kNotFound, "the archive " + cloud::BinlogDir(o.prefix, a.server_id) +
                                                      start.file + " holds no segment yet"));
      }
      st = EndOfArchive(o.target, a, r, cloud::BinlogDir(o.prefix, a.server_id));
      if (!st.ok()) return failed(st);
      break;
    }
    util::LogInfo("after GTID " + binlog::FormatGtid(writer.last_seen_->gtid) +
                  " the binary log goes on in the archive of server " +
                  std::to_string(next->archive.server_id) + " (" + next->archive.files[next->index] +
                  " from byte " + std::to_string(next->offset) +
                  "): a switchover, or a replica that archived further");
    a = std::move(next->archive);
    i = next->index;
    skip_to = next->offset;
  }
  progress.Finish(true);
  std::string index;
  for (const auto& n : r.names) index += util::JoinPath(o.dir, n) + "\n";
  XBAK_RETURN_IF_ERROR(
      util::WriteFileAtomic(util::JoinPath(o.dir, std::string(kRelayBase) + ".index"), index));
  return r;
}

}  // namespace

Status CheckTargetArchived(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& prefix,
                           const Target& t) {
  XBAK_ASSIGN_OR_RETURN(std::vector<uint32_t> ids, cloud::ListBinlogServers(loop, store, prefix));
  const std::string where = cloud::BinlogRoot(prefix);
  if (ids.empty()) {
    return Error(ErrorCode::kNotFound, "no binary logs are archived under " + where +
                                           " (xbcloud binlog-push PREFIX archives them): there is nothing to "
                                           "replay after the backup");
  }
  if (t.kind == Target::Kind::kLatest) return Status::Ok();
  uint64_t best_seq = 0;
  int64_t best_time = 0;
  for (uint32_t id : ids) {
    XBAK_ASSIGN_OR_RETURN(cloud::ServerArchive a, cloud::ReadServerArchive(loop, store, prefix, id));
    if (a.pass) best_time = std::max(best_time, a.pass->time);
    // The newest file with a state (the last may be just begun).
    for (size_t k = a.files.size(); k-- > 0 && k + 3 > a.files.size();) {
      XBAK_ASSIGN_OR_RETURN(auto st, cloud::ReadBinlogState(loop, store, prefix, id, a.files[k]));
      if (!st) continue;
      for (const auto& g : st->summary.end_state) {
        if (g.domain == t.gtid.domain) best_seq = std::max(best_seq, g.seq);
      }
      best_time = std::max<int64_t>(best_time, st->summary.last_time);
      break;
    }
  }
  if (t.kind == Target::Kind::kGtid && best_seq < t.gtid.seq) {
    return Error(ErrorCode::kNotFound, "GTID " + binlog::FormatGtid(t.gtid) + " is not in the archive " +
                                           where + " (the newest archived in domain " +
                                           std::to_string(t.gtid.domain) + " has sequence number " +
                                           std::to_string(best_seq) + "); nothing was written");
  }
  if (t.kind == Target::Kind::kTime && best_time <= t.time) {
    return Error(ErrorCode::kNotFound,
                 "the archive " + where + " cannot reach " + t.Describe() + ": what it holds ends at " +
                     FormatLocalTime(best_time) +
                     " (the last archived transaction, or the last complete binlog-push "
                     "pass); --latest restores all of it. Nothing was written");
  }
  return Status::Ok();
}

Result<RelayLogs> WriteRelayLogs(storage::EventLoop& loop, storage::ObjectStore& store, const RelayOptions& o,
                                 const ReplayStart& start) {
  XBAK_ASSIGN_OR_RETURN(std::vector<cloud::ServerArchive> sources, FindSources(loop, store, o.prefix, start));
  Status first_error;
  for (auto& a : sources) {
    auto r = WriteFrom(loop, store, o, start, std::move(a));
    // Only a first file that is not the backup's (its offset, its GTIDs) sends us to the next.
    if (r.ok() || r.status().code() != ErrorCode::kInvalidArgument || sources.size() == 1) return r;
    if (first_error.ok()) first_error = r.status();
    XBAK_RETURN_IF_ERROR(util::RemoveTree(o.dir));
  }
  return first_error;
}

}  // namespace xbak::pitr
