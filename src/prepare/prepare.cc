#include "xbak/prepare/prepare.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/server.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::prepare {
namespace {

// The markers xbak's and mariabackup's --backup leave for DDL that ran during
// the backup, carried out in mariabackup's order (.del, .ren, .new). Each one
// is removed once done, so a re-run after a crash continues where it stopped.
Status ApplyDdlMarkers(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(dir));
  std::vector<std::string> dels, rens, news;
  for (const auto& db : top) {
    if (!util::IsDirectory(util::JoinPath(dir, db))) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(util::JoinPath(dir, db)));
    for (const auto& f : files) {
      const std::string rel = db + "/" + f;
      if (f.ends_with(".del")) dels.push_back(rel);
      if (f.ends_with(".ren")) rens.push_back(rel);
      if (f.ends_with(".new")) news.push_back(rel);
    }
  }
  auto stem = [](const std::string& rel) { return rel.substr(0, rel.size() - 4); };
  for (const auto& m : dels) {
    const std::string ibd = util::JoinPath(dir, stem(m) + ".ibd");
    if (::unlink(ibd.c_str()) != 0 && errno != ENOENT) return ErrnoError("remove", ibd, errno);
    if (::unlink(util::JoinPath(dir, m).c_str()) != 0)
      return ErrnoError("remove", util::JoinPath(dir, m), errno);
    util::LogInfo("removed " + stem(m) + ".ibd: dropped during the backup");
  }
  for (const auto& m : rens) {
    XBAK_ASSIGN_OR_RETURN(std::string to, util::ReadSmallFile(util::JoinPath(dir, m), 4096));
    while (!to.empty() && (to.back() == '\n' || to.back() == '\0')) to.pop_back();
    if (!backupdir::IsSafeSpaceName(to)) {
      return Error(ErrorCode::kCorrupt, util::JoinPath(dir, m) + ": bad rename target '" + to + "'");
    }
    const std::string src = util::JoinPath(dir, stem(m) + ".ibd"), dst = util::JoinPath(dir, to + ".ibd");
    if (util::PathExists(src)) {
      if (util::PathExists(dst)) {
        return Error(ErrorCode::kUnsupported, "rename of " + stem(m) + " to " + to + ": " + dst +
                                                  " exists already (circular renames are not supported yet)");
      }
      XBAK_RETURN_IF_ERROR(util::MakeDirs(dst.substr(0, dst.rfind('/'))));
      if (::rename(src.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + src + " to", dst, errno);
    }
    if (::unlink(util::JoinPath(dir, m).c_str()) != 0)
      return ErrnoError("remove", util::JoinPath(dir, m), errno);
    util::LogInfo("renamed " + stem(m) + " to " + to + ": renamed during the backup");
  }
  for (const auto& m : news) {
    const std::string src = util::JoinPath(dir, m), dst = util::JoinPath(dir, stem(m) + ".ibd");
    if (::rename(src.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + src + " to", dst, errno);
    util::LogInfo("installed " + stem(m) + ".ibd: created or rebuilt during the backup");
  }
  if (!dels.empty() || !rens.empty() || !news.empty()) XBAK_RETURN_IF_ERROR(util::SyncFilesystem(dir));
  return Status::Ok();
}

Status RefuseCompressed(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(dir));
  for (const auto& n : top) {
    if (n.ends_with(".zst") || n.ends_with(".lz4") || n.ends_with(".qp")) {
      return Error(
          ErrorCode::kInvalidArgument,
          dir + " holds compressed files (" + n + "): run xbak --decompress --target-dir=" + dir + " first");
    }
  }
  return Status::Ok();
}

// xtrabackup_binlog_pos_innodb ("./FILE\tPOSITION\n", the one name every
// version of mariabackup writes): the backup's binlog position, which
// BACKUP STAGE BLOCK_COMMIT made exact (it also covers what non-InnoDB
// tables wrote last), or else (--no-lock) the one InnoDB recorded with its
// last commit; nothing for a server without a binary log.
Status RecordBinlogPosition(const std::string& dir, const std::optional<innodb::RecordedBinlog>& recorded) {
  const std::string info = backupdir::MetaPath(dir, backupdir::Meta::kBinlogInfo);
  backupdir::BinlogPosition b;
  if (util::PathExists(info)) {
    XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(info, 64 * 1024));
    XBAK_ASSIGN_OR_RETURN(b, backupdir::ParseBinlogInfo(text, info));
  } else if (recorded) {  // --no-lock (RecordedBinlogIfNeeded)
    b.file = recorded->file;
    b.position = recorded->offset;
  }
  if (b.file.empty()) return Status::Ok();
  const std::string file = b.file.find('/') == std::string::npos ? "./" + b.file : b.file;
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(util::JoinPath(dir, "xtrabackup_binlog_pos_innodb"),
                                             file + "\t" + std::to_string(b.position) + "\n"));
  util::LogInfo("Last binlog file " + file + ", position " + std::to_string(b.position));
  return Status::Ok();
}

// "Backup 10.11.19", as mariabackup of the server's version writes it; the
// "Backup " prefix is what the server looks for.
std::string LogCreator(const std::string& dir) {
  const std::string v = backupdir::InfoServerVersion(dir);
  size_t e = 0;
  while (e < v.size() && (std::isdigit(static_cast<unsigned char>(v[e])) || v[e] == '.')) e++;
  if (e > 0) return "Backup " + v.substr(0, e);
  return "Backup xbak " XBAK_VERSION;
}

}  // namespace

