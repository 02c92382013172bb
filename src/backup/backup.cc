#include "xbak/backup/backup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "xbak/backup/backup_output.h"
#include "xbak/backup/ddl_watch.h"
#include "xbak/backup/history.h"
#include "xbak/backup/positions.h"
#include "xbak/backup/redo_lag.h"
#include "xbak/backup/replica.h"
#include "xbak/backup/server_checks.h"
#include "xbak/backup/server_plugins.h"
#include "xbak/backup/tablespace_copy.h"
#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/server.h"
#include "xbak/innodb/log_copier.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/mysql/connection.h"
#include "xbak/sink/sink.h"
#include "xbak/util/log.h"
#include "xbak/util/parallel.h"
#include "xbak/util/progress.h"
#include "xbak/util/spool.h"
#include "xbak/util/throttle.h"

#ifndef XBAK_VERSION
#define XBAK_VERSION "0.1.0"
#endif

namespace xbak::backup {
namespace {

// "db/t.ibd" -> "db/t": the name mariabackup's .ren/.del/.new markers use.
std::string SpaceName(const std::string& rel) {
  return rel.size() > 4 && rel.ends_with(".ibd") ? rel.substr(0, rel.size() - 4) : rel;
}

// Everything one backup run holds; methods are the steps in order.
class BackupRun {
 public:
  explicit BackupRun(const BackupOptions& o)
      : o_(o), progress_("backup", o.progress_interval), throttle_(o.throttle) {}

  bool wrote_anything() const { return out_.dest != nullptr; }  // the target directory exists
  bool complete() const { return complete_; }                   // the checkpoints file is written

  Status Run() {
    start_time_ = backupdir::NowString();
    XBAK_ASSIGN_OR_RETURN(filter_, backupdir::TableFilter::Make(o_.tables));
    if (!o_.extra_lsndir.empty()) XBAK_RETURN_IF_ERROR(backupdir::PrepareExtraLsnDir(o_.extra_lsndir));
    XBAK_RETURN_IF_ERROR(Connect());
    // Before the target exists, nothing is written (wrote_anything()).
    Status opened = OpenBackupOutput(o_, &out_);
    meta_ = out_.meta.get();
    sink_ = out_.data.get();
    XBAK_RETURN_IF_ERROR(opened);
    // Once the target exists (left empty), as mariabackup does it: scripts
    // written for it remove the directory after these refusals.
    PrivilegeNeeds needs;
    needs.locks = !o_.no_lock;
    needs.binlog = vars_["log_bin"] == "ON" && !o_.no_lock;  // no consistent position without locks
    needs.slave = o_.slave_info || o_.safe_slave_backup;
    needs.slave_admin = o_.safe_slave_backup;
    XBAK_RETURN_IF_ERROR(CheckPrivileges(*conn_, needs));
    XBAK_RETURN_IF_ERROR(CheckUndoOfBase(o_.incremental_basedir, layout_.undo_tablespaces));
    Status st = StartLogCopy();
    if (st.ok()) st = CopyEverything();
    if (st.ok()) st = FinishRedoLog();
    if (!st.ok()) {
      if (lag_) lag_->Stop();
      if (copier_) {
        // A copy cancelled because the redo copy failed reports the redo
        // copy's error, which says what happened and what to do.
        Status cst = copier_->Stop();
        if (!cst.ok() && st.code() == ErrorCode::kCancelled) st = cst.With("redo log copy");
      }
      if (redo_spool_) redo_spool_->Abort();
      if (staged_) (void)conn_->Execute("BACKUP STAGE END");
      safe_slave_.reset();  // the replica's SQL thread runs again at once
      return st;
    }
    return Finish();
  }

