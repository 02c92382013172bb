#include "xbak/prepare/export.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/isl.h"
#include "xbak/mysql/connection.h"
#include "xbak/mysql/private_server.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"
#include "xbak/util/process.h"

namespace xbak::prepare {
namespace {

constexpr const char* kKeptCfg = ".cfg.xbak-export";  // a .cfg kept past UNLOCK TABLES

// Renames every db/*`from` to db/*`to` (suffixes) in the backup's database
// directories; `from` empty is not allowed.
Status RenameSuffixes(const std::string& dir, const std::string& from, const std::string& to, size_t* count) {
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(dir));
  for (const auto& db : top) {
    const std::string dbdir = util::JoinPath(dir, db);
    if (backupdir::IsSkippedDatabaseDir(db) || !util::IsDirectory(dbdir)) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(dbdir));
    for (const auto& n : files) {
      if (n.size() <= from.size() || !n.ends_with(from)) continue;
      const std::string src = util::JoinPath(dbdir, n);
      const std::string dst = util::JoinPath(dbdir, n.substr(0, n.size() - from.size()) + to);
      if (::rename(src.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + src + " to", dst, errno);
      if (count) (*count)++;
    }
  }
  return Status::Ok();
}

Status WritePrivateFile(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("create", path, errno);
  const bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  const int err = errno;
  ::close(fd);
  return ok ? Status::Ok() : ErrnoError("write", path, err);
}

// The server started on the backup (mysql::PrivateServer), with the
// backup's own settings and the keys --prepare found.
class ExportServer {
 public:
  // `data_file_path`: innodb_data_file_path with the backup's file names.
  ExportServer(const ExportOptions& o, std::string run_dir, std::string data_file_path)
      : o_(o), run_(std::move(run_dir)), data_file_path_(std::move(data_file_path)) {}
  // A key file password handed over in a file never outlives the export
  // (the server read it at its start), whatever way it ends.
  ~ExportServer() { (void)::unlink(util::JoinPath(run_, "filekey").c_str()); }
  ExportServer(const ExportServer&) = delete;
  ExportServer& operator=(const ExportServer&) = delete;

  Status Start(const std::string& program) {
    mysql::PrivateServerOptions so;
    so.what = "the export server";
    so.program = program;
    so.run_dir = run_;
    so.args = ServerArguments();
    XBAK_RETURN_IF_ERROR(AddKeyArguments(&so.args));
    so.start_timeout = o_.start_timeout;
    so.read_timeout_s = 3600;  // FLUSH ... FOR EXPORT of a large table flushes all its pages
    so.progress = o_.progress_interval.count() > 0;
    server_ = std::make_unique<mysql::PrivateServer>(std::move(so));
    return server_->Start();
  }
  mysql::Connection& conn() { return server_->conn(); }
  // A slow shutdown (--innodb-fast-shutdown=0): everything flushed, purged
  // and merged, so the files are those of a cleanly stopped server.
  Status Stop() { return server_ ? server_->Stop() : Status::Ok(); }

 private:
  // Only the backup's own settings (page size, data files, log size,
  // compression providers): never the host's my.cnf, which may name the
  // production datadir, a Galera cluster or a replication source.
  std::vector<std::string> ServerArguments() const {
    const std::string& d = o_.dir;
    std::vector<std::string> argv = {
        "--defaults-file=" + util::JoinPath(d, backupdir::kBackupCnfFile),
        "--datadir=" + d,
        "--innodb-data-home-dir=" + d,
        "--innodb-log-group-home-dir=" + d,
        "--innodb-undo-directory=" + d,
        "--aria-log-dir-path=" + d,
        "--tmpdir=" + run_,
        "--skip-grant-tables",
        "--skip-log-bin",
        "--loose-skip-slave-start",
        "--loose-wsrep-on=OFF",
        "--loose-event-scheduler=OFF",
        "--performance-schema=OFF",
        "--innodb-buffer-pool-size=" + std::to_string(o_.buffer_pool),
        "--innodb-buffer-pool-load-at-startup=OFF",
        "--innodb-buffer-pool-dump-at-shutdown=OFF",
        "--innodb-fast-shutdown=0",
    };
    if (!data_file_path_.empty()) argv.push_back("--innodb-data-file-path=" + data_file_path_);
    return argv;
  }

