// xbak: hot backup for MariaDB 10.11 InnoDB. Option names follow
// xtrabackup/mariabackup so operators can switch without relearning.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common.h"
#include "encrypt_options.h"
#include "getopt.h"
#include "xbak/backup/backup.h"
#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/server.h"
#include "xbak/prepare/export.h"
#include "xbak/prepare/incremental_prepare.h"
#include "xbak/prepare/prepare.h"
#include "xbak/restore/copy_back.h"
#include "xbak/restore/restore.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"
#include "xbak/sink/decrypt.h"
#include "xbak/sink/fifo.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/ascii.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"
#include "xbak/util/size.h"
#include "xbak/verify/verify.h"
#include "xbak_args.h"

namespace po = boost::program_options;

namespace {

using xbak::cli::Args;
using xbak::cli::Fail;

// --target-dir, which `mode` needs: empty, after saying so, when not given.
std::string RequiredTargetDir(const Args& a, const char* mode) {
  std::string dir = a.Str("target-dir");
  if (dir.empty()) std::cerr << "xbak: " << mode << " needs --target-dir\n";
  return dir;
}

// --use-memory of --prepare and --restore; nullopt (after saying why) when bad.
std::optional<uint64_t> UseMemory(const Args& a) {
  const std::string m = a.vm["use-memory"].as<std::string>();
  auto v = xbak::util::ParseSize(m);
  if (!v || *v < (16ull << 20)) {
    std::cerr << "xbak: --use-memory must be a size of at least 16M (e.g. 512M, 2G), got '" << m << "'\n";
    return std::nullopt;
  }
  return *v;
}

// --extract: an xbstream from stdin, a file or N FIFOs into -C DIR.
int RunExtractMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  auto str = [&a](const char* k) { return a.Str(k); };
  const int fifo_streams = a.fifo_streams;
  const auto fifo_timeout = a.fifo_timeout;
  xbak::stream::ExtractOptions eo;
  eo.target_dir = str("directory");
  if (eo.target_dir.empty()) eo.target_dir = str("target-dir");
  if (eo.target_dir.empty()) {
    std::cerr << "xbak: --extract needs -C DIR (or --target-dir)\n";
    return 2;
  }
  eo.overwrite = vm.count("overwrite") > 0;
  // The checkpoints file (encrypted or not) is renamed into place only once
  // every stream ended whole: from N FIFOs, one reader may deliver it while
  // another is still writing.
  eo.hold_to_end = [](std::string_view rel) {
    if (rel.ends_with(xbak::crypt::kEncryptedSuffix)) rel.remove_suffix(xbak::crypt::kEncryptedSuffix.size());
    return xbak::backupdir::IsMeta(rel, xbak::backupdir::Meta::kCheckpoints);
  };
  xbak::crypt::KeyRing keys;  // --decrypt: X.xbenc extracted as X
  if (vm.count("decrypt")) {
    if (auto alg = xbak::crypt::ParseAlgorithm(vm["decrypt"].as<std::string>()); !alg.ok())
      return Fail(alg.status());
    if (auto rc = xbak::cli::ReadKeys(vm, "--extract --decrypt", &keys)) return *rc;
    eo.filter = xbak::sink::DecryptingExtractFilter(keys);
  }
  if (xbak::Status st = xbak::util::MakeDirs(eo.target_dir); !st.ok()) return Fail(st);
  xbak::Status st;
  if (fifo_streams > 1) {
    auto fds = xbak::sink::OpenFifosForReading(str("fifo-dir"), fifo_streams, fifo_timeout);
    if (!fds.ok()) return Fail(fds.status());
    std::vector<int> raw;
    for (auto& f : fds.value()) raw.push_back(f.get());
    st = xbak::stream::ExtractStreams(raw, eo);
  } else if (vm.count("input")) {
    auto f = xbak::util::File::OpenRead(str("input"));
    if (!f.ok()) return Fail(f.status());
    st = xbak::stream::ExtractStream(f->fd(), eo);
  } else {
    if (isatty(STDIN_FILENO)) {
      std::cerr << "xbak: --extract reads an xbstream from stdin; pipe one in or use --input=FILE\n";
      return 2;
    }
    xbak::util::EnlargePipe(STDIN_FILENO);  // `... | xbak -x`: fewer wake-ups on both sides
    st = xbak::stream::ExtractStream(STDIN_FILENO, eo);
  }
  if (!st.ok()) return Fail(st);
  xbak::util::LogInfo("extracted into " + eo.target_dir);
  return 0;
}

