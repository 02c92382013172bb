// xbcloud: moves xbstream backups to and from object storage (S3, Azure Blob
// Storage, Google Cloud Storage).
// Commands and option names follow Percona's xbcloud.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common.h"
#include "xbak/cloud/catalog.h"
#include "xbak/cloud/catalog_format.h"
#include "xbak/cloud/expire.h"
#include "xbak/cloud/get.h"
#include "xbak/cloud/layout.h"
#include "xbak/cloud/put.h"
#include "xbak/cloud/remove.h"
#include "xbak/cloud/verify.h"
#include "xbak/crypt/key.h"
#include "xbak/sink/fifo.h"
#include "xbak/storage/s3_store.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"
#include "xbak/util/size.h"
#include "xbcloud_binlog.h"
#include "xbcloud_restore.h"
#include "xbcloud_store.h"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "Usage: xbcloud put    [OPTIONS] NAME        upload an xbstream (stdin or --fifo-streams) as backup "
    "NAME\n"
    "       xbcloud get    [OPTIONS] NAME [FILE...]  download backup NAME as xbstream (stdout or FIFOs)\n"
    "       xbcloud delete [OPTIONS] NAME        remove every object of backup NAME\n"
    "       xbcloud verify [OPTIONS] NAME        check backup NAME: manifest complete, every object\n"
    "                                            there and matching its .md5 sidecar and the manifest\n"
    "                                            (exit 0 only if sound)\n"
    "       xbcloud list   [OPTIONS] [PREFIX]    every backup (under PREFIX/): type, base, times, LSNs,\n"
    "                                            sizes, state; chains as a tree (--json for scripts)\n"
    "       xbcloud expire [OPTIONS] [PREFIX] --retain-full=N [--retain-days=D] [--dry-run]\n"
    "                                            delete the chains outside the policy (never an\n"
    "                                            incremental's base), print what goes and what stays\n"
    "       xbcloud binlog-push [OPTIONS] --binlog-index=F --server-id=N [--once] PREFIX\n"
    "                                            archive the server's binary logs as they are written\n"
    "                                            (every --max-lag seconds, or one pass with --once)\n"
    "       xbcloud restore [OPTIONS] PREFIX --datadir=D (--to-time='YYYY-MM-DD HH:MM:SS' | --to-gtid=D-S-N "
    "|\n"
    "                                            --latest)\n"
    "                                            restore the newest backup before the target (PREFIX/NAME)\n"
    "                                            and replay the archived binary logs up to it\n\n"
    "Examples:\n"
    "  xbak --backup --stream=xbstream | xbcloud put --s3-bucket=B nightly-1\n"
    "  xbak --backup --stream=xbstream --fifo-streams=8 --fifo-dir=D &\n"
    "    xbcloud put --fifo-streams=8 --fifo-dir=D --parallel=16 --s3-bucket=B nightly-1\n"
    "  xbcloud get --s3-bucket=B nightly-1 | xbak --extract -C /restore\n"
    "  xbcloud list --s3-bucket=B host1\n"
    "  xbcloud expire --s3-bucket=B --retain-full=4 host1     (in cron, after the night's put)\n"
    "  xbcloud put --storage=azure --azure-storage-account=A --azure-container-name=C nightly-1\n"
    "  xbcloud get --storage=google --google-bucket=B nightly-1 | xbak --extract -C /restore\n\n"
    "A backup NAME is the objects NAME/<file>.<seq> (xbstream chunks of one file), NAME/<file>.<seq>.md5\n"
    "(md5sum-style sidecars) and NAME/xbcloud.manifest, written last by a put that succeeded: get\n"
    "refuses a backup without it unless --allow-incomplete. NAME/xbcloud.started (written first by put)\n"
    "tells list a put under way; delete and expire replace the manifest with a tombstone first and\n"
    "remove it last, so a deletion cut short never looks complete. A put of a NAME whose put was interrupted "
    "resumes it: objects already stored with the same\n"
    "bytes (MD5) are not sent again.\n\n"
    "Credentials, the first found of: s3-access-key / s3-secret-key / s3-session-token (the [xbcloud]\n"
    "group of an options file, --defaults-file, default ~/.my.cnf; or the command line); the\n"
    "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); web identity\n"
    "(AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN); the AWS profile (--s3-profile, AWS_PROFILE) in\n"
    "~/.aws/credentials and ~/.aws/config: keys, credential_process, role_arn with source_profile\n"
    "(STS AssumeRole) or web_identity_token_file; the EC2 instance metadata service (IMDSv2). Temporary\n"
    "credentials are renewed before they expire. STS: AWS_ENDPOINT_URL_STS. Secrets are never\n"
    "printed; on the command line they are visible to other users while the process starts, so\n"
    "prefer the environment or a file.\n"
    "Azure: the account key (AZURE_STORAGE_KEY or AZURE_ACCESS_KEY) signs each request (Shared Key), or a\n"
    "SAS token (AZURE_STORAGE_SAS_TOKEN) goes with each. Google: OAuth tokens from a service account's or\n"
    "an authorized user's JSON (--google-credentials, GOOGLE_APPLICATION_CREDENTIALS, gcloud's\n"
    "application default credentials) or the VM's metadata server, renewed before they expire; or HMAC\n"
    "keys (--google-access-key/--google-secret-key), which use the XML API, S3's protocol.\n\n"
    "Exit status: 0 done, 1 failed (one line on stderr says what), 2 bad usage.\n\n";