 private:
  Status Connect() {
    XBAK_ASSIGN_OR_RETURN(conn_, mysql::Connection::Open(o_.conn));
    XBAK_ASSIGN_OR_RETURN(vars_, conn_->GlobalVariables());
    // The version policy (backupdir/server.h), before anything is written.
    XBAK_ASSIGN_OR_RETURN(
        auto version,
        backupdir::ParseServerVersion(vars_["version"], "the server's @@version", vars_["version_comment"]));
    XBAK_RETURN_IF_ERROR(backupdir::CheckServerVersion(version, o_.no_server_version_check,
                                                       "the server at " + o_.conn.Describe()));
    scheme_ = backupdir::Describe(version).meta_scheme;
    XBAK_RETURN_IF_ERROR(CheckServerHasInnodb(vars_, o_.conn.Describe()));
    XBAK_ASSIGN_OR_RETURN(layout_, backupdir::LayoutFromVariables(vars_, o_.datadir));
    if (::access(layout_.datadir.c_str(), R_OK | X_OK) != 0) {
      return ErrnoError(
          "cannot read the server's datadir (is xbak running on the database host, as a user "
          "that may read it?)",
          layout_.datadir, errno);
    }
    if (o_.lock_wait_timeout_s > 0) {
      XBAK_RETURN_IF_ERROR(
          conn_->Execute("SET SESSION lock_wait_timeout=" + std::to_string(o_.lock_wait_timeout_s)));
    }
    util::LogInfo("connected to " + vars_["version"] + " at " + o_.conn.Describe() + ", datadir " +
                  layout_.datadir);
    if (o_.extended_validation) {
      XBAK_ASSIGN_OR_RETURN(page_keys_, ReadServerKeys(*conn_, vars_));
    }
    if (o_.checkpoint_now) {
      // Returns once the server has written the checkpoint and flushed the pages before it.
      if (Status st = conn_->Execute("SET GLOBAL innodb_log_checkpoint_now=ON"); !st.ok())
        util::LogWarning("--innodb-log-checkpoint-now: " + st.message() + "; the backup goes on without it");
    }
    if (o_.history) XBAK_RETURN_IF_ERROR(EnsureHistoryTable(*conn_));
    if (!o_.incremental_history_name.empty() || !o_.incremental_history_uuid.empty()) {
      XBAK_ASSIGN_OR_RETURN(o_.incremental_lsn,
                            HistoryBaseLsn(*conn_, o_.incremental_history_name, o_.incremental_history_uuid));
      o_.incremental = true;
      util::LogInfo("incremental base from " + std::string(kHistoryTable) + ": LSN " +
                    std::to_string(o_.incremental_lsn));
    }
    return Status::Ok();
  }

