#include "xbak/pitr/point_restore.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/server.h"
#include "xbak/cloud/catalog.h"
#include "xbak/mysql/private_server.h"
#include "xbak/pitr/relay_logs.h"
#include "xbak/pitr/replay.h"
#include "xbak/pitr/start_server.h"
#include "xbak/restore/restore.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/process.h"

namespace xbak::pitr {
namespace {

constexpr const char* kWorkDir = "xbak-replay";  // in the datadir, until the restore ends

struct Candidate {
  const cloud::BackupRecord* record = nullptr;
  backupdir::BinlogPosition binlog;
  binlog::GtidPosition gtid;
};

// A complete backup's binlog position (from its manifest's summary); an
// error when it has none (a server without a binary log, or a put by an
// older xbcloud).
Result<Candidate> ReadCandidate(const cloud::BackupRecord& r) {
  Candidate c;
  c.record = &r;
  std::string name;
  const std::string* text = r.summary.Meta(backupdir::Meta::kBinlogInfo, &name);
  if (text == nullptr) {
    return Error(ErrorCode::kNotFound, r.name +
                                           " records no binary log position (no binlog_info file in its "
                                           "manifest: the server had no binary log, or an older put)");
  }
  XBAK_ASSIGN_OR_RETURN(c.binlog, backupdir::ParseBinlogInfo(*text, r.name + "/" + name));
  if (c.binlog.file.empty()) return Error(ErrorCode::kNotFound, r.name + ": the server had no binary log");
  XBAK_ASSIGN_OR_RETURN(c.gtid, binlog::ParseGtidPosition(c.binlog.gtid));
  return c;
}

// Whether a backup's data is before the target (it may be the chain's last).
// For a time: its put finished by then (a Unix time, unlike xtrabackup_info's
// end_time, which is the backed-up host's local time); the exact check, at
// the backup's binlog offset, comes with the relay logs.
bool Before(const Target& t, const Candidate& c) {
  switch (t.kind) {
    case Target::Kind::kLatest:
      return true;
    case Target::Kind::kTime:
      return c.record->summary.finished > 0 && c.record->summary.finished <= t.time;
    case Target::Kind::kGtid:
      for (const auto& g : c.gtid) {
        if (g.domain == t.gtid.domain) return g.seq <= t.gtid.seq;
      }
      return true;
  }
  return false;
}

// The version policy (backupdir/server.h) on the server version a backup's
// manifest records, before anything is downloaded.
Status CheckRecordVersion(const cloud::BackupRecord& r, bool no_version_check) {
  std::string name = "info file";
  const std::string* info = r.summary.Meta(backupdir::Meta::kInfo, &name);
  return backupdir::CheckRecordedServerVersion(info ? *info : std::string(), r.name + "/" + name,
                                               "the backup " + r.name, no_version_check);
}

// The replay server applies the binary logs on the restored datadir: it must
// be of the backup's series, or it would first upgrade the datadir (before
// mariadb-upgrade, with the binary logs of the older server still to come).
// Refused by name, before anything is written.
Status CheckReplayServer(const std::string& program, const cloud::BackupRecord& last) {
  const std::string* info = last.summary.Meta(backupdir::Meta::kInfo);
  const std::string backup_version = info ? backupdir::InfoField(*info, "server_version") : "";
  if (backup_version.empty()) return Status::Ok();
  XBAK_ASSIGN_OR_RETURN(const std::string mine, mysql::ProgramSeries(program));
  const std::string theirs = mysql::MajorMinor(backup_version);
  if (mine == theirs) return Status::Ok();
  return Error(
      ErrorCode::kUnsupported,
      "the replay server " + program + " is MariaDB " + mine + " but " + last.name + " is of " +
          backup_version +
          ": the binary logs are replayed by a server of the backup's version. Give "
          "--mariadbd=PATH of a MariaDB " +
          theirs +
          " server, then start the restored datadir on the newer one and run mariadb-upgrade; nothing "
          "was written");
}

// The chain's names, the full backup first, ending at `last`.
Result<std::vector<const cloud::BackupRecord*>> ChainTo(const cloud::Catalog& cat,
                                                        const cloud::BackupRecord& last) {
  std::vector<const cloud::BackupRecord*> chain{&last};
  while (chain.back()->incremental()) {
    const auto& base = chain.back()->base;
    auto it =
        std::find_if(cat.backups.begin(), cat.backups.end(), [&](const auto& b) { return b.name == base; });
    if (chain.back()->base_missing || it == cat.backups.end() || chain.size() > 10000) {
      return Error(ErrorCode::kNotFound, chain.back()->name +
                                             " is an incremental whose base backup is not in the "
                                             "store: its chain cannot be restored");
    }
    chain.push_back(&*it);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

Result<Candidate> PickBackup(const cloud::Catalog& cat, const PointRestoreOptions& o) {
  const std::string prefixed = o.prefix.empty() ? o.backup : o.prefix + "/" + o.backup;
  std::optional<Candidate> best;
  std::string skipped;
  for (const auto& r : cat.backups) {
    if (!r.known()) continue;
    if (!o.backup.empty()) {
      if (r.name != o.backup && r.name != prefixed) continue;
      XBAK_ASSIGN_OR_RETURN(Candidate c, ReadCandidate(r));
      if (o.target.kind == Target::Kind::kGtid && !Before(o.target, c)) {
        return Error(ErrorCode::kInvalidArgument, r.name + " (GTID position " + c.binlog.gtid +
                                                      ") is after " + o.target.Describe() +
                                                      ": restore from an older backup");
      }
      return c;
    }
    auto c = ReadCandidate(r);
    if (!c.ok()) {
      skipped += "\n  " + c.status().message();
      continue;
    }
    if (Before(o.target, *c)) best = *c;  // the catalog is in order of start: the last is the newest
  }
  if (!o.backup.empty()) {
    return Error(ErrorCode::kNotFound, "no complete backup " + prefixed + " in the store (xbcloud list " +
                                           o.prefix + " shows what there is)");
  }
  if (!best) {
    return Error(ErrorCode::kNotFound, "no complete backup under " + o.prefix + "/ was taken before " +
                                           o.target.Describe() + skipped);
  }
  return *best;
}

// Runs a restore from streams (o) while the chain's backups are downloaded
// into its pipes, one after the other, in the order it reads them.
Status RestoreChainFromStore(storage::EventLoop& loop, storage::ObjectStore& store,
                             const PointRestoreOptions& po,
                             const std::vector<const cloud::BackupRecord*>& chain,
                             restore::RestoreOptions ro) {
  std::vector<int> readers, writers;
  auto close_all = [](std::vector<int>* fds) {
    for (int& fd : *fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  };
  for (size_t i = 0; i < chain.size(); i++) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      close_all(&readers);
      close_all(&writers);
      return ErrnoError("create a pipe for", chain[i]->name, errno);
    }
    util::EnlargePipe(p[1]);
    readers.push_back(p[0]);
    writers.push_back(p[1]);
    ro.streams.push_back("/dev/fd/" + std::to_string(p[0]));
  }
  Status restored;
  std::thread restorer([&] {
    restored = restore::RunRestoreFromStreams(ro);
    // Whatever it did not read: the downloads writing into it stop (EPIPE).
    close_all(&readers);
  });
  Status got;
  for (size_t i = 0; i < chain.size(); i++) {
    if (got.ok()) {
      cloud::GetOptions g = po.get;
      g.name = chain[i]->name;
      util::LogInfo("downloading " + g.name);
      got = cloud::CloudGet(loop, store, {writers[i]}, {"the restore's stream " + std::to_string(i + 1)}, g);
      if (!got.ok()) got = got.With("downloading " + g.name);
    }
    ::close(writers[i]);
    writers[i] = -1;
  }
  restorer.join();
  // A download that failed on its own (an object missing or damaged) is the
  // cause; one cut off because the restore stopped reading is not.
  if (!got.ok() && got.message().find("(broken pipe)") == std::string::npos) {
    return restored.ok()
               ? got
               : Status(got.code(), got.message() + "; so the restore stopped: " + restored.message());
  }
  if (!restored.ok()) return restored;
  return got;
}

// The relay logs go, everything is made durable, then the redo log replaces
// the placeholder and the journal goes. (Killed between those two, the
// datadir is whole, and a server starts on it; the same command run again
// starts over, as the journal says.)
Status Finish(const std::string& datadir, const std::string& work) {
  const std::string log = util::JoinPath(datadir, "ib_logfile0");
  const std::string held = util::JoinPath(work, "ib_logfile0");
  XBAK_RETURN_IF_ERROR(util::RemoveTree(util::JoinPath(work, "relay")));
  XBAK_RETURN_IF_ERROR(util::SyncFilesystem(datadir));
  if (::rename(held.c_str(), log.c_str()) != 0) return ErrnoError("rename " + held + " to", log, errno);
  XBAK_RETURN_IF_ERROR(util::SyncDir(datadir));
  XBAK_RETURN_IF_ERROR(util::RemoveTree(work));
  const std::string journal = util::JoinPath(datadir, restore::kRestoreMarkerFile);
  if (::unlink(journal.c_str()) != 0) return ErrnoError("remove", journal, errno);
  return util::SyncDir(datadir);
}

std::string Names(const std::vector<const cloud::BackupRecord*>& chain) {
  std::string s;
  for (const auto* r : chain)
    s += (s.empty() ? "" : ", ") + r->name + (r->full() ? " (full)" : " (incremental)");
  return s;
}

// The archived binary logs from the last backup's position to the target,
// written as relay logs in `work` and replayed onto the datadir.
Result<RelayLogs> ReplayBinlogs(storage::EventLoop& loop, storage::ObjectStore& store,
                                const PointRestoreOptions& o, const std::string& program,
                                const Candidate& last, const std::string& work) {
  // --to-gtid of the backup's own last transaction: nothing to replay (it
  // may be in an earlier file than the backup's offset).
  const bool at_target = o.target.kind == Target::Kind::kGtid &&
                         std::find(last.gtid.begin(), last.gtid.end(), o.target.gtid) != last.gtid.end();
  RelayOptions rel;
  rel.prefix = o.prefix;
  rel.dir = util::JoinPath(work, "relay");
  rel.target = o.target;
  rel.progress_interval = o.progress_interval;
  RelayLogs relay;
  if (at_target) {
    relay.end_state = last.gtid;
  } else {
    XBAK_ASSIGN_OR_RETURN(
        relay, WriteRelayLogs(loop, store, rel, {last.binlog.file, last.binlog.position, last.gtid}));
  }
  std::string files;
  for (const auto& f : relay.files) files += (files.empty() ? "" : ", ") + f;
  util::LogInfo("binary logs of server " + std::to_string(relay.server_id) + ": " + files + "; " +
                std::to_string(relay.transactions) + " transactions to replay");
  if (relay.transactions > 0) {
    XBAK_ASSIGN_OR_RETURN(std::string run, mysql::MakePrivateRunDir("", "xbak-replay"));
    ReplayOptions rp;
    rp.program = program;
    rp.datadir = o.datadir;
    rp.log_dir = work;
    rp.relay_dir = rel.dir;
    rp.run_dir = run;
    rp.defaults_file = o.defaults_file;
    rp.first_file = last.binlog.file;
    rp.start_gtid = last.binlog.gtid;
    rp.parallel = o.parallel;
    rp.buffer_pool = o.use_memory;
    rp.progress_interval = o.progress_interval;
    auto rep = Replay(rp, relay);
    if (!rep.ok()) return rep.status();  // its run directory (and log) stay, for the post-mortem
    (void)util::RemoveTree(run);
    util::LogInfo("replayed in " + std::to_string(static_cast<int>(rep->seconds)) + " s; gtid_slave_pos " +
                  rep->gtid_slave_pos);
  }
  return relay;
}

}  // namespace

Status RestoreToPoint(storage::EventLoop& loop, storage::ObjectStore& store, const PointRestoreOptions& o) {
  const std::string program =
      util::FindExecutable({o.mariadbd.empty() ? std::string("mariadbd") : o.mariadbd});
  if (program.empty()) {
    return Error(
        ErrorCode::kNotFound,
        "restore replays the binary logs through a MariaDB server of its own, and finds none (" +
            (o.mariadbd.empty() ? std::string("no mariadbd in PATH, /usr/sbin or /usr/bin") : o.mariadbd) +
            "): install mariadb-server, or give --mariadbd=PATH; nothing was written");
  }
  if (o.start_server && o.defaults_file.empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        "--start-server needs --mysqld-defaults-file (the my.cnf the server runs with: its socket, port "
        "and user)");
  }
  XBAK_RETURN_IF_ERROR(CheckReplayDefaults(program, o.defaults_file));
  XBAK_ASSIGN_OR_RETURN(cloud::Catalog cat, cloud::ReadCatalog(loop, store, {o.prefix, 16}));
  cloud::LinkChains(&cat.backups);
  XBAK_ASSIGN_OR_RETURN(Candidate last, PickBackup(cat, o));
  XBAK_ASSIGN_OR_RETURN(auto chain, ChainTo(cat, *last.record));
  for (const cloud::BackupRecord* r : chain)
    XBAK_RETURN_IF_ERROR(CheckRecordVersion(*r, o.no_server_version_check));
  XBAK_RETURN_IF_ERROR(CheckReplayServer(program, *chain.back()));
  util::LogInfo("restoring to " + o.target.Describe() + " from " + Names(chain) +
                ", then the binary logs from " + last.binlog.file + " at byte " +
                std::to_string(last.binlog.position) +
                (last.binlog.gtid.empty() ? "" : " (GTID " + last.binlog.gtid + ")"));
  XBAK_RETURN_IF_ERROR(CheckTargetArchived(loop, store, o.prefix, o.target));
  if (o.dry_run) return Status::Ok();
  if (o.datadir.empty()) return Error(ErrorCode::kInvalidArgument, "restore needs --datadir");