// Options that may come from the [xbcloud] group of an options file.
constexpr std::string_view kTransferFileOptions[] = {
    "cacert",           "insecure",     "parallel", "max-retries",  "max-backoff",
    "read-buffer-size", "fifo-streams", "fifo-dir", "fifo-timeout", "progress-interval",
    "binlog-index",     "server-id",    "max-lag"};
const std::vector<std::string_view> kFileOptions = [] {
  std::vector<std::string_view> all(std::begin(xbak::cli::kStoreFileOptions),
                                    std::end(xbak::cli::kStoreFileOptions));
  all.insert(all.end(), std::begin(kTransferFileOptions), std::end(kTransferFileOptions));
  return all;
}();

// Of those, the options without a value.
constexpr std::string_view kFileFlags[] = {"insecure", "azure-development-storage"};

using xbak::cli::Usage;

using xbak::cli::Fail;

// Long on purpose: the list of options, grouped as --help shows them.
void DescribeOptions(po::options_description* all, po::options_description* visible,
                     po::positional_options_description* pos) {
  po::options_description transfer("Transfer");
  transfer.add_options()("parallel", po::value<int>()->default_value(4),
                         "requests in flight (list and expire: 16 unless given)")(
      "max-retries", po::value<int>()->default_value(10),
      "retries of a failed request (5xx, SlowDown, timeouts, resets, MD5 mismatch), with exponential "
      "backoff")("max-backoff", po::value<unsigned>()->default_value(20000),
                 "longest wait before a retry, in milliseconds (the n-th retry of a request waits a random "
                 "time between half of and all of min(200 ms x 2^(n-1), this))")(
      "read-buffer-size", po::value<std::string>()->default_value("10M"),
      "put: object size (bytes, or with K/M/G); put holds --parallel + 2 objects in memory. get "
      "checks and writes objects by 1 MiB pieces and holds about max(16M, --parallel M, 4M per "
      "--fifo-streams) whatever the object size (backups from before piece MD5s: up to max(4, "
      "min(--parallel, 8), --fifo-streams + 2) whole objects)")(
      "fifo-streams", po::value<int>()->default_value(1),
      "N>1: put reads, get writes, N named pipes DIR/thread_0..N-1 instead of stdin/stdout")(
      "fifo-dir", po::value<std::string>(), "directory of the named pipes")(
      "fifo-timeout", po::value<unsigned>()->default_value(60),
      "seconds to wait for the other end of each pipe")(
      "allow-incomplete", "get: read a backup that has no completion marker (its put did not finish)")(
      "progress-interval", po::value<unsigned>()->default_value(5),
      "seconds between progress lines (0: none)");

  po::options_description repo("List and expire");
  repo.add_options()("json", "list: JSON instead of a table (fields in docs/xbcloud.md)")(
      "retain-full", po::value<int>(),
      "expire: keep the newest N full backups and every incremental that depends on them (N >= 1)")(
      "retain-days", po::value<int>(),
      "expire: also keep every chain with a backup whose put finished in the last D days")(
      "dry-run", "expire: print what would be deleted and kept, delete nothing");

  po::options_description general("General");
  general.add_options()("defaults-file", po::value<std::string>(),
                        "read the [xbcloud] group of this options file (instead of ~/.my.cnf)")(
      "no-defaults", "read no options file")("help", "show this help")("version", "show the version");

  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())("name", po::value<std::string>())(
      "files", po::value<std::vector<std::string>>());
  pos->add("command", 1).add("name", 1).add("files", -1);

  xbak::cli::DescribeStoreOptions(visible);
  visible->add(transfer).add(repo);
  xbak::cli::DescribeBinlogOptions(visible);
  xbak::cli::DescribeRestoreOptions(visible);
  visible->add(general);
  all->add(*visible).add(hidden);
}