  Status StartLogCopy() {
    innodb::LogCopier::Options lo;
    lo.log_path = util::JoinPath(layout_.log_dir, "ib_logfile0");
    // The copier's own connection (it asks from its thread): how far the
    // server has written its log, which bounds what the copier may take.
    XBAK_ASSIGN_OR_RETURN(written_conn_, mysql::Connection::Open(o_.conn));
    mysql::Connection* wc = written_conn_.get();
    lo.written_lsn = [wc]() -> Result<uint64_t> { return StatusLsn(*wc, "INNODB_LSN_FLUSHED"); };
    lo.poll_interval = o_.log_copy_interval;
    lo.on_failure = [this] { cancel_.store(true); };
    XBAK_ASSIGN_OR_RETURN(copier_, innodb::LogCopier::Open(lo));
    XBAK_ASSIGN_OR_RETURN(log_out_, sink_->Create("ib_logfile0"));
    std::string creator = "Backup " + VersionNumber();
    // An encrypted log keeps its key information: the copied mtrs decrypt
    // with the same key (mariabackup --prepare reads them so).
    const auto& lh = copier_->header();
    auto header = innodb::MakeBackupLogHeader(copier_->format(), copier_->checkpoint_lsn(),
                                              copier_->checkpoint_end_lsn(), creator,
                                              lh.encrypted ? lh.crypt.data() : nullptr);
    if (lh.encrypted) util::LogInfo("the redo log is encrypted (innodb_encrypt_log=ON): copied as it is");
    XBAK_RETURN_IF_ERROR(log_out_->Write(header.data(), header.size()));
    // The copier appends to the spool, which never waits for the output; the
    // spool's thread writes to the output at whatever pace it takes.
    util::Spool::Options so;
    so.memory_limit = o_.redo_spool_memory;
    so.tmpdir = o_.tmpdir;
    so.what = "redo log";
    redo_spool_ = std::make_unique<util::Spool>(so);
    sink::SinkFile* out = log_out_.get();
    XBAK_RETURN_IF_ERROR(redo_spool_->Start([out](const uint8_t* d, size_t n) { return out->Write(d, n); }));
    util::Spool* spool = redo_spool_.get();
    DdlWatch* watch = &ddl_watch_;
    XBAK_RETURN_IF_ERROR(
        copier_->Start([spool](const uint8_t* d, size_t n) { return spool->Append(d, n); },
                       [watch](const innodb::FileOp& op, uint64_t lsn) { watch->OnFileOp(op, lsn); }));
    util::LogInfo("copying the redo log from checkpoint LSN " + std::to_string(copier_->checkpoint_lsn()) +
                  " (a " + util::HumanBytes(copier_->capacity()) +
                  " circular log; output spooled in memory up to " + util::HumanBytes(o_.redo_spool_memory) +
                  ", then in " + redo_spool_->spill_dir() + ")");
    StartLagMonitor();
    if (o_.incremental) {
      XBAK_ASSIGN_OR_RETURN(uint64_t now_lsn, StatusLsn(*conn_, "INNODB_LSN_CURRENT"));
      if (o_.incremental_lsn > now_lsn) {
        return Error(ErrorCode::kInvalidArgument,
                     "the incremental base LSN " + std::to_string(o_.incremental_lsn) +
                         " is ahead of this server's current LSN " + std::to_string(now_lsn) +
                         ": the base backup is not from this server (or the server's log was reset)");
      }
      util::LogInfo("incremental backup: pages changed after LSN " + std::to_string(o_.incremental_lsn));
    }
    return Status::Ok();
  }

  // A second connection samples the server's log head for the redo lag;
  // without it the backup still works, only the lag is not shown.
  void StartLagMonitor() {
    auto c = mysql::Connection::Open(o_.conn);
    if (!c.ok()) {
      util::LogWarning("the redo lag will not be shown: " + c.status().message());
      return;
    }
    monitor_conn_ = std::move(c).value();
    RedoLagMonitor::Sources src;
    mysql::Connection* mc = monitor_conn_.get();
    src.server_lsn = [mc]() -> Result<uint64_t> { return StatusLsn(*mc, "INNODB_LSN_CURRENT"); };
    innodb::LogCopier* cp = copier_.get();
    src.copied_lsn = [cp] { return cp->copied_lsn(); };
    util::Spool* spool = redo_spool_.get();
    src.spool = [spool] { return spool->stats(); };
    auto every = o_.progress_interval.count() > 0
                     ? std::min(o_.progress_interval, std::chrono::milliseconds(1000))
                     : std::chrono::milliseconds(1000);
    lag_ = std::make_unique<RedoLagMonitor>(copier_->capacity(), std::move(src), &progress_, every);
    lag_->Start();
  }

  // After BACKUP STAGE END: the server is no longer held, and the output
  // takes the rest of the spooled redo log at its own pace.
  Status FinishRedoLog() {
    auto st = redo_spool_->stats();
    if (st.pending > 0) {
      util::LogInfo(
          "writing the last " + util::HumanBytes(st.pending) + " of the redo log to " + sink_->Describe() +
          (st.on_disk > 0
               ? " (" + util::HumanBytes(st.on_disk) + " of it spooled in " + redo_spool_->spill_dir() + ")"
               : std::string()));
      progress_.SetNote("writing the spooled redo log");
    }
    XBAK_RETURN_IF_ERROR(redo_spool_->Finish());
    XBAK_RETURN_IF_ERROR(log_out_->Close().With("closing the backup's ib_logfile0"));
    util::LogInfo("redo log copied from LSN " + std::to_string(copier_->checkpoint_lsn()) + " to " +
                  std::to_string(last_lsn_) + "; " +
                  (lag_ ? lag_->Summary() : std::string("redo lag not measured")));
    return Status::Ok();
  }