  // The key file where the prepare found it (its options are the
  // plugin's, known only once backup-my.cnf loaded it: hence loose-).
  Status AddKeyArguments(std::vector<std::string>* argv) const {
    if (!o_.keys.filename.empty())
      argv->push_back("--loose-file-key-management-filename=" + o_.keys.filename);
    if (!o_.keys.filekey.empty()) {
      std::string fk = o_.keys.filekey;
      if (fk.rfind("FILE:", 0) != 0) {
        // A password given to xbak itself goes to the server in a file only
        // we read (in our private run directory), never on its command line.
        XBAK_RETURN_IF_ERROR(WritePrivateFile(util::JoinPath(run_, "filekey"), fk));
        fk = "FILE:" + util::JoinPath(run_, "filekey");
      }
      argv->push_back("--loose-file-key-management-filekey=" + fk);
    }
    if (!o_.keys.algorithm.empty()) {
      argv->push_back("--loose-file-key-management-encryption-algorithm=" + o_.keys.algorithm);
    }
    return Status::Ok();
  }

  const ExportOptions& o_;
  const std::string run_;
  const std::string data_file_path_;
  std::unique_ptr<mysql::PrivateServer> server_;
};

struct Table {
  std::string schema, name;        // SQL names
  std::string fs_dir;              // the database directory (filename encoding)
  std::vector<std::string> stems;  // files without ".ibd": "t", or "t#P#p0", ...
};

// Every InnoDB table the server sees, with the file names the server uses for
// it (CONVERT(... USING filename) is the server's own filename encoding).
Result<std::vector<Table>> ListTables(mysql::Connection& c) {
  auto fs = [](const char* col) {
    return std::string("CAST(CONVERT(") + col + " USING filename) AS BINARY)";
  };
  XBAK_ASSIGN_OR_RETURN(
      auto rows,
      c.Query("SELECT TABLE_SCHEMA, TABLE_NAME, " + fs("TABLE_SCHEMA") + ", " + fs("TABLE_NAME") +
              ", CREATE_OPTIONS LIKE '%partitioned%' FROM information_schema.TABLES WHERE ENGINE = 'InnoDB' "
              "AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, TABLE_NAME"));
  XBAK_ASSIGN_OR_RETURN(
      auto parts,
      c.Query("SELECT TABLE_SCHEMA, TABLE_NAME, " + fs("PARTITION_NAME") + ", " + fs("SUBPARTITION_NAME") +
              " FROM information_schema.PARTITIONS WHERE PARTITION_NAME IS NOT NULL "
              "ORDER BY TABLE_SCHEMA, TABLE_NAME, PARTITION_ORDINAL_POSITION, "
              "SUBPARTITION_ORDINAL_POSITION"));
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> suffixes;
  for (const auto& r : parts) {
    if (r.size() < 4 || !r[0] || !r[1] || !r[2]) continue;
    std::string s = "#P#" + *r[2];
    if (r[3]) s += "#SP#" + *r[3];
    suffixes[{*r[0], *r[1]}].push_back(s);
  }
  std::vector<Table> out;
  for (const auto& r : rows) {
    if (r.size() < 5 || !r[0] || !r[1] || !r[2] || !r[3]) continue;
    Table t{*r[0], *r[1], *r[2], {}};
    if (r[4] && *r[4] == "1") {
      for (const auto& s : suffixes[{t.schema, t.name}]) t.stems.push_back(*r[3] + s);
    } else {
      t.stems.push_back(*r[3]);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// A server running on the backup holds a write lock on its first system
// tablespace file (InnoDB's os_file_lock).
Status RefuseIfInUse(const std::string& dir, const std::string& ibdata) {
  const std::string path = util::JoinPath(dir, ibdata);
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open", path, errno);
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  if (::fcntl(fd.get(), F_GETLK, &lk) != 0) return ErrnoError("test the lock of", path, errno);
  if (lk.l_type != F_UNLCK) {
    return Error(ErrorCode::kAlreadyExists, "a MariaDB server (pid " + std::to_string(lk.l_pid) +
                                                ") is running on " + dir + " (it holds " + path +
                                                "); stop it first; nothing was changed");
  }
  return Status::Ok();
}

// innodb_data_file_path with the names the backup stores (the source's may
// be absolute paths, which the export server would look for).
std::string LocalDataFilePath(const std::string& spec) {
  std::string out;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t semi = spec.find(';', pos);
    if (semi == std::string::npos) semi = spec.size();
    std::string item = spec.substr(pos, semi - pos);
    pos = semi + 1;
    const size_t colon = item.find(':');
    const size_t slash = item.rfind('/', colon);
    if (slash != std::string::npos) item = item.substr(slash + 1);
    if (!item.empty()) out += (out.empty() ? "" : ";") + item;
  }
  return out;
}

}  // namespace

namespace {

// The server program that writes the .cfg files: of the backup's version
// (another would upgrade the backup's files). *mine: its MAJOR.MINOR.
Result<std::string> FindExportServer(const ExportOptions& o, std::string* mine_out) {
  const std::string& d = o.dir;
  const std::string program =
      util::FindExecutable({o.mariadbd.empty() ? std::string("mariadbd") : o.mariadbd});
  if (program.empty()) {
    return Error(
        ErrorCode::kNotFound,
        "--export needs the MariaDB server program of the backup's version to write the .cfg files (" +
            (o.mariadbd.empty() ? std::string("no mariadbd in PATH, /usr/sbin or /usr/bin") : o.mariadbd) +
            "): install mariadb-server, or give --mariadbd=PATH; nothing was changed");
  }
  XBAK_ASSIGN_OR_RETURN(const std::string mine, mysql::ProgramSeries(program));
  *mine_out = mine;
  const std::string backup_version = backupdir::InfoServerVersion(d);
  if (backup_version.empty()) {
    util::LogWarning(backupdir::MetaPath(d, backupdir::Meta::kInfo) +
                     " does not name the server version; using " + program + " (" + mine + ")");
  } else if (mysql::MajorMinor(backup_version) != mine) {
    return Error(ErrorCode::kUnsupported,
                 "--export: " + program + " is MariaDB " + mine + " but the backup is of " + backup_version +
                     "; a server of another version would upgrade the backup's files. "
                     "Give --mariadbd=PATH of a " +
                     mysql::MajorMinor(backup_version) + " server; nothing was changed");
  }

  return program;
}

// FLUSH TABLES ... FOR EXPORT of one table, its .cfg files kept aside
// (UNLOCK TABLES removes them); a table the server would not export is
// counted and named, not an error.
Status ExportOne(ExportServer& server, const std::string& d, const Table& t, ExportResult* res_out) {
  ExportResult& res = *res_out;
  const std::string sql_name =
      mysql::Connection::QuoteIdentifier(t.schema) + "." + mysql::Connection::QuoteIdentifier(t.name);
  Status st = server.conn().Execute("FLUSH TABLES " + sql_name + " FOR EXPORT");
  std::string why;
  size_t kept = 0;
  if (st.ok()) {
    for (const auto& stem : t.stems) {
      const std::string cfg = util::JoinPath(util::JoinPath(d, t.fs_dir), stem + ".cfg");
      const std::string keep = util::JoinPath(util::JoinPath(d, t.fs_dir), stem + kKeptCfg);
      (void)::unlink(keep.c_str());
      if (::link(cfg.c_str(), keep.c_str()) == 0) {
        kept++;
      } else if (errno != ENOENT) {
        (void)server.conn().Execute("UNLOCK TABLES");
        return ErrnoError("keep " + cfg + " as", keep, errno);
      }
    }
    if (kept < t.stems.size()) {
      auto w = server.conn().Query("SHOW WARNINGS");
      if (w.ok()) {
        for (const auto& r : *w) {
          if (r.size() >= 3 && r[2]) why += (why.empty() ? "" : "; ") + *r[2];
        }
      }
      if (why.empty()) why = "the server wrote no .cfg for it";
    }
    XBAK_RETURN_IF_ERROR(server.conn().Execute("UNLOCK TABLES"));
  } else {
    why = st.message();
  }
  if (!why.empty() || kept < t.stems.size()) {
    res.not_exported++;
    util::LogWarning("not exported: " + t.schema + "." + t.name + ": " + why);
  } else {
    res.exported++;
  }
  return Status::Ok();
}

// The backup directory as an absolute path (the server resolves relative
// paths against its datadir), refused unless it is prepared.
Result<std::string> PreparedBackupDir(const std::string& dir) {
  char* rp = ::realpath(dir.c_str(), nullptr);
  if (rp == nullptr) return ErrnoError("find", dir, errno);
  const std::string d = rp;
  ::free(rp);
  XBAK_ASSIGN_OR_RETURN(backupdir::Checkpoints cp, backupdir::ReadCheckpoints(d));
  if (cp.backup_type != "log-applied") {
    return Error(ErrorCode::kInvalidArgument, d + " is not prepared (backup_type = " + cp.backup_type + ")");
  }
  return d;
}

// innodb_data_file_path of backup-my.cnf, its files taken from the backup
// directory ("" when backup-my.cnf does not set it).
Result<std::string> BackupDataFilePath(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(auto cnf_options,
                        util::ReadOptionFile(util::JoinPath(dir, backupdir::kBackupCnfFile), {"mysqld"}));
  auto it = cnf_options.find("innodb-data-file-path");
  return it == cnf_options.end() ? std::string() : LocalDataFilePath(it->second.value);
}

// The server's run directory and its log: of no further use once it stopped cleanly.
void RemoveRunDir(const std::string& run) {
  (void)::unlink(util::JoinPath(run, "server.log").c_str());
  (void)::unlink(util::JoinPath(run, "stderr").c_str());
  (void)::unlink(util::JoinPath(run, "filekey").c_str());
  (void)::rmdir(run.c_str());
}

}  // namespace

Result<ExportResult> ExportTables(const ExportOptions& opts) {
  ExportOptions o = opts;
  XBAK_ASSIGN_OR_RETURN(o.dir, PreparedBackupDir(opts.dir));
  const std::string& d = o.dir;

  std::string mine;  // the server program's MAJOR.MINOR
  XBAK_ASSIGN_OR_RETURN(const std::string program, FindExportServer(o, &mine));
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf cnf, backupdir::ReadBackupCnf(d));
  XBAK_RETURN_IF_ERROR(RefuseIfInUse(d, cnf.system_files.front()));
  XBAK_ASSIGN_OR_RETURN(const std::string data_file_path, BackupDataFilePath(d));

  // An earlier export that was interrupted: its set-aside .isl files first.
  size_t restored = 0;
  XBAK_RETURN_IF_ERROR(RenameSuffixes(d, std::string(kHiddenIslSuffix), innodb::kIslSuffix, &restored));
  if (restored)
    util::LogWarning("put back " + std::to_string(restored) +
                     " .isl file(s) set aside by an interrupted export");

  XBAK_ASSIGN_OR_RETURN(const std::string run, mysql::MakePrivateRunDir(o.tmpdir, "xbak-export"));

  // From here the backup is changed: say so first.
  XBAK_RETURN_IF_ERROR(
      util::WriteFileAtomic(util::JoinPath(d, kExportedFile), "exported with " + program + " (" + mine +
                                                                  "); this backup can no longer "
                                                                  "take incrementals\n"));
  // On every way out the .isl files go back (a kill -9 leaves them set
  // aside: the next --export puts them back, --copy-back refuses until then).
  const std::string hidden_suffix = std::string(kHiddenIslSuffix);
  struct PutIslBack {
    const std::string& dir;
    const std::string& suffix;
    bool done = false;
    Status Now() {
      done = true;
      return RenameSuffixes(dir, suffix, innodb::kIslSuffix, nullptr);
    }
    ~PutIslBack() {
      if (!done) (void)Now();
    }
  } put_back{d, hidden_suffix};
  size_t hidden = 0;
  XBAK_RETURN_IF_ERROR(RenameSuffixes(d, innodb::kIslSuffix, hidden_suffix, &hidden));
  if (hidden)
    util::LogInfo("set aside " + std::to_string(hidden) + " .isl file(s) while the export server runs");

  ExportResult res;
  {
    ExportServer server(o, run, data_file_path);
    XBAK_RETURN_IF_ERROR(server.Start(program));
    XBAK_ASSIGN_OR_RETURN(std::vector<Table> tables, ListTables(server.conn()));
    util::LogInfo("writing .cfg files for " + std::to_string(tables.size()) + " InnoDB tables");
    for (const auto& t : tables) XBAK_RETURN_IF_ERROR(ExportOne(server, d, t, &res));
    XBAK_RETURN_IF_ERROR(server.Stop());
  }
  XBAK_RETURN_IF_ERROR(put_back.Now().With("putting back the DATA DIRECTORY links of " + d));
  size_t cfgs = 0;
  XBAK_RETURN_IF_ERROR(RenameSuffixes(d, kKeptCfg, ".cfg", &cfgs));
  XBAK_RETURN_IF_ERROR(util::SyncFilesystem(d));
  RemoveRunDir(run);
  util::LogInfo(
      "exported " + std::to_string(res.exported) + " tables (" + std::to_string(cfgs) + " .cfg files)" +
      (res.not_exported ? ", " + std::to_string(res.not_exported) + " not (named above)" : std::string()));
  return res;
}

}  // namespace xbak::prepare