// Parses the command line and the [xbcloud] group of the options file into
// *vm; an exit status when there is nothing more to do (an error, --help,
// --version).
std::optional<int> Parse(int argc, char** argv, po::variables_map* vm_out) {
  po::options_description all, visible;
  po::positional_options_description pos;
  DescribeOptions(&all, &visible, &pos);
  po::variables_map& vm = *vm_out;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    // Secrets out of `ps`, now that the parser holds its own copies.
    xbak::cli::WipeSecrets(argc, argv, xbak::cli::kXbcloudSecrets);
    auto [file, must] = xbak::util::ChooseOptionFile(argc, argv);
    if (!file.empty()) {
      auto opts = xbak::util::ReadOptionFile(file, {"xbcloud"}, must);
      if (!opts.ok()) return Fail(opts.status());
      if (const auto* unknown = xbak::cli::UnknownOption(opts.value(), kFileOptions)) {
        return Usage("unknown option '" + unknown->first + "' in [xbcloud] at " + unknown->second.origin);
      }
      // Command-line values were stored first and win.
      po::store(po::command_line_parser(xbak::cli::OptionFileArgs(opts.value(), kFileOptions, kFileFlags))
                    .options(all)
                    .run(),
                vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return Usage(e.what());
  }
  if (vm.count("help")) {
    std::cout << kUsage << visible << "\n";
    return 0;
  }
  if (vm.count("version")) {
    std::cout << "xbcloud " << XBAK_VERSION << "\n";
    return 0;
  }
  return std::nullopt;
}

// What the command line asks for, checked.
struct Settings {
  std::string command, name;
  std::vector<std::string> files;
  xbak::cli::StoreSettings store;
  xbak::cli::BinlogPushSettings binlog;
  xbak::pitr::PointRestoreOptions restore;
  int parallel = 4;
  uint64_t object_size = 0;
  int fifo_streams = 1;
  std::string fifo_dir;
  std::chrono::seconds fifo_timeout{60};
  std::chrono::milliseconds progress{5000};
  bool allow_incomplete = false;
  int repo_parallel = 16;  // list, expire
  bool json = false;       // list
  int retain_full = 0;     // expire
  int retain_days = -1;    // expire; -1: not given
  bool dry_run = false;    // expire
};

using xbak::cli::Str;

// The command, the backup's name and its FILE arguments.
std::optional<int> CheckCommand(const po::variables_map& vm, Settings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  const std::string command = s->command = str("command"), name = s->name = str("name");
  const bool repo = command == "list" || command == "expire";
  if (command != "put" && command != "get" && command != "delete" && command != "verify" && !repo &&
      command != "binlog-push" && command != "restore") {
    return Usage(command.empty()
                     ? "give a command: put, get, delete, verify, list, expire, binlog-push or restore"
                     : "unknown command '" + command + "'");
  }
  if (name.empty() && (command == "binlog-push" || command == "restore"))
    return Usage(command + " needs a PREFIX");
  if (name.empty() && !repo) return Usage(command + " needs a backup NAME");
  std::vector<std::string>& files = s->files;
  if (vm.count("files")) files = vm["files"].as<std::vector<std::string>>();
  if (!files.empty() && command != "get") return Usage("only get takes FILE arguments");
  if (!name.empty()) {
    if (auto st = xbak::cloud::CheckBackupName(name); !st.ok()) {
      return Usage(repo ? "PREFIX: " + st.message() : st.message());
    }
  }
  if (vm.count("json") && command != "list") return Usage("--json is for list");
  for (const char* o : {"retain-full", "retain-days", "dry-run"}) {
    if (vm.count(o) && command != "expire") return Usage(std::string("--") + o + " is for expire");
  }
  if (command == "expire") {
    if (!vm.count("retain-full")) return Usage("expire needs --retain-full=N (the full backups to keep)");
    s->retain_full = vm["retain-full"].as<int>();
    if (s->retain_full < 1) return Usage("--retain-full must be at least 1");
    if (vm.count("retain-days")) {
      s->retain_days = vm["retain-days"].as<int>();
      if (s->retain_days < 0 || s->retain_days > 100000)
        return Usage("--retain-days must be between 0 and 100000");
    }
    s->dry_run = vm.count("dry-run") != 0;
  }
  s->json = vm.count("json") != 0;

  return std::nullopt;
}

// Requests in flight, object size, named pipes, progress.
std::optional<int> CheckTransfer(const po::variables_map& vm, Settings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  const int parallel = s->parallel = vm["parallel"].as<int>();
  // list and expire read one manifest head per backup: small requests, 16
  // at a time unless told.
  s->repo_parallel = vm["parallel"].defaulted() ? 16 : parallel;
  if (parallel < 1 || parallel > 1024) return Usage("--parallel must be between 1 and 1024");
  const std::optional<uint64_t> object_size =
      xbak::util::ParseSize(str("read-buffer-size"), uint64_t{1} << 30);
  if (!object_size || *object_size < (64 << 10)) {
    return Usage("--read-buffer-size must be a size between 64K and 1G, e.g. 10M, not '" +
                 str("read-buffer-size") + "'");
  }
  s->object_size = *object_size;
  const int fifo_streams = s->fifo_streams = vm["fifo-streams"].as<int>();
  if (fifo_streams < 1 || fifo_streams > 64) return Usage("--fifo-streams must be between 1 and 64");
  if (fifo_streams > 1 && !vm.count("fifo-dir")) return Usage("--fifo-streams needs --fifo-dir");
  if (fifo_streams > 1 && s->command != "put" && s->command != "get") {
    return Usage(s->command + " takes no --fifo-streams");
  }
  s->fifo_timeout = std::chrono::seconds(vm["fifo-timeout"].as<unsigned>());
  s->progress = std::chrono::milliseconds(1000LL * vm["progress-interval"].as<unsigned>());
  s->fifo_dir = str("fifo-dir");
  s->allow_incomplete = vm.count("allow-incomplete") != 0;
  return std::nullopt;
}

// The streams put reads or get writes: stdin/stdout or N FIFOs.
struct Streams {
  std::vector<xbak::util::UniqueFd> owned;
  std::vector<int> fds;
  std::vector<std::string> names;
};
std::optional<int> OpenStreams(const Settings& s, Streams* out) {
  const std::string& command = s.command;
  const int fifo_streams = s.fifo_streams;
  std::vector<xbak::util::UniqueFd>& owned = out->owned;
  std::vector<int>& fds = out->fds;
  std::vector<std::string>& names = out->names;
  const std::string& fifo_dir = s.fifo_dir;
  if (fifo_streams > 1) {
    auto opened = command == "put" ? xbak::sink::OpenFifosForReading(fifo_dir, fifo_streams, s.fifo_timeout)
                                   : xbak::sink::OpenFifosForWriting(fifo_dir, fifo_streams, s.fifo_timeout);
    if (!opened.ok()) return Fail(opened.status());
    owned = std::move(opened.value());
    for (int i = 0; i < fifo_streams; i++) {
      fds.push_back(owned[static_cast<size_t>(i)].get());
      names.push_back("fifo " + xbak::sink::FifoPath(fifo_dir, i));
    }
  } else if (command == "put") {
    if (isatty(STDIN_FILENO))
      return Usage("put reads an xbstream on stdin: pipe xbak --backup --stream=xbstream into it");
    fds.push_back(STDIN_FILENO);
    names.push_back("stdin");
  } else {
    if (isatty(STDOUT_FILENO)) return Usage("get writes an xbstream on stdout: pipe it into xbak --extract");
    fds.push_back(STDOUT_FILENO);
    names.push_back("stdout");
  }
  return std::nullopt;
}

// Runs the command on the S3 store.
// list and expire: the bucket (under PREFIX) as a whole.
int RunRepositoryCommand(const Settings& s, xbak::storage::EventLoop& loop,
                         xbak::storage::ObjectStore& store) {
  if (s.command == "list") {
    auto catalog = xbak::cloud::ReadCatalog(loop, store, {s.name, s.repo_parallel});
    if (!catalog.ok()) return Fail(catalog.status());
    std::cout << (s.json ? xbak::cloud::FormatCatalogJson(*catalog)
                         : xbak::cloud::FormatCatalogTable(*catalog))
              << std::flush;
    return 0;
  }
  xbak::cloud::ExpireOptions eo;
  eo.prefix = s.name;
  eo.retain_full = s.retain_full;
  eo.retain_days = s.retain_days;
  eo.dry_run = s.dry_run;
  eo.parallel = s.repo_parallel;
  xbak::Status st = xbak::cloud::CloudExpire(loop, store, eo, [&](const xbak::cloud::ExpirePlan& plan) {
    for (const auto& i : plan.remove)
      std::cout << (s.dry_run ? "would delete " : "delete ") << i.name << "  (" << i.why << ")\n";
    for (const auto& i : plan.keep) std::cout << "keep " << i.name << "  (" << i.why << ")\n";
    std::cout << std::flush;
  });
  return st.ok() ? 0 : Fail(st);
}

int RunCommand(const Settings& s) {
  const std::string &command = s.command, &name = s.name;
  const int parallel = s.parallel;
  xbak::storage::EventLoop loop;
  auto store = xbak::cli::OpenStore(loop, s.store);
  if (!store.ok()) return Fail(store.status());

  if (command == "delete") {
    xbak::Status st = xbak::cloud::CloudDelete(loop, **store, name);
    return st.ok() ? 0 : Fail(st);
  }
  if (command == "list" || command == "expire") return RunRepositoryCommand(s, loop, **store);
  if (command == "binlog-push") return xbak::cli::RunBinlogPush(loop, **store, name, s.binlog);
  if (command == "restore") {
    xbak::pitr::PointRestoreOptions o = s.restore;
    o.prefix = name;
    o.parallel = parallel;
    o.progress_interval = s.progress;
    o.get.parallel = parallel;
    o.get.verify_retries = std::min(s.store.http.max_retries, 10);
    o.get.verify_backoff_max_s = s.store.http.backoff_max_s;
    o.get.progress_interval = s.progress;
    return xbak::cli::RunPointRestore(loop, **store, o);
  }
  if (command == "verify") {
    xbak::cloud::CloudVerifyOptions vo;
    vo.name = name;
    vo.parallel = parallel;
    auto r = xbak::cloud::CloudVerify(loop, **store, vo);
    if (!r.ok()) return Fail(r.status());
    for (const auto& line : r->problems) std::cout << line << "\n";
    std::cout << r->Summary() << std::endl;
    return r->sound() ? 0 : 1;
  }

  Streams streams;
  if (auto rc = OpenStreams(s, &streams)) return *rc;
  const std::vector<int>& fds = streams.fds;
  const std::vector<std::string>& names = streams.names;
  if (command == "put") {
    xbak::cloud::PutOptions o;
    o.name = name;
    o.parallel = parallel;
    o.object_size = static_cast<size_t>(s.object_size);
    o.progress_interval = s.progress;
    o.lock_mode = s.store.lock_mode;
    o.lock_until = s.store.lock_until;
    xbak::Status st = xbak::cloud::CloudPut(loop, **store, fds, names, o);
    return st.ok() ? 0 : Fail(st);
  }
  xbak::cloud::GetOptions o;
  o.name = name;
  o.files = s.files;
  o.parallel = parallel;
  o.allow_incomplete = s.allow_incomplete;
  o.verify_retries = std::min(s.store.http.max_retries, 10);
  o.verify_backoff_max_s = s.store.http.backoff_max_s;
  o.progress_interval = s.progress;
  xbak::Status st = xbak::cloud::CloudGet(loop, **store, fds, names, o);
  streams.owned.clear();  // readers of the FIFOs see the end of their streams
  return st.ok() ? 0 : Fail(st);
}

}  // namespace

int main(int argc, char** argv) {
  // A reader of our stdout/FIFOs that goes away must give an EPIPE error,
  // not kill us silently.
  signal(SIGPIPE, SIG_IGN);
  // Object buffers (MiBs each) are allocated on reader threads and freed on
  // the loop thread. With glibc's dynamic mmap threshold they soon come from
  // the heap, where freed memory is not given back to the system and RSS
  // creeps up; a fixed threshold keeps every big buffer an mmap of its own,
  // returned the moment it is freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);

  po::variables_map vm;
  if (auto rc = Parse(argc, argv, &vm)) return *rc;
  Settings s;
  if (auto rc = CheckCommand(vm, &s)) return *rc;
  if (auto rc = xbak::cli::CheckStoreOptions(vm, s.command, &s.store)) return *rc;
  if (auto rc = xbak::cli::CheckBinlogOptions(vm, s.command, &s.binlog)) return *rc;
  if (auto rc = xbak::cli::CheckRestoreOptions(vm, s.command, &s.restore)) return *rc;
  if (auto rc = CheckTransfer(vm, &s)) return *rc;
  return RunCommand(s);
}