// --verify: one line per problem on stdout, exit status 0 only if sound.
int RunVerifyMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  xbak::verify::VerifyOptions vo;
  vo.target_dir = RequiredTargetDir(a, "--verify");
  if (vo.target_dir.empty()) return 2;
  if (vm.count("incremental-dir")) vo.incremental_dirs = vm["incremental-dir"].as<std::vector<std::string>>();
  vo.parallel = a.parallel;
  xbak::crypt::KeyRing keys;  // an encrypted backup's, when given: its files decrypted as they are read
  if (xbak::cli::KeysGiven(vm)) {
    if (auto rc = xbak::cli::ReadKeys(vm, "--verify", &keys)) return *rc;
    vo.keys = &keys;
  }
  auto r = xbak::verify::VerifyBackup(vo);
  if (!r.ok()) return Fail(r.status());
  for (const auto& line : r->problems) std::cout << line << "\n";
  std::cout << r->Summary() << std::endl;
  return r->sound() ? 0 : 1;
}

// --decompress.
int RunDecompressMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  xbak::sink::DecompressOptions d;
  d.target_dir = RequiredTargetDir(a, "--decompress");
  if (d.target_dir.empty()) return 2;
  d.parallel = a.parallel;
  d.remove_original = vm.count("remove-original") > 0;
  xbak::Status st = xbak::sink::DecompressBackup(d);
  return st.ok() ? 0 : Fail(st);
}

// --backup's output: --stream, --fifo-streams and --compress. An exit code
// (after saying why) when they do not fit together.
std::optional<int> BackupOutput(const Args& a, xbak::backup::BackupOptions* o) {
  const po::variables_map& vm = a.vm;
  o->target_dir = a.Str("target-dir");
  o->stream = a.Str("stream");
  if (!o->stream.empty() && o->stream != "xbstream" && o->stream != "mbstream") {
    std::cerr << "xbak: --stream supports only xbstream, got '" << o->stream << "'\n";
    return 2;
  }
  o->fifo_streams = a.fifo_streams;
  o->fifo_dir = a.Str("fifo-dir");
  o->fifo_timeout_s = vm["fifo-timeout"].as<unsigned>();
  if (o->fifo_streams > 1 && o->stream.empty()) {
    std::cerr << "xbak: --fifo-streams needs --stream=xbstream\n";
    return 2;
  }
  if (vm.count("compress")) {
    std::string algo = a.Str("compress");
    if (algo == "zstd")
      o->compress_options.algo = xbak::sink::CompressOptions::kZstd;
    else if (algo == "lz4")
      o->compress_options.algo = xbak::sink::CompressOptions::kLz4;
    else {
      std::cerr << "xbak: --compress supports zstd and lz4, got '" << algo << "'\n";
      return 2;
    }
    o->compress = true;
    o->compress_options.threads = vm["compress-threads"].as<int>();
    o->compress_options.zstd_level = vm["compress-zstd-level"].as<int>();
    o->compress_options.chunk_size = vm["compress-chunk-size"].as<size_t>();
    if (o->compress_options.threads < 1 || o->compress_options.threads > 256) {
      std::cerr << "xbak: --compress-threads must be between 1 and 256\n";
      return 2;
    }
  }
  if (auto rc = xbak::cli::EncryptOutput(vm, &o->encrypt, &o->encrypt_options)) return rc;
  if (!o->stream.empty() && o->fifo_streams == 1 && isatty(STDOUT_FILENO)) {
    std::cerr << "xbak: --stream writes binary data to stdout; redirect it to a file or a pipe\n";
    return 2;
  }
  return std::nullopt;
}

// --backup's base for an incremental: at most one of --incremental-basedir,
// --incremental-lsn and the two --incremental-history-* options.
std::optional<int> IncrementalBase(const Args& a, xbak::backup::BackupOptions* o) {
  const po::variables_map& vm = a.vm;
  const int bases =
      static_cast<int>(vm.count("incremental-basedir") + vm.count("incremental-lsn") +
                       vm.count("incremental-history-name") + vm.count("incremental-history-uuid"));
  if (bases > 1) {
    std::cerr << "xbak: give one of --incremental-basedir, --incremental-lsn, --incremental-history-name, "
                 "--incremental-history-uuid\n";
    return 2;
  }
  if (vm.count("incremental-lsn")) {
    o->incremental = true;
    o->incremental_lsn = vm["incremental-lsn"].as<uint64_t>();
  } else if (vm.count("incremental-basedir")) {
    o->incremental = true;
    o->incremental_basedir = a.Str("incremental-basedir");
    if (auto rc = xbak::cli::EncryptedBaseLsn(vm, a.Str("incremental-basedir"), &o->incremental_lsn)) {
      if (*rc != 0) return rc;
    } else {
      auto lsn = xbak::backupdir::IncrementalBaseLsn(a.Str("incremental-basedir"));
      if (!lsn.ok()) return Fail(lsn.status());
      o->incremental_lsn = *lsn;
    }
  }
  o->history = vm.count("history") > 0;
  o->history_name = a.Str("history");
  o->incremental_history_name = a.Str("incremental-history-name");
  o->incremental_history_uuid = a.Str("incremental-history-uuid");
  return std::nullopt;
}