  std::string VersionNumber() const {
    std::string v = vars_.count("version") ? vars_.at("version") : std::string();
    size_t dash = v.find('-');
    return dash == std::string::npos ? v : v.substr(0, dash);
  }

  Status CopyEverything() {
    if (o_.no_lock) return CopyWithoutLocks();
    XBAK_RETURN_IF_ERROR(conn_->Execute("BACKUP STAGE START"));
    staged_ = true;
    XBAK_RETURN_IF_ERROR(CopyInnodb());
    XBAK_RETURN_IF_ERROR(conn_->Execute("BACKUP STAGE FLUSH"));
    if (o_.safe_slave_backup) {
      XBAK_ASSIGN_OR_RETURN(safe_slave_, SafeSlave::Stop(*conn_, o_.safe_slave_timeout));
    }
    // While DDL (and then commits) are blocked, the spooled redo log waits and
    // the files copied under the lock reach the output first: with one slow
    // stream they would otherwise queue behind all the log spooled so far and
    // hold the server for minutes. The log is still read from the server.
    // (After the safe-slave wait, which may be long: the server is not held then.)
    if (redo_spool_) redo_spool_->Pause(true);
    const auto ddl0 = std::chrono::steady_clock::now();
    XBAK_RETURN_IF_ERROR(conn_->Execute("BACKUP STAGE BLOCK_DDL"));
    util::LogInfo("BACKUP STAGE BLOCK_DDL: DDL is blocked; copying table definitions and non-InnoDB tables");
    XBAK_RETURN_IF_ERROR(ReconcileDdl());
    XBAK_RETURN_IF_ERROR(CopyOthers());
    auto t0 = std::chrono::steady_clock::now();
    XBAK_RETURN_IF_ERROR(conn_->Execute("BACKUP STAGE BLOCK_COMMIT"));
    XBAK_RETURN_IF_ERROR(UnderBlockCommit());
    XBAK_RETURN_IF_ERROR(conn_->Execute("BACKUP STAGE END"));
    staged_ = false;
    if (redo_spool_) redo_spool_->Pause(false);
    if (safe_slave_) XBAK_RETURN_IF_ERROR(safe_slave_->Restart());
    const auto t1 = std::chrono::steady_clock::now();
    lock_time_s_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(t1 - t0).count());
    char b[96];
    std::snprintf(b, sizeof b, "BACKUP STAGE END: DDL was blocked for %.1f s, commits for %.1f s",
                  std::chrono::duration<double>(t1 - ddl0).count(),
                  std::chrono::duration<double>(t1 - t0).count());
    util::LogInfo(b);
    return Status::Ok();
  }

  // --no-lock: nothing is blocked; DDL is watched instead (ddl_watch.h), from
  // before the table definitions are listed to the end of the redo copy.
  Status CopyWithoutLocks() {
    util::LogWarning(
        "--no-lock: no BACKUP STAGE lock is taken. InnoDB tables are consistent; non-InnoDB tables "
        "written during the backup are not, DDL during it fails the backup, and no binary log position "
        "is recorded (--prepare gives the one InnoDB recorded, in xtrabackup_binlog_pos_innodb)");
    XBAK_RETURN_IF_ERROR(CopyInnodb());
    XBAK_ASSIGN_OR_RETURN(uint64_t watch_lsn, StatusLsn(*conn_, "INNODB_LSN_CURRENT"));
    XBAK_RETURN_IF_ERROR(ddl_watch_.Arm(watch_lsn, layout_, filter_));
    XBAK_RETURN_IF_ERROR(ReconcileDdl());
    XBAK_RETURN_IF_ERROR(CopyOthers());
    XBAK_RETURN_IF_ERROR(CopyLate());
    XBAK_RETURN_IF_ERROR(StopRedoCopy());
    return ddl_watch_.Check(layout_, filter_);
  }

