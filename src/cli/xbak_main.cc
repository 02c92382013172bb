// xbak: hot backup for MariaDB 10.11 InnoDB. Option names follow
// xtrabackup/mariabackup so operators can switch without relearning.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.h"
#include "common.h"
#include "xbak/backup/backup.h"
#include "xbak/backup/copy_back.h"
#include "xbak/backup/export.h"
#include "xbak/backup/incremental_prepare.h"
#include "xbak/backup/metadata.h"
#include "xbak/backup/prepare.h"
#include "xbak/backup/restore.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"
#include "xbak/sink/fifo.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"
#include "xbak/util/size.h"
#include "xbak/verify/verify.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "Usage: xbak MODE [OPTIONS]\n"
    "Hot backup of a running MariaDB 10.11 server (InnoDB, Aria, MyISAM, ...).\n\n"
    "Modes:\n"
    "  --backup       copy a running server into --target-dir (or --stream=xbstream to stdout)\n"
    "  --prepare      apply the redo log copied during the backup (in parallel, --use-memory bounds\n"
    "                 it), so that --target-dir holds a consistent copy; with --incremental-dir: apply\n"
    "                 an incremental's deltas and redo log onto a prepared full backup\n"
    "  --copy-back    restore a prepared backup into an empty --datadir\n"
    "  --move-back    like --copy-back, but moves the files\n"
    "  --restore      a chain straight into an empty --datadir, in one pass, without changing the\n"
    "                 backups: --target-dir=FULL [--incremental-dir=INC ...] (repeated, in order;\n"
    "                 unprepared, as they were taken) or --from-stream=FULL.xb --from-stream=INC.xb ...;\n"
    "                 re-run the same command to resume it (see docs/restore.md)\n"
    "  --extract, -x  unpack an xbstream (stdin, --input=FILE or --fifo-streams) into -C DIR\n"
    "  --decompress   decompress the .zst/.lz4 files of a backup in --target-dir\n"
    "  --verify       check a backup in --target-dir (and its incrementals: --incremental-dir=INC,\n"
    "                 repeated, in order) without changing it: page checksums, deltas, redo log,\n"
    "                 promised files, LSN chain; one line per problem, exit status 0 only if sound\n\n"
    "Option files: --defaults-file=F replaces ~/.my.cnf; groups [client] and [xbak] give the\n"
    "connection, [mysqld]/[mariadbd] give datadir for --copy-back and --restore. The password may also come "
    "from\n"
    "the MYSQL_PWD environment variable; it never has to be on the command line.\n\n";

// What an options file may give: the connection from the client groups,
// paths from the server groups.
constexpr std::string_view kClientOptions[] = {"user", "password", "host", "port", "socket"};
constexpr std::string_view kServerOptions[] = {"datadir", "innodb-log-group-home-dir", "innodb-data-home-dir",
                                               "innodb-undo-directory"};

}  // namespace

using xbak::cli::Fail;