// --backup's redo log copy: its spool, throttle and timing.
std::optional<int> RedoCopy(const Args& a, xbak::backup::BackupOptions* o) {
  const po::variables_map& vm = a.vm;
  const std::string m = vm["redo-spool-memory"].as<std::string>();
  auto v = xbak::util::ParseSize(m);
  if (!v || *v < (1ull << 20)) {
    std::cerr << "xbak: --redo-spool-memory must be a size of at least 1M (e.g. 64M, 1G), got '" << m
              << "'\n";
    return 2;
  }
  o->redo_spool_memory = static_cast<size_t>(*v);
  if (vm.count("tmpdir")) o->tmpdir = a.Str("tmpdir");
  o->throttle = vm["throttle"].as<uint64_t>();
  o->log_copy_interval = std::chrono::milliseconds(std::max(1u, vm["log-copy-interval"].as<unsigned>()));
  o->log_wait_timeout_s = vm["log-copy-timeout"].as<unsigned>();
  return std::nullopt;
}

// --protocol and TLS of the connection; an exit status when refused.
std::optional<int> Transport(const Args& a, xbak::mysql::ConnectOptions* c) {
  const po::variables_map& vm = a.vm;
  const std::string protocol = a.Str("protocol");
  const std::string p = xbak::util::AsciiLower(protocol);
  if (p == "tcp") {
    c->tcp = true;
  } else if (!p.empty() && p != "socket") {
    std::cerr << "xbak: --protocol=" << protocol << " is not supported (tcp or socket)\n";
    return 13;
  }
  for (const char* k :
       {"ssl", "ssl-ca", "ssl-capath", "ssl-cert", "ssl-key", "ssl-cipher", "ssl-verify-server-cert"})
    if (vm.count(k)) c->ssl = true;
  c->ssl_ca = a.Str("ssl-ca");
  c->ssl_capath = a.Str("ssl-capath");
  c->ssl_cert = a.Str("ssl-cert");
  c->ssl_key = a.Str("ssl-key");
  c->ssl_cipher = a.Str("ssl-cipher");
  c->ssl_verify_server_cert = vm.count("ssl-verify-server-cert") > 0;
  return std::nullopt;
}

// --backup.
int RunBackupMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  auto str = [&a](const char* k) { return a.Str(k); };
  xbak::backup::BackupOptions o;
  o.conn.user = str("user");
  o.conn.password = str("password");
  if (o.conn.password.empty() && std::getenv("MYSQL_PWD")) o.conn.password = std::getenv("MYSQL_PWD");
  o.conn.host = str("host");
  o.conn.port = vm.count("port") ? vm["port"].as<unsigned>() : 0;
  o.conn.socket = str("socket");
  if (auto rc = Transport(a, &o.conn)) return *rc;
  if (auto rc = BackupOutput(a, &o)) return *rc;
  if (auto rc = IncrementalBase(a, &o)) return *rc;
  if (auto rc = RedoCopy(a, &o)) return *rc;
  // The running server says where its files are; only --datadir on the
  // command line overrides it (a server seen at another path, in a container).
  if (a.datadir_on_command_line) o.datadir = str("datadir");
  o.parallel = a.parallel;
  o.slave_info = vm.count("slave-info") > 0;
  o.page_retries = vm["page-retries"].as<int>();
  if (vm.count("innodb-log-checkpoint-now")) {
    const std::string v = a.Str("innodb-log-checkpoint-now");
    o.checkpoint_now = !(v == "0" || v == "OFF" || v == "off" || v == "FALSE" || v == "false");
  }
  o.extended_validation = vm.count("extended-validation") > 0;
  o.lock_wait_timeout_s = vm["lock-wait-timeout"].as<unsigned>();
  if (vm["lock-wait-timeout"].defaulted() && vm.count("ftwrl-wait-timeout"))
    o.lock_wait_timeout_s = vm["ftwrl-wait-timeout"].as<unsigned>();
  o.extra_lsndir = str("extra-lsndir");
  o.tables.databases = str("databases");
  o.tables.databases_file = str("databases-file");
  o.tables.databases_exclude = str("databases-exclude");
  o.tables.tables = str("tables");
  o.tables.tables_file = str("tables-file");
  o.tables.tables_exclude = str("tables-exclude");
  o.safe_slave_backup = vm.count("safe-slave-backup") > 0;
  o.galera_info = vm.count("galera-info") > 0;
  o.no_lock = vm.count("no-lock") > 0;
  if (o.no_lock && (o.slave_info || o.galera_info || o.safe_slave_backup)) {
    std::cerr << "xbak: --no-lock cannot be used with --slave-info, --galera-info or --safe-slave-backup: "
                 "the positions they record match the data only under BACKUP STAGE locks\n";
    return 2;
  }
  o.no_server_version_check = vm.count("no-server-version-check") > 0;
  o.safe_slave_timeout = std::chrono::seconds(vm["safe-slave-backup-timeout"].as<unsigned>());
  o.tool_command = a.tool_command;
  o.tool_name = a.tool_name;
  o.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
  xbak::Status st = xbak::backup::RunBackup(o);
  return st.ok() ? 0 : Fail(st);
}