  Status CopyInnodb() {
    XBAK_ASSIGN_OR_RETURN(backupdir::InnodbFiles files, backupdir::ListInnodbFiles(layout_, filter_));
    std::vector<const backupdir::SourceFile*> jobs;
    // The system tablespace first (ibdata2.. need space 0's flags from ibdata1).
    XBAK_RETURN_IF_ERROR(CopySystem(files.system));
    for (auto& f : files.undo) jobs.push_back(&f);
    for (auto& f : files.tablespaces) jobs.push_back(&f);
    std::sort(jobs.begin(), jobs.end(), [](auto* a, auto* b) { return a->size > b->size; });
    for (auto* f : jobs) progress_.AddTotal(f->size, 1);
    util::LogInfo("copying " + std::to_string(jobs.size() + files.system.size()) + " InnoDB files with " +
                  std::to_string(o_.parallel) + " thread(s)");
    auto ahead = ReadAhead(jobs);
    return util::RunParallel(
        jobs.size(), o_.parallel,
        [&](size_t i) {
          const backupdir::SourceFile& f = *jobs[i];
          TablespaceCopyOptions to = BaseCopyOptions();
          TablespaceCopyResult r;
          Status st = CopyTablespace(f, f.rel, *sink_, progress_, to, &r);
          ahead->Consumed();
          XBAK_RETURN_IF_ERROR(st);
          // No page 0 on disk yet in an incremental: the table is newer than the
          // incremental's checkpoint, hence than the base. ReconcileDdl copies it whole
          // as db/t.new under BLOCK_DDL, when its name and file can no longer change
          // (now, a TRUNCATE or RENAME before that would need a second db/t.new).
          const bool whole_pending = r.deferred && o_.incremental;
          std::lock_guard<std::mutex> l(mu_);
          // Only file-per-table tablespaces can be created, renamed or dropped
          // (undo tablespaces are truncated in place, never re-created).
          const bool per_table = f.rel.find('/') != std::string::npos;
          if (!r.vanished && per_table)
            copied_[f.id] = CopiedSpace{f.rel, r.space_id, r.deferred, whole_pending};
          if (r.deferred) deferred_++;
          return Status::Ok();
        },
        &cancel_);
  }

  TablespaceCopyOptions BaseCopyOptions() {
    TablespaceCopyOptions to;
    to.page_size = layout_.page_size;
    to.max_retries = o_.page_retries;
    to.cancel = &cancel_;
    to.incremental = o_.incremental;
    to.incremental_lsn = o_.incremental_lsn;
    to.meta_sink = meta_;
    to.keys = page_keys_ ? &*page_keys_ : nullptr;
    to.throttle = &throttle_;
    return to;
  }

  Status CopySystem(const std::vector<backupdir::SourceFile>& system) {
    uint32_t next_page = 0;
    uint32_t flags = 0;
    for (auto& f : system) {
      progress_.AddTotal(f.size, 1);
      TablespaceCopyOptions to = BaseCopyOptions();
      to.first_page_no = next_page;
      to.is_system = true;
      to.system_flags = flags;
      TablespaceCopyResult r;
      XBAK_RETURN_IF_ERROR(CopyTablespace(f, f.rel, *sink_, progress_, to, &r));
      if (r.vanished) return Error(ErrorCode::kIo, "system tablespace file " + f.path + " disappeared");
      if (next_page == 0) flags = r.flags;
      next_page += static_cast<uint32_t>(r.pages);
    }
    return Status::Ok();
  }

