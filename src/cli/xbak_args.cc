#include "xbak_args.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string_view>

#include "common.h"
#include "compat_options.h"
#include "encrypt_options.h"
#include "option_sources.h"
#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/server.h"
#include "xbak/util/log.h"
#include "xbak_options.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

// What an options file may give: the connection from the client groups,
// paths from the server groups.
constexpr std::string_view kClientOptions[] = {"user",
                                               "password",
                                               "host",
                                               "port",
                                               "socket",
                                               "protocol",
                                               "ssl",
                                               "ssl-ca",
                                               "ssl-capath",
                                               "ssl-cert",
                                               "ssl-key",
                                               "ssl-cipher",
                                               "ssl-verify-server-cert"};
constexpr std::string_view kServerOptions[] = {"datadir", "innodb-log-group-home-dir", "innodb-data-home-dir",
                                               "innodb-undo-directory", "aria-log-dir-path",
                                               "innodb-data-file-path", "tmpdir", "innodb-force-recovery",
                                               // checked as the server checks them (compat_options.h)
                                               "innodb-flush-method", "innodb-log-write-ahead-size"};

// What xbak answers to: its own name, or mariabackup's (a link named
// mariabackup or mariadb-backup, as drop-in replacement), whose scripts test
// my_getopt's exit codes for bad options.
std::string ProgramName(const char* argv0) {
  std::string_view name = argv0;
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  return std::string(name);
}
bool CalledAsMariabackup(const char* argv0) {
  const std::string name = ProgramName(argv0);
  return name == "mariabackup" || name == "mariadb-backup";
}

// The name of innobackupex's backup directory: the local time, as
// YYYY-MM-DD_hh-mm-ss.
std::string TimestampDirName() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d_%H-%M-%S", &tm);
  return buf;
}

// --innobackupex (mariabackup's emulation of the old innobackupex script):
// its directory is given without --target-dir, --apply-log is --prepare, and
// with no mode it backs up, into a subdirectory named by the time unless
// --no-timestamp. Rewrites *given to xbak's options.
void InnobackupexToXbak(xbak::cli::GivenOptions* given) {
  auto has = [&](const char* n) {
    return std::any_of(given->options.begin(), given->options.end(),
                       [&](const xbak::cli::GivenOption& g) { return g.name == n && !g.off; });
  };
  if (!has("innobackupex")) return;
  for (auto& g : given->options) {
    if (g.name == "apply-log") g.name = "prepare";
  }
  const bool backup = !has("prepare") && !has("copy-back") && !has("move-back") && !has("decompress") &&
                      !has("decrypt") && !has("extract");
  if (backup) given->options.push_back({"backup", std::nullopt, "--innobackupex"});
  if (!given->positional.empty() && !has("target-dir")) {
    std::string dir = given->positional.front();
    if (backup && !has("no-timestamp") && !has("stream")) dir += "/" + TimestampDirName();
    given->options.push_back({"target-dir", dir, "--innobackupex"});
    given->positional.erase(given->positional.begin());
  }
}

}  // namespace