Status ApplyLogAndMarkPrepared(const PrepareOptions& o, std::function<Status()> before_write) {
  const std::string& dir = o.target_dir;
  XBAK_ASSIGN_OR_RETURN(backupdir::Checkpoints cp, backupdir::ReadCheckpoints(dir));

  RedoApplyOptions ro;
  ro.dir = dir;
  ro.log_dir = o.log_dir;
  ro.parallel = o.parallel;
  ro.use_memory = o.use_memory;
  ro.required_lsn = std::max(cp.to_lsn, cp.last_lsn);
  ro.superseded = o.superseded;
  ro.checked = o.checked;
  ro.progress_interval = o.progress_interval;
  ro.before_write = std::move(before_write);
  ro.keys = o.keys;
  ro.doublewrite = o.sync_data;  // not from streams: that restore starts over
  ro.ignore_corrupt_pages = o.ignore_corrupt_pages;
  XBAK_ASSIGN_OR_RETURN(ro.filter, backupdir::ReadTableFilter(dir));
  XBAK_ASSIGN_OR_RETURN(RedoApplyStats st, ApplyRedoLog(ro));
  if (st.corrupt_pages_left > 0) {
    util::LogWarning(std::to_string(st.corrupt_pages_left) +
                     " page(s) the redo log could not be applied to were left as they were copied "
                     "(--innodb-force-recovery, named above): run CHECK TABLE on their tables once restored");
  }
  // Every page written above is durable before the log that covered it goes.
  if (o.sync_data) XBAK_RETURN_IF_ERROR(util::SyncFilesystem(dir));

  // As mariabackup: the new log's checkpoint is 16 bytes (its one
  // FILE_CHECKPOINT mtr) before the end of the applied log, so that the
  // restored server's LSN continues exactly where the backup's log ended.
  const auto log = innodb::MakePreparedLogFile(st.end_lsn - 16, LogCreator(dir));
  XBAK_RETURN_IF_ERROR(
      util::WriteFileAtomic(o.prepared_log.empty() ? util::JoinPath(dir, "ib_logfile0") : o.prepared_log,
                            std::string_view(reinterpret_cast<const char*>(log.data()), log.size())));
  cp.backup_type = "log-applied";
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(backupdir::MetaPath(dir, backupdir::Meta::kCheckpoints),
                                             backupdir::FormatCheckpoints(cp)));
  XBAK_RETURN_IF_ERROR(util::SyncDir(dir));
  util::LogInfo("redo applied from LSN " + std::to_string(st.checkpoint_lsn) + " to " +
                std::to_string(st.end_lsn) + ": " + std::to_string(st.mtrs) + " mini-transactions, " +
                std::to_string(st.records) + " records, " + std::to_string(st.pages_written) +
                " pages written in " + std::to_string(st.batches) + " batch(es) with " +
                std::to_string(o.parallel) + " thread(s)");
  if (st.superseded_records != 0) {
    util::LogInfo(std::to_string(st.superseded_records) +
                  " records of pages the next incremental replaces were skipped");
  }
  if (st.ignored_records != 0) {
    util::LogInfo(std::to_string(st.ignored_records) +
                  " records of tablespaces dropped during the backup were skipped");
  }
  // A prepare in place (not a restore's, into a datadir) says where the
  // binary log stood, as mariabackup does: scripts that provision replicas
  // read xtrabackup_binlog_pos_innodb or grep the line.
  if (o.prepared_log.empty()) XBAK_RETURN_IF_ERROR(RecordBinlogPosition(dir, st.recorded_binlog));
  return Status::Ok();
}

Status RunPrepare(const PrepareOptions& o) {
  const std::string& dir = o.target_dir;
  XBAK_ASSIGN_OR_RETURN(backupdir::Checkpoints cp, backupdir::ReadCheckpoints(dir));
  if (cp.backup_type == "log-applied") {
    util::LogInfo(dir + " is already prepared (backup_type = log-applied); nothing to do");
    return Status::Ok();
  }
  if (cp.backup_type == "incremental") {
    return Error(ErrorCode::kInvalidArgument,
                 dir +
                     " is an incremental backup: prepare its full backup, then apply it with "
                     "xbak --prepare --target-dir=FULL --incremental-dir=" +
                     dir);
  }
  if (cp.backup_type != "full-backuped") {
    return Error(ErrorCode::kInvalidArgument, backupdir::MetaPath(dir, backupdir::Meta::kCheckpoints) +
                                                  ": unknown backup_type '" + cp.backup_type + "'");
  }
  XBAK_RETURN_IF_ERROR(backupdir::CheckBackupServerVersion(dir, o.no_server_version_check));
  if (util::PathExists(util::JoinPath(dir, "xbak_incremental_in_progress"))) {
    return Error(ErrorCode::kInvalidArgument,
                 "an incremental apply into " + dir +
                     " was interrupted: re-run that xbak --prepare --incremental-dir command first");
  }
  XBAK_RETURN_IF_ERROR(RefuseCompressed(dir));
  // The markers run after the whole log was checked: a broken log must be
  // found before anything changes the backup.
  return ApplyLogAndMarkPrepared(o, [&dir] { return ApplyDdlMarkers(dir); });
}

}  // namespace xbak::prepare