  // Under BLOCK_DDL no table can be created, renamed or dropped. Compare the
  // .ibd files now present with those copied (by inode and its birth time,
  // which a rename keeps and a re-creation changes: FileIdentity) and write
  // mariabackup's markers, which both `mariabackup --prepare` and
  // `xbak --prepare` apply:
  //   db/t.ren  (content: the new name)  a table renamed during the backup
  //   db/t.del                           a table dropped during the backup
  //   db/t.new  (a full copy)            a table created during the backup
  Status ReconcileDdl() {
    XBAK_ASSIGN_OR_RETURN(backupdir::InnodbFiles now, backupdir::ListInnodbFiles(layout_, filter_));
    std::set<backupdir::FileIdentity> seen;
    std::vector<const backupdir::SourceFile*> fresh, pending;
    for (auto& f : now.tablespaces) {
      auto it = copied_.find(f.id);
      if (it == copied_.end()) {
        fresh.push_back(&f);
        continue;
      }
      seen.insert(it->first);
      if (it->second.rel != f.rel) {
        util::LogInfo("table " + SpaceName(it->second.rel) + " was renamed to " + SpaceName(f.rel) +
                      " during the backup");
        XBAK_RETURN_IF_ERROR(
            sink::WriteSmallFile(*meta_, SpaceName(it->second.rel) + ".ren", SpaceName(f.rel)));
      }
      if (it->second.whole_pending) pending.push_back(&f);
    }
    for (auto& [key, c] : copied_) {
      if (seen.count(key)) continue;
      util::LogInfo("table " + SpaceName(c.rel) + " was dropped during the backup");
      XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(*meta_, SpaceName(c.rel) + ".del", ""));
    }
    for (auto* f : pending) {
      util::LogInfo("table " + SpaceName(f->rel) + " is newer than the incremental's base; copying it whole");
    }
    for (auto* f : fresh)
      util::LogInfo("table " + SpaceName(f->rel) + " was created during the backup; copying it now");
    fresh.insert(fresh.end(), pending.begin(), pending.end());
    for (auto* f : fresh) {
      progress_.AddTotal(f->size, 1);
      TablespaceCopyOptions to = BaseCopyOptions();
      to.incremental = false;  // a table created during the backup is copied whole
      TablespaceCopyResult r;
      XBAK_RETURN_IF_ERROR(CopyTablespace(*f, SpaceName(f->rel) + ".new", *sink_, progress_, to, &r));
    }
    return Status::Ok();
  }

  Status CopyOthers() {
    // Every database, the empty ones too (a directory with no file yet is a
    // database to the server); a stream carries files only.
    XBAK_ASSIGN_OR_RETURN(auto dbs, backupdir::ListDatabaseDirs(layout_, filter_));
    for (const auto& db : dbs) XBAK_RETURN_IF_ERROR(meta_->MakeDir(db));
    XBAK_ASSIGN_OR_RETURN(others_, backupdir::ListOtherFiles(layout_, filter_));
    std::vector<const backupdir::SourceFile*> jobs;
    for (auto& f : others_) {
      if (!backupdir::ChangesUnderBlockDdl(f.rel)) jobs.push_back(&f);
    }
    return CopyPlainList(jobs);
  }

  Status CopyPlainList(std::vector<const backupdir::SourceFile*> jobs) {
    std::sort(jobs.begin(), jobs.end(), [](auto* a, auto* b) { return a->size > b->size; });
    for (auto* f : jobs) progress_.AddTotal(f->size, 1);
    auto ahead = ReadAhead(jobs);
    return util::RunParallel(
        jobs.size(), o_.parallel,
        [&](size_t i) {
          bool vanished = false;
          Status st = CopyPlainFile(*jobs[i], jobs[i]->rel, *sink_, progress_, &vanished, &throttle_);
          ahead->Consumed();
          return st;
        },
        &cancel_);
  }

  Status UnderBlockCommit() {
    XBAK_RETURN_IF_ERROR(CopyLate());
    // Nothing commits now: the positions are exactly the restored data's.
    const PositionsWanted want{vars_["log_bin"] == "ON", o_.slave_info, o_.galera_info};
    XBAK_ASSIGN_OR_RETURN(binlog_, RecordPositions(*conn_, *meta_, scheme_, want));
    XBAK_RETURN_IF_ERROR(conn_->Execute("FLUSH NO_WRITE_TO_BINLOG ENGINE LOGS"));
    return StopRedoCopy();
  }