std::optional<int> Parse(int argc, char** argv, Args* a) {
  po::options_description all, visible;
  xbak::cli::DescribeXbakOptions(&all, &visible);
  const bool as_mariabackup = CalledAsMariabackup(argv[0]);
  a->tool_name = as_mariabackup ? ProgramName(argv[0]) : "xbak";
  const std::vector<std::string> args(argv + 1, argv + argc);
  xbak::cli::GivenOptions given;
  auto err = xbak::cli::GatherOptions(all, args, xbak::cli::XbakGroups(), kClientOptions, kServerOptions,
                                      /*prefixes=*/!as_mariabackup, &given);
  // Wiped only once the options hold their own copy (wiping first would send
  // the x's as the password).
  a->tool_command = xbak::cli::WipeSecrets(argc, argv, xbak::cli::kXbakSecrets);
  if (!err) {
    InnobackupexToXbak(&given);
    if (!given.positional.empty()) {
      err = xbak::cli::GetoptError{
          xbak::cli::GetoptCode::kUnknownOption,
          "unexpected argument '" + given.positional.front() + "' (options start with --)"};
    }
  }
  if (!err) err = xbak::cli::StoreGiven(all, given, &a->vm);
  for (const auto& g : given.options) {
    if (g.name == "innodb-force-recovery") a->force_recovery_origin = g.origin;  // the last one wins
    if (g.name == "datadir" && g.origin == xbak::cli::kCommandLineOrigin) a->datadir_on_command_line = true;
  }
  if (err) {
    std::cerr << "xbak: " << err->message << "\n(see xbak --help)\n";
    // mariabackup's scripts tell a typo (2, 7) from a bad value (13); xbak's
    // own exit status for any bad command line is 2.
    return as_mariabackup ? static_cast<int>(err->code) : 2;
  }
  for (const std::string& w : given.warnings) xbak::util::LogWarning(w);
  po::variables_map& vm = a->vm;
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << xbak::cli::kXbakUsage << visible << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "xbak " << XBAK_VERSION << "\ntested servers: " << xbak::backupdir::TestedSeries() << "\n";
    return 0;
  }
  if (auto bad = xbak::cli::CheckCompatOptions(vm)) {
    std::cerr << "xbak: " << bad->message << "\n";
    return as_mariabackup ? bad->exit_code : 2;
  }
  return std::nullopt;
}

namespace {

// The server settings some modes take: a bad --innodb-data-file-path, or
// --innodb-force-recovery on the command line of any mode but --prepare (mariabackup's words; an
// option file's, a server setting, means nothing to the other modes).
std::optional<int> CheckServerSettings(const Args& args) {
  const po::variables_map& vm = args.vm;
  const Args* a = &args;
  if (vm.count("innodb-data-file-path")) {
    if (auto f = xbak::backupdir::ParseDataFiles(a->Str("innodb-data-file-path")); !f.ok()) {
      std::cerr << "xbak: --innodb-data-file-path: " << f.status().message() << "\n";
      return 2;
    }
  }
  if (a->force_recovery_origin == xbak::cli::kCommandLineOrigin &&
      vm["innodb-force-recovery"].as<int>() > 0 && !vm.count("prepare")) {
    // A recovery setting: it means nothing to a backup or a restore.
    std::cerr << "xbak: --innodb-force-recovery should only be used with "
              << (vm.count("innobackupex") ? "\"--apply-log\"" : "\"--prepare\"") << "\n";
    return 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> CheckCommon(Args* a) {
  const po::variables_map& vm = a->vm;
  xbak::prepare::KeyOptions& key_options = a->keys;
  if (vm.count("export") && !vm.count("prepare")) {
    std::cerr << "xbak: --export goes with --prepare (see docs/export.md)\n";
    return 2;
  }
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
  if (auto rc = CheckServerSettings(*a)) return rc;
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
  if (auto rc = xbak::cli::CheckEncryptionOptions(vm)) return rc;
  // --decrypt is a mode of its own, or a way of --extract.
  const size_t decrypt_mode = vm.count("decrypt") && !vm.count("extract") ? 1 : 0;
  int nmodes = static_cast<int>(vm.count("backup") + vm.count("prepare") + vm.count("copy-back") +
                                vm.count("restore") + vm.count("move-back") + vm.count("extract") +
                                vm.count("decompress") + vm.count("verify") + decrypt_mode);
  if (nmodes != 1) {
    std::cerr
        << "xbak: give exactly one of --backup, --prepare, --copy-back, --move-back, --restore, --extract, "
           "--decompress, --decrypt, --verify (see --help)\n";
    return 2;
  }
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
  a->parallel = parallel;
  a->fifo_streams = fifo_streams;
  a->fifo_timeout = std::chrono::seconds(vm["fifo-timeout"].as<unsigned>());
  return std::nullopt;
}

}  // namespace xbak::cli