// --innodb-force-recovery at --prepare: only the server's first level (SRV_FORCE_IGNORE_CORRUPT) means
// anything to a redo apply; higher ones act as it, as mariabackup's do (and a negative one as 0, as
// my_getopt adjusts it). Taken from the command line or from the backup's own backup-my.cnf: a
// host's option file may hold the setting that brought a damaged server up, which must not make a
// restore skip pages unasked. Said in mariabackup's words.
bool ForceRecovery(const Args& a, const std::string& target_dir) {
  const po::variables_map& vm = a.vm;
  const int level = vm.count("innodb-force-recovery") ? vm["innodb-force-recovery"].as<int>() : 0;
  if (level <= 0) return false;
  const std::string& origin = a.force_recovery_origin;
  if (origin != xbak::cli::kCommandLineOrigin) {
    const std::string file = origin.substr(0, origin.rfind(':'));
    std::error_code e1, e2;
    const auto own = std::filesystem::weakly_canonical(
        xbak::util::JoinPath(target_dir, xbak::backupdir::kBackupCnfFile), e1);
    if (e1 || own != std::filesystem::weakly_canonical(file, e2) || e2) {
      xbak::util::LogWarning("innodb_force_recovery in " + origin +
                             " ignored: at --prepare it is taken from the command line or the backup's "
                             "backup-my.cnf only");
      return false;
    }
  }
  xbak::util::LogInfo(
      "innodb_force_recovery = 1: a page the redo log cannot be applied to is left as it was, "
      "named in a warning" +
      (level > 1 ? " (" + std::to_string(level) + " asked for: --prepare goes no further than 1)"
                 : std::string()));
  return true;
}

// --prepare of a full backup, or of an incremental onto it (--incremental-dir); then --export.
int RunPrepareMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  auto str = [&a](const char* k) { return a.Str(k); };
  const int parallel = a.parallel;
  const xbak::prepare::KeyOptions& key_options = a.keys;
  const auto use_memory = UseMemory(a);
  if (!use_memory) return 2;
  // --export: once the prepare is done, .cfg files for IMPORT TABLESPACE.
  auto export_tables = [&](const std::string& dir) -> int {
    if (!vm.count("export")) return 0;
    xbak::prepare::ExportOptions eo;
    eo.dir = dir;
    eo.mariadbd = str("mariadbd");
    eo.buffer_pool = *use_memory;
    eo.tmpdir = str("tmpdir");
    eo.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    eo.keys = key_options;
    auto r = xbak::prepare::ExportTables(eo);
    return r.ok() ? 0 : Fail(r.status());
  };
  // An encrypted backup, given its key: decrypted (and decompressed) in
  // place first, as --prepare changes the backup anyway.
  for (const char* dir_option : {"target-dir", "incremental-dir"}) {
    if (vm.count(dir_option) == 0) continue;
    if (auto rc = xbak::cli::DecryptForPrepare(vm, str(dir_option), parallel)) return *rc;
  }
  const bool ignore_corrupt_pages = ForceRecovery(a, str("target-dir"));
  if (vm.count("prepare") && vm.count("incremental-dir")) {
    xbak::prepare::IncrementalPrepareOptions ip;
    ip.ignore_corrupt_pages = ignore_corrupt_pages;
    ip.use_memory = *use_memory;
    ip.target_dir = RequiredTargetDir(a, "--prepare");
    ip.incremental_dir = str("incremental-dir");
    if (ip.target_dir.empty()) return 2;
    ip.parallel = parallel;
    ip.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
    ip.keys = key_options;
    ip.no_server_version_check = vm.count("no-server-version-check") > 0;
    xbak::Status st = xbak::prepare::RunIncrementalPrepare(ip);
    return st.ok() ? export_tables(ip.target_dir) : Fail(st);
  }
  xbak::prepare::PrepareOptions po;
  po.target_dir = RequiredTargetDir(a, "--prepare");
  if (po.target_dir.empty()) return 2;
  po.parallel = parallel;
  po.use_memory = *use_memory;
  po.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
  po.keys = key_options;
  po.no_server_version_check = vm.count("no-server-version-check") > 0;
  po.ignore_corrupt_pages = ignore_corrupt_pages;
  xbak::Status st = xbak::prepare::RunPrepare(po);
  return st.ok() ? export_tables(po.target_dir) : Fail(st);
}