  Status CopyLate() {
    XBAK_ASSIGN_OR_RETURN(std::set<std::string> free_logs, FreeAriaLogs(*conn_));
    std::vector<const backupdir::SourceFile*> late;
    for (auto& f : others_) {
      if (backupdir::ChangesUnderBlockDdl(f.rel) && !free_logs.count(f.rel)) late.push_back(&f);
    }
    return CopyPlainList(late);
  }

  // The redo copy up to the server's current LSN and the latest checkpoint.
  Status StopRedoCopy() {
    XBAK_ASSIGN_OR_RETURN(uint64_t server_lsn, StatusLsn(*conn_, "INNODB_LSN_CURRENT"));
    XBAK_ASSIGN_OR_RETURN(auto ckpt, copier_->ReadLiveCheckpoint());
    // to_lsn, the base of a later incremental, is the latest checkpoint, as
    // in mariabackup: mariabackup --prepare refuses a backup whose to_lsn is
    // beyond the LSN its recovery reaches. (On a quiet server the checkpoint
    // may not move between two backups, so their order cannot be told apart
    // by LSN; nothing changed in between then, either.)
    to_lsn_ = ckpt.checkpoint_lsn;
    uint64_t target = std::max(server_lsn, to_lsn_);
    progress_.SetNote("waiting for the redo log copy to reach LSN " + std::to_string(target));
    XBAK_RETURN_IF_ERROR(copier_->WaitUntil(target, std::chrono::seconds(o_.log_wait_timeout_s)));
    if (lag_) lag_->Sample();  // the lag at the consistent point, into the summary
    XBAK_RETURN_IF_ERROR(copier_->Stop());
    if (lag_) lag_->Stop();
    last_lsn_ = copier_->copied_lsn();
    copier_stopped_ = true;
    return Status::Ok();
  }