  restore::RestoreOptions ro;
  ro.dirs.datadir = o.datadir;
  ro.parallel = o.parallel;
  ro.use_memory = std::min<uint64_t>(o.use_memory, uint64_t{1} << 30);
  ro.progress_interval = o.progress_interval;
  ro.hold = true;
  ro.no_server_version_check = o.no_server_version_check;
  // Tables created with DATA DIRECTORY come back inside the datadir: a
  // restore writes nowhere else (and a re-run finds nothing in its way).
  ro.dirs.remote_to_datadir = true;
  XBAK_RETURN_IF_ERROR(RestoreChainFromStore(loop, store, o, chain, ro));

  // The held log goes where the replay server finds it; the placeholder stays.
  const std::string work = util::JoinPath(o.datadir, kWorkDir);
  XBAK_RETURN_IF_ERROR(util::RemoveTree(work));
  XBAK_RETURN_IF_ERROR(util::MakeDirs(work));
  const std::string staged = restore::StagedLogPath(ro.dirs), held = util::JoinPath(work, "ib_logfile0");
  if (::rename(staged.c_str(), held.c_str()) != 0) return ErrnoError("rename " + staged + " to", held, errno);

  XBAK_ASSIGN_OR_RETURN(RelayLogs relay, ReplayBinlogs(loop, store, o, program, last, work));
  XBAK_RETURN_IF_ERROR(Finish(o.datadir, work));
  util::LogInfo("restored " + o.datadir + " to " +
                (relay.last ? "GTID " + binlog::FormatGtid(relay.last->gtid) + " (committed " +
                                  FormatLocalTime(relay.last->time) + ", in " + relay.last_file + ")"
                            : "the backup's own point (no transaction to replay)") +
                "; GTID position " + binlog::FormatGtidPosition(relay.end_state) +
                (o.start_server
                     ? std::string()
                     : ". Make it owned by the server's user (chown -R mysql:mysql) before starting it"));
  if (o.start_server) return StartRestoredServer(program, o.defaults_file, o.datadir);
  return Status::Ok();
}

}  // namespace xbak::pitr