int main(int argc, char** argv) {
  // A reader of our stdout/FIFO that goes away must give a clear EPIPE error,
  // not kill us silently with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  // Wiped only once the parser holds its own copy (wiping first would send the
  // x's as the password).
  std::string tool_command;

  po::options_description modes("Modes");
  modes.add_options()("backup", "take a backup")("prepare", "prepare a backup")(
      "copy-back", "restore a prepared backup")("move-back", "restore by moving files")(
      "restore", "restore a chain in one pass")("extract,x", "unpack an xbstream")(
      "decompress", "decompress a compressed backup")("verify", "check a backup (and its incrementals)")(
      "help", "show this help")("version", "show the version");

  po::options_description conn("Connection (also from [client]/[xbak] in option files)");
  conn.add_options()("user,u", po::value<std::string>(), "user name")(
      "password,p", po::value<std::string>(), "password (prefer MYSQL_PWD or an option file)")(
      "host,H", po::value<std::string>(), "server host (the server must be on this machine)")(
      "port,P", po::value<unsigned>(), "TCP port")("socket,S", po::value<std::string>(), "unix socket")(
      "defaults-file", po::value<std::string>(), "read options only from this file")("no-defaults",
                                                                                     "read no option file");

  po::options_description general("Backup and restore");
  general.add_options()("target-dir", po::value<std::string>(), "backup directory")(
      "datadir,h", po::value<std::string>(), "server datadir (default: asked from the server)")(
      "parallel", po::value<int>()->default_value(1), "copy threads")(
      "stream", po::value<std::string>(), "xbstream: write the backup to stdout as an xbstream")(
      "incremental-basedir", po::value<std::string>(),
      "incremental backup: only pages changed since the backup in this directory (its to_lsn)")(
      "incremental-lsn", po::value<uint64_t>(), "incremental backup: only pages changed after this LSN")(
      "incremental-dir", po::value<std::vector<std::string>>(),
      "--prepare: the incremental backup to apply to --target-dir; --verify: an incremental of the "
      "chain (repeat, in order)")("slave-info",
                                  "record the replication position of this replica in xtrabackup_slave_info")(
      "galera-info",
      "--backup of a Galera node: record its cluster position (state UUID:seqno and GTID domain) in "
      "xtrabackup_galera_info")(
      "safe-slave-backup",
      "--backup of a replica: stop its replication SQL thread while the server is held, once no "
      "temporary table is open in it; started again right after")(
      "safe-slave-backup-timeout", po::value<unsigned>()->default_value(300),
      "seconds --safe-slave-backup waits for the SQL thread's temporary tables to close")(
      "lock-wait-timeout", po::value<unsigned>()->default_value(0),
      "seconds BACKUP STAGE may wait for a lock (0: server default)")(
      "log-copy-timeout", po::value<unsigned>()->default_value(60),
      "fail if the redo log copy makes no progress for this many seconds")(
      "page-retries", po::value<int>()->default_value(10), "re-reads of a page with a bad checksum")(
      "tmpdir,t", po::value<std::string>(),
      "--backup: where the redo log copy spools what a slow output (stream, FIFO, upload) has not "
      "taken yet, beyond --redo-spool-memory (an unnamed file, gone when xbak exits; default $TMPDIR "
      "or /tmp)")("redo-spool-memory", po::value<std::string>()->default_value("16M"),
                  "--backup: redo log held in memory for a slow output before spooling to --tmpdir (K/M/G)")(
      "log-copy-interval", po::value<unsigned>()->default_value(20),
      "--backup: longest wait in ms between reads of an idle server's redo log (a busy log is read "
      "again within 1 ms)")(
      "history", po::value<std::string>()->implicit_value(""),
      "--backup: record the backup in mysql.mariadb_backup_history (as mariabackup does), in the series "
      "NAME if given (--history=NAME)")(
      "incremental-history-name", po::value<std::string>(),
      "--backup: incremental from the latest backup of this --history series")(
      "incremental-history-uuid", po::value<std::string>(),
      "--backup: incremental from the --history row with this uuid")(
      "extra-lsndir", po::value<std::string>(),
      "--backup: also write xtrabackup_checkpoints and xtrabackup_info to this local directory once "
      "the backup is complete (with --stream: the next --incremental-basedir)")(
      "throttle", po::value<uint64_t>()->default_value(0),
      "--backup: at most this many data file I/O operations (1 MiB read + write) per second, to "
      "spare the server's disk (0: unlimited; the redo log copy is never throttled)")(
      "apply-log-only",
      "accepted for compatibility (prepare): MariaDB 10.11 rolls back incomplete transactions at "
      "server start, so every prepared backup can still take incrementals")(
      "export",
      "--prepare: then write a .cfg file beside every InnoDB table, for ALTER TABLE ... IMPORT "
      "TABLESPACE into a running server; starts a MariaDB server of the backup's version on the backup "
      "(docs/export.md); the backup then takes no more incrementals")(
      "mariadbd", po::value<std::string>(),
      "--export: the MariaDB server program to use (default: mariadbd in PATH, /usr/sbin, /usr/bin)")(
      "use-memory", po::value<std::string>()->default_value("256M"),
      "--prepare, --restore: memory for the parsed redo log of one batch (K/M/G suffixes); a longer log is "
      "applied in several batches")("force-non-empty-directories",
                                    "copy-back into a non-empty datadir (never overwrites files)")(
      "remote-tablespaces-to-datadir",
      "copy-back, restore: put tables created with DATA DIRECTORY in the datadir, without their .isl, "
      "instead "
      "of back into the directory their .isl names")("innodb-log-group-home-dir", po::value<std::string>(),
                                                     "copy-back, restore: where ib_logfile0 goes")(
      "innodb-data-home-dir", po::value<std::string>(), "copy-back, restore: where ibdata files go")(
      "innodb-undo-directory", po::value<std::string>(), "copy-back, restore: where undo tablespaces go")(
      "from-stream", po::value<std::vector<std::string>>(),
      "--restore from xbstreams instead of directories: a file, named pipe or - (stdin), repeated: the "
      "full backup's first, then each incremental's, in order (e.g. pipes fed by xbcloud get)")(
      "progress-interval", po::value<unsigned>()->default_value(2),
      "seconds between progress lines (0: none)");

  po::options_description streaming("Streaming, FIFOs, compression, extraction");
  streaming.add_options()(
      "fifo-streams", po::value<int>()->default_value(1),
      "with --stream: N>1 writes N xbstreams to named pipes DIR/thread_0..N-1 (one per reader); "
      "with --extract: read N such pipes")("fifo-dir", po::value<std::string>(),
                                           "directory of the named pipes")(
      "fifo-timeout", po::value<unsigned>()->default_value(60),
      "seconds to wait for the other end of each pipe")(
      "compress", po::value<std::string>()->implicit_value("zstd"),
      "compress data files and the redo log: zstd (default) or lz4; files get .zst/.lz4")(
      "compress-threads", po::value<int>()->default_value(1), "compression threads")(
      "compress-chunk-size", po::value<size_t>()->default_value(64 << 10), "lz4 block size in bytes")(
      "compress-zstd-level", po::value<int>()->default_value(1), "zstd level (1-19)")(
      "directory,C", po::value<std::string>(), "--extract: target directory")(
      "input", po::value<std::string>(), "--extract: read this file instead of stdin")(
      "overwrite", "--extract: replace files that exist in the target")(
      "remove-original", "--decompress: delete X.zst once X is complete");

  po::options_description partial(
      "Partial backups (--backup; names as on disk, db.table; see docs/partial.md)");
  partial.add_options()("databases", po::value<std::string>(),
                        "take only these databases and tables: \"db1 db2.t1 ...\"")(
      "databases-file", po::value<std::string>(),
      "take only the databases and db.tables listed in this file")(
      "databases-exclude", po::value<std::string>(),
      "leave out these databases and tables: \"db1 db2.t1 ...\"")(
      "tables", po::value<std::string>(),
      "take only tables whose db.table matches one of these POSIX extended regexes (comma-separated)")(
      "tables-file", po::value<std::string>(), "take only the db.table names listed in this file")(
      "tables-exclude", po::value<std::string>(),
      "leave out tables whose db.table matches one of these regexes (comma-separated)");

  po::options_description keys(
      "Encryption (--prepare of a server's encrypted tables or redo log; default: as backup-my.cnf "
      "says; see docs/encryption.md)");
  keys.add_options()("file-key-management-filename", po::value<std::string>(),
                     "the file_key_management key file (where it is on this host)")(
      "file-key-management-filekey", po::value<std::string>(),
      "FILE:path of the file holding the key file's password (the password itself also works, but "
      "shows in ps; or set XBAK_FILE_KEY_MANAGEMENT_FILEKEY)")(
      "file-key-management-encryption-algorithm", po::value<std::string>(), "aes_cbc or aes_ctr");
  // mariabackup takes these with the loose- prefix: the same, for scripts.
  po::options_description loose;
  for (const char* k : {"file-key-management-filename", "file-key-management-filekey",
                        "file-key-management-encryption-algorithm"}) {
    loose.add_options()((std::string("loose-") + k).c_str(), po::value<std::string>(), "");
  }

  po::options_description all, visible;
  visible.add(modes).add(conn).add(general).add(partial).add(streaming).add(keys);
  all.add(visible).add(loose);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(xbak::cli::NormalizedArgs(argc, argv)).options(all).run(), vm);
    tool_command = xbak::cli::WipeSecrets(argc, argv, xbak::cli::kXbakSecrets);
    auto [file, must] = xbak::ChooseOptionFile(argc, argv);
    if (!file.empty()) {
      // Connection options from the client groups, paths from the server
      // groups; [xbak] last so it wins.
      auto client = xbak::ReadOptionFile(file, {"client", "client-server", "xbak"}, must);
      auto server = xbak::ReadOptionFile(file, {"mysqld", "mariadbd", "server", "xbak"}, must);
      if (!client.ok()) return Fail(client.status());
      if (!server.ok()) return Fail(server.status());
      std::vector<std::string> args = xbak::cli::OptionFileArgs(client.value(), kClientOptions);
      for (std::string& a : xbak::cli::OptionFileArgs(server.value(), kServerOptions))
        args.push_back(std::move(a));
      // Command-line values were stored first and win.
      po::store(po::command_line_parser(args).options(all).run(), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "xbak: " << e.what() << "\n(see xbak --help)\n";
    return 2;
  }

  if (vm.count("help")) {
    std::cout << kUsage << visible << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "xbak " << XBAK_VERSION << "\n";
    return 0;
  }
  if (vm.count("export") && !vm.count("prepare")) {
    std::cerr << "xbak: --export goes with --prepare (see docs/export.md)\n";
    return 2;
  }
  xbak::KeyOptions key_options;
  for (auto [field, k] : {std::pair{&key_options.filename, "file-key-management-filename"},
                          std::pair{&key_options.filekey, "file-key-management-filekey"},
                          std::pair{&key_options.algorithm, "file-key-management-encryption-algorithm"}}) {
    for (const std::string& name : {std::string(k), std::string("loose-") + k}) {
      if (!vm.count(name)) continue;
      if (!vm.count("prepare")) {
        std::cerr << "xbak: --" << name << " goes with --prepare (the backup reads no keys)\n";
        return 2;
      }
      *field = vm[name].as<std::string>();
    }
  }
  if (const char* fk = std::getenv("XBAK_FILE_KEY_MANAGEMENT_FILEKEY"); fk && key_options.filekey.empty()) {
    key_options.filekey = fk;
  }
  if (vm.count("mariadbd") && !vm.count("export")) {
    std::cerr << "xbak: --mariadbd goes with --prepare --export\n";
    return 2;
  }
  if (!vm.count("backup")) {
    // A partial backup is chosen when it is taken; anywhere else the options
    // would be silently ignored (--prepare --export --tables=... exports all).
    for (const char* k :
         {"databases", "databases-file", "databases-exclude", "tables", "tables-file", "tables-exclude"}) {
      if (vm.count(k)) {
        std::cerr << "xbak: --" << k
                  << " applies to --backup only (a partial backup is chosen when it is taken; "
                  << "see docs/partial.md)\n";
        return 2;
      }
    }
  }
  int nmodes = static_cast<int>(vm.count("backup") + vm.count("prepare") + vm.count("copy-back") +
                                vm.count("restore") + vm.count("move-back") + vm.count("extract") +
                                vm.count("decompress") + vm.count("verify"));
  if (nmodes != 1) {
    std::cerr
        << "xbak: give exactly one of --backup, --prepare, --copy-back, --move-back, --restore, --extract, "
           "--decompress, --verify (see --help)\n";
    return 2;
  }
  auto str = [&](const char* k) {
    if (!vm.count(k)) return std::string();
    // --incremental-dir may repeat (--verify, --restore); other modes take one.
    if (auto* v = boost::any_cast<std::vector<std::string>>(&vm[k].value())) return v->back();
    return vm[k].as<std::string>();
  };
  if (vm.count("incremental-dir") && vm["incremental-dir"].as<std::vector<std::string>>().size() > 1 &&
      !vm.count("verify") && !vm.count("restore")) {
    std::cerr << "xbak: --incremental-dir may be repeated only with --verify and --restore\n";
    return 2;
  }
  int parallel = vm["parallel"].as<int>();
  if (parallel < 1 || parallel > 256) {
    std::cerr << "xbak: --parallel must be between 1 and 256, got " << parallel << "\n";
    return 2;
  }

  int fifo_streams = vm["fifo-streams"].as<int>();
  if (fifo_streams < 1 || fifo_streams > 64) {
    std::cerr << "xbak: --fifo-streams must be between 1 and 64, got " << fifo_streams << "\n";
    return 2;
  }
  if (fifo_streams > 1 && !vm.count("fifo-dir")) {
    std::cerr << "xbak: --fifo-streams=" << fifo_streams << " needs --fifo-dir\n";
    return 2;
  }
  auto fifo_timeout = std::chrono::seconds(vm["fifo-timeout"].as<unsigned>());

  if (vm.count("extract")) {
    xbak::ExtractOptions eo;
    eo.target_dir = str("directory");
    if (eo.target_dir.empty()) eo.target_dir = str("target-dir");
    if (eo.target_dir.empty()) {
      std::cerr << "xbak: --extract needs -C DIR (or --target-dir)\n";
      return 2;
    }
    eo.overwrite = vm.count("overwrite") > 0;
    if (xbak::Status st = xbak::MakeDirs(eo.target_dir); !st.ok()) return Fail(st);
    xbak::Status st;
    if (fifo_streams > 1) {
      auto fds = xbak::OpenFifosForReading(str("fifo-dir"), fifo_streams, fifo_timeout);
      if (!fds.ok()) return Fail(fds.status());
      std::vector<int> raw;
      for (auto& f : fds.value()) raw.push_back(f.get());
      st = xbak::ExtractStreams(raw, eo);
    } else if (vm.count("input")) {
      auto f = xbak::File::OpenRead(str("input"));
      if (!f.ok()) return Fail(f.status());
      st = xbak::ExtractStream(f->fd(), eo);
    } else {
      if (isatty(STDIN_FILENO)) {
        std::cerr << "xbak: --extract reads an xbstream from stdin; pipe one in or use --input=FILE\n";
        return 2;
      }
      st = xbak::ExtractStream(STDIN_FILENO, eo);
    }
    if (!st.ok()) return Fail(st);
    xbak::LogInfo("extracted into " + eo.target_dir);
    return 0;
  }
  if (vm.count("verify")) {
    xbak::VerifyOptions vo;
    vo.target_dir = str("target-dir");
    if (vo.target_dir.empty()) {
      std::cerr << "xbak: --verify needs --target-dir\n";
      return 2;
    }
    if (vm.count("incremental-dir"))
      vo.incremental_dirs = vm["incremental-dir"].as<std::vector<std::string>>();
    vo.parallel = parallel;
    auto r = xbak::VerifyBackup(vo);
    if (!r.ok()) return Fail(r.status());
    for (const auto& line : r->problems) std::cout << line << "\n";
    std::cout << r->Summary() << std::endl;
    return r->sound() ? 0 : 1;
  }
  if (vm.count("decompress")) {
    xbak::DecompressOptions d;
    d.target_dir = str("target-dir");
    if (d.target_dir.empty()) {
      std::cerr << "xbak: --decompress needs --target-dir\n";
      return 2;
    }
    d.parallel = parallel;
    d.remove_original = vm.count("remove-original") > 0;
    xbak::Status st = xbak::DecompressBackup(d);
    return st.ok() ? 0 : Fail(st);
  }

  if (vm.count("backup")) {
    xbak::BackupOptions o;
    o.conn.user = str("user");
    o.conn.password = str("password");
    if (o.conn.password.empty() && std::getenv("MYSQL_PWD")) o.conn.password = std::getenv("MYSQL_PWD");
    o.conn.host = str("host");
    o.conn.port = vm.count("port") ? vm["port"].as<unsigned>() : 0;
    o.conn.socket = str("socket");
    o.target_dir = str("target-dir");
    o.stream = str("stream");
    if (!o.stream.empty() && o.stream != "xbstream" && o.stream != "mbstream") {
      std::cerr << "xbak: --stream supports only xbstream, got '" << o.stream << "'\n";
      return 2;
    }
    o.fifo_streams = fifo_streams;
    o.fifo_dir = str("fifo-dir");
    o.fifo_timeout_s = vm["fifo-timeout"].as<unsigned>();
    if (o.fifo_streams > 1 && o.stream.empty()) {
      std::cerr << "xbak: --fifo-streams needs --stream=xbstream\n";
      return 2;
    }
    if (vm.count("compress")) {
      std::string algo = str("compress");
      if (algo == "zstd")
        o.compress_options.algo = xbak::CompressOptions::kZstd;
      else if (algo == "lz4")
        o.compress_options.algo = xbak::CompressOptions::kLz4;
      else {
        std::cerr << "xbak: --compress supports zstd and lz4, got '" << algo << "'\n";
        return 2;
      }
      o.compress = true;
      o.compress_options.threads = vm["compress-threads"].as<int>();
      o.compress_options.zstd_level = vm["compress-zstd-level"].as<int>();
      o.compress_options.chunk_size = vm["compress-chunk-size"].as<size_t>();
      if (o.compress_options.threads < 1 || o.compress_options.threads > 256) {
        std::cerr << "xbak: --compress-threads must be between 1 and 256\n";
        return 2;
      }
    }
    if (!o.stream.empty() && o.fifo_streams == 1 && isatty(STDOUT_FILENO)) {
      std::cerr << "xbak: --stream writes binary data to stdout; redirect it to a file or a pipe\n";
      return 2;
    }
    o.datadir = str("datadir");
    o.parallel = parallel;
    o.slave_info = vm.count("slave-info") > 0;
    if (vm.count("incremental-basedir") && vm.count("incremental-lsn")) {
      std::cerr << "xbak: give --incremental-basedir or --incremental-lsn, not both\n";
      return 2;
    }
    if (vm.count("incremental-lsn")) {
      o.incremental = true;
      o.incremental_lsn = vm["incremental-lsn"].as<uint64_t>();
    } else if (vm.count("incremental-basedir")) {
      std::string cp = xbak::JoinPath(str("incremental-basedir"), xbak::kCheckpointsFile);
      auto text = xbak::ReadSmallFile(cp);
      if (!text.ok()) {
        return Fail(xbak::Error(xbak::ErrorCode::kInvalidArgument,
                                "--incremental-basedir: " + str("incremental-basedir") +
                                    " is not a complete backup (" + text.status().message() + ")"));
      }
      auto c = xbak::ParseCheckpoints(text.value(), cp);
      if (!c.ok()) return Fail(c.status());
      o.incremental = true;
      o.incremental_lsn = c->to_lsn;
    }
    o.page_retries = vm["page-retries"].as<int>();
    o.lock_wait_timeout_s = vm["lock-wait-timeout"].as<unsigned>();
    o.log_wait_timeout_s = vm["log-copy-timeout"].as<unsigned>();
    if (vm.count("tmpdir")) o.tmpdir = str("tmpdir");
    o.extra_lsndir = str("extra-lsndir");
    o.tables.databases = str("databases");
    o.tables.databases_file = str("databases-file");
    o.tables.databases_exclude = str("databases-exclude");
    o.tables.tables = str("tables");
    o.tables.tables_file = str("tables-file");
    o.tables.tables_exclude = str("tables-exclude");
    o.history = vm.count("history") > 0;
    o.history_name = str("history");
    o.incremental_history_name = str("incremental-history-name");
    o.incremental_history_uuid = str("incremental-history-uuid");
    const int bases =
        static_cast<int>(vm.count("incremental-basedir") + vm.count("incremental-lsn") +
                         vm.count("incremental-history-name") + vm.count("incremental-history-uuid"));
    if (bases > 1) {
      std::cerr << "xbak: give one of --incremental-basedir, --incremental-lsn, --incremental-history-name, "
                   "--incremental-history-uuid\n";
      return 2;
    }
    o.safe_slave_backup = vm.count("safe-slave-backup") > 0;
    o.galera_info = vm.count("galera-info") > 0;
    o.safe_slave_timeout = std::chrono::seconds(vm["safe-slave-backup-timeout"].as<unsigned>());
    {
      const std::string m = vm["redo-spool-memory"].as<std::string>();
      auto v = xbak::ParseSize(m);
      if (!v || *v < (1ull << 20)) {
        std::cerr << "xbak: --redo-spool-memory must be a size of at least 1M (e.g. 64M, 1G), got '" << m
                  << "'\n";
        return 2;
      }
      o.redo_spool_memory = static_cast<size_t>(*v);
    }
    o.throttle = vm["throttle"].as<uint64_t>();
    o.log_copy_interval = std::chrono::milliseconds(std::max(1u, vm["log-copy-interval"].as<unsigned>()));
    o.tool_command = tool_command;
    o.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    xbak::Status st = xbak::RunBackup(o);
    return st.ok() ? 0 : Fail(st);
  }
  uint64_t use_memory = 0;
  {
    const std::string m = vm["use-memory"].as<std::string>();
    auto v = xbak::ParseSize(m);
    if (!v || *v < (16ull << 20)) {
      std::cerr << "xbak: --use-memory must be a size of at least 16M (e.g. 512M, 2G), got '" << m << "'\n";
      return 2;
    }
    use_memory = *v;
  }
  // --export: once the prepare is done, .cfg files for IMPORT TABLESPACE.
  auto export_tables = [&](const std::string& dir) -> int {
    if (!vm.count("export")) return 0;
    xbak::ExportOptions eo;
    eo.dir = dir;
    eo.mariadbd = str("mariadbd");
    eo.buffer_pool = use_memory;
    eo.tmpdir = str("tmpdir");
    eo.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    eo.keys = key_options;
    auto r = xbak::ExportTables(eo);
    return r.ok() ? 0 : Fail(r.status());
  };
  if (vm.count("prepare") && vm.count("incremental-dir")) {
    xbak::IncrementalPrepareOptions ip;
    ip.use_memory = use_memory;
    ip.target_dir = str("target-dir");
    ip.incremental_dir = str("incremental-dir");
    if (ip.target_dir.empty()) {
      std::cerr << "xbak: --prepare needs --target-dir\n";
      return 2;
    }
    ip.parallel = parallel;
    ip.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    ip.keys = key_options;
    xbak::Status st = xbak::RunIncrementalPrepare(ip);
    return st.ok() ? export_tables(ip.target_dir) : Fail(st);
  }
  if (vm.count("prepare")) {
    xbak::PrepareOptions po;
    po.target_dir = str("target-dir");
    if (po.target_dir.empty()) {
      std::cerr << "xbak: --prepare needs --target-dir\n";
      return 2;
    }
    po.parallel = parallel;
    po.use_memory = use_memory;
    po.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    po.keys = key_options;
    xbak::Status st = xbak::RunPrepare(po);
    return st.ok() ? export_tables(po.target_dir) : Fail(st);
  }
  if (vm.count("restore")) {
    if (vm.count("force-non-empty-directories")) {
      std::cerr << "xbak: --restore writes only into empty directories; --force-non-empty-directories is "
                   "for --copy-back\n";
      return 2;
    }
    xbak::RestoreOptions ro;
    ro.full_dir = str("target-dir");
    if (vm.count("from-stream")) ro.streams = vm["from-stream"].as<std::vector<std::string>>();
    if (vm.count("incremental-dir"))
      ro.incremental_dirs = vm["incremental-dir"].as<std::vector<std::string>>();
    ro.dirs = {str("datadir"), str("innodb-log-group-home-dir"), str("innodb-data-home-dir"),
               str("innodb-undo-directory"), vm.count("remote-tablespaces-to-datadir") > 0};
    ro.parallel = parallel;
    ro.use_memory = use_memory;
    ro.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    ro.keys = key_options;
    xbak::Status st = xbak::RunRestore(ro);
    return st.ok() ? 0 : Fail(st);
  }
  xbak::CopyBackOptions o;
  o.backup_dir = str("target-dir");
  o.datadir = str("datadir");
  o.log_dir = str("innodb-log-group-home-dir");
  o.data_home_dir = str("innodb-data-home-dir");
  o.undo_dir = str("innodb-undo-directory");
  o.move = vm.count("move-back") > 0;
  o.force_non_empty = vm.count("force-non-empty-directories") > 0;
  o.remote_to_datadir = vm.count("remote-tablespaces-to-datadir") > 0;
  o.parallel = parallel;
  xbak::Status st = xbak::RunCopyBack(o);
  return st.ok() ? 0 : Fail(st);
}