  Status Finish() {
    XBAK_RETURN_IF_ERROR(WriteBackupCnf(*conn_, vars_, layout_, *meta_));
    if (!filter_.TakesAll())
      XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(*meta_, backupdir::kTableFilterFile, filter_.Serialize()));
    backupdir::BackupInfo info;
    info.uuid = backupdir::NewUuid();
    info.tool_command = o_.tool_command;
    info.tool_name = o_.tool_name;
    info.tool_version = XBAK_VERSION;
    info.server_version = vars_["version"];
    info.start_time = start_time_;
    info.end_time = backupdir::NowString();
    info.lock_time_s = lock_time_s_;
    info.binlog = binlog_;
    info.to_lsn = to_lsn_;
    info.incremental = o_.incremental;
    info.partial = !filter_.TakesAll();
    info.from_lsn = o_.incremental ? o_.incremental_lsn : 0;
    info.format = o_.stream.empty() ? "file" : "mbstream";
    info.compressed = o_.compress;
    info.no_lock = o_.no_lock;
    info.name = o_.history_name;
    const std::string info_text = backupdir::FormatInfo(info);
    XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(*meta_, MetaName(backupdir::Meta::kInfo), info_text));
    // Everything else must be durable before the file that declares the
    // backup complete exists.
    XBAK_RETURN_IF_ERROR(sink_->Flush());
    XBAK_RETURN_IF_ERROR(meta_->Flush());
    backupdir::Checkpoints c{o_.incremental ? "incremental" : "full-backuped",
                             o_.incremental ? o_.incremental_lsn : 0, to_lsn_, last_lsn_, false};
    XBAK_RETURN_IF_ERROR(sink::WriteSmallFile(*meta_, MetaName(backupdir::Meta::kCheckpoints),
                                              backupdir::FormatCheckpoints(c)));
    XBAK_RETURN_IF_ERROR(meta_->Flush());
    complete_ = true;  // what fails from here on does not make the backup incomplete
    if (!o_.extra_lsndir.empty()) {
      XBAK_RETURN_IF_ERROR(
          backupdir::WriteExtraLsnDir(o_.extra_lsndir, scheme_, backupdir::FormatCheckpoints(c), info_text));
    }
    if (o_.history) {
      Status hs = AddHistoryRow(*conn_, info);
      if (!hs.ok()) {
        return hs.With("the backup in " + sink_->Describe() + " is complete, but its history row is missing");
      }
      util::LogInfo("recorded in " + std::string(kHistoryTable) + " (uuid " + info.uuid +
                    (info.name.empty() ? std::string() : ", series '" + info.name + "'") + ")");
    }
    progress_.Finish(true);
    if (deferred_ > 0) {
      util::LogInfo(std::to_string(deferred_) +
                    " tablespace(s) had no page 0 on disk yet (recently created); "
                    "the copied redo log restores them at prepare");
    }
    util::LogInfo("backup complete: to_lsn " + std::to_string(to_lsn_) + ", last_lsn " +
                  std::to_string(last_lsn_) + " in " + sink_->Describe());
    return Status::Ok();
  }

  std::string MetaName(backupdir::Meta m) const { return backupdir::MetaName(m, scheme_); }

  struct CopiedSpace {
    std::string rel;
    uint32_t space_id;
    bool deferred;
    bool whole_pending;  // an incremental's table with no page 0 yet: copied whole at ReconcileDdl
  };

  BackupOptions o_;  // a copy: --incremental-history-* fill in the base LSN
  util::Progress progress_;
  std::unique_ptr<mysql::Connection> conn_;
  std::map<std::string, std::string> vars_;
  backupdir::MetaScheme scheme_ = backupdir::MetaScheme::kXtrabackup;  // the server's own tool's names
  backupdir::ServerLayout layout_;
  backupdir::TableFilter filter_;
  BackupOutput out_;                   // before log_out_, a file of its data sink
  sink::Sink* meta_ = nullptr;         // out_.meta: metadata files
  std::optional<PageKeys> page_keys_;  // --extended-validation
  sink::Sink* sink_ = nullptr;         // out_.data: data files and the redo log
  std::unique_ptr<sink::SinkFile> log_out_;
  std::atomic<bool> cancel_{false};  // set by a failed copy thread or copier_
  // After log_out_, which its thread writes to, so it is destroyed first.
  std::unique_ptr<SafeSlave> safe_slave_;  // after conn_, which it uses when destroyed
  std::unique_ptr<util::Spool> redo_spool_;
  std::unique_ptr<mysql::Connection> written_conn_;  // used by copier_'s thread
  DdlWatch ddl_watch_;  // --no-lock; fed by copier_'s thread, so declared before it
  // After the spool it appends to, so it is destroyed (and its thread stopped) first.
  std::unique_ptr<innodb::LogCopier> copier_;
  std::unique_ptr<mysql::Connection> monitor_conn_;
  std::unique_ptr<RedoLagMonitor> lag_;  // samples copier_ and redo_spool_ on monitor_conn_
  util::Throttle throttle_;
  std::mutex mu_;
  std::map<backupdir::FileIdentity, CopiedSpace> copied_;
  std::vector<backupdir::SourceFile> others_;
  size_t deferred_ = 0;
  bool staged_ = false;
  bool complete_ = false;
  bool copier_stopped_ = false;
  backupdir::BinlogPosition binlog_;
  uint64_t to_lsn_ = 0, last_lsn_ = 0, lock_time_s_ = 0;
  std::string start_time_;
};

}  // namespace

Status RunBackup(const BackupOptions& opts) {
  BackupRun run(opts);
  Status st = run.Run();
  // The cause first, then what it means for the directory (one message, so
  // the user reads them in that order).
  if (st.ok() || !opts.stream.empty() || !run.wrote_anything() || run.complete()) return st;
  // Refused before the first copy (privileges, an incremental's base): the
  // directory mariabackup would have made is there, empty.
  if (auto empty = util::IsEmptyOrMissingDir(opts.target_dir); empty.ok() && *empty) {
    return Error(st.code(), st.message() + ". " + opts.target_dir + " was left empty");
  }
  return Error(st.code(), st.message() + ". The backup in " + opts.target_dir +
                              " is incomplete and has no checkpoints file; it cannot be prepared. "
                              "Remove it and retry.");
}

}  // namespace xbak::backup