// --restore: a chain in one pass.
int RunRestoreMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  auto str = [&a](const char* k) { return a.Str(k); };
  const int parallel = a.parallel;
  const xbak::prepare::KeyOptions& key_options = a.keys;
  const auto use_memory = UseMemory(a);
  if (!use_memory) return 2;
  if (vm.count("force-non-empty-directories")) {
    std::cerr << "xbak: --restore writes only into empty directories; --force-non-empty-directories is "
                 "for --copy-back\n";
    return 2;
  }
  xbak::restore::RestoreOptions ro;
  ro.full_dir = str("target-dir");
  if (vm.count("from-stream")) ro.streams = vm["from-stream"].as<std::vector<std::string>>();
  if (vm.count("incremental-dir")) ro.incremental_dirs = vm["incremental-dir"].as<std::vector<std::string>>();
  ro.dirs = {str("datadir"),
             str("innodb-log-group-home-dir"),
             str("innodb-data-home-dir"),
             str("innodb-undo-directory"),
             vm.count("remote-tablespaces-to-datadir") > 0,
             str("aria-log-dir-path"),
             str("innodb-data-file-path"),
             {}};
  ro.parallel = parallel;
  ro.use_memory = *use_memory;
  ro.progress_interval = std::chrono::seconds(vm["progress-interval"].as<unsigned>());
  ro.keys = key_options;
  ro.no_server_version_check = vm.count("no-server-version-check") > 0;
  xbak::crypt::KeyRing stream_keys;  // an encrypted stream's: decrypted as it is unpacked
  if (!ro.streams.empty() && xbak::cli::KeysGiven(vm)) {
    if (auto rc = xbak::cli::ReadKeys(vm, "--restore --from-stream", &stream_keys)) return *rc;
    ro.stream_keys = &stream_keys;
  }
  xbak::Status st = xbak::restore::RunRestore(ro);
  return st.ok() ? 0 : Fail(st);
}

// --copy-back and --move-back.
int RunCopyBackMode(const Args& a) {
  const po::variables_map& vm = a.vm;
  auto str = [&a](const char* k) { return a.Str(k); };
  const int parallel = a.parallel;
  xbak::restore::CopyBackOptions o;
  o.backup_dir = str("target-dir");
  o.datadir = str("datadir");
  o.log_dir = str("innodb-log-group-home-dir");
  o.data_home_dir = str("innodb-data-home-dir");
  o.undo_dir = str("innodb-undo-directory");
  o.aria_log_dir = str("aria-log-dir-path");
  o.data_file_path = str("innodb-data-file-path");
  o.move = vm.count("move-back") > 0;
  o.force_non_empty = vm.count("force-non-empty-directories") > 0;
  o.remote_to_datadir = vm.count("remote-tablespaces-to-datadir") > 0;
  o.parallel = parallel;
  xbak::Status st = xbak::restore::RunCopyBack(o);
  return st.ok() ? 0 : Fail(st);
}

}  // namespace

int main(int argc, char** argv) {
  // A reader of our stdout/FIFO that goes away must give a clear EPIPE error,
  // not kill us silently with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  Args a;
  if (auto rc = xbak::cli::Parse(argc, argv, &a)) return *rc;
  if (auto rc = xbak::cli::CheckCommon(&a)) return *rc;
  const po::variables_map& vm = a.vm;
  if (vm.count("extract")) return RunExtractMode(a);
  if (vm.count("verify")) return RunVerifyMode(a);
  if (vm.count("decompress")) return RunDecompressMode(a);
  if (vm.count("decrypt")) return xbak::cli::RunDecryptMode(vm, a.parallel);
  if (vm.count("backup")) return RunBackupMode(a);
  if (vm.count("prepare")) return RunPrepareMode(a);
  if (vm.count("restore")) return RunRestoreMode(a);
  return RunCopyBackMode(a);
}
