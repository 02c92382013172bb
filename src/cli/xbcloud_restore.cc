#include "xbcloud_restore.h"

#include "common.h"
#include "xbak/util/size.h"
#include "xbcloud_store.h"  // Usage, Str

namespace po = boost::program_options;

namespace xbak::cli {

void DescribeRestoreOptions(po::options_description* visible) {
  po::options_description r("Point-in-time restore (restore PREFIX --datadir=D TARGET)");
  r.add_options()("datadir", po::value<std::string>(),
                  "restore into this directory (absent or empty; never written over)")(
      "to-time", po::value<std::string>(),
      "target: 'YYYY-MM-DD HH:MM:SS' (local time, TZ): every transaction committed up to the end of that "
      "second")("to-gtid", po::value<std::string>(), "target: D-S-N, the last transaction restored")(
      "latest", "target: everything the binlog archive holds")(
      "backup", po::value<std::string>(),
      "restore the chain of this backup (NAME under PREFIX) instead of the newest one before the target")(
      "use-memory", po::value<std::string>()->default_value("1G"),
      "memory for each redo step and for the replay server's buffer pool")(
      "mariadbd", po::value<std::string>(),
      "the MariaDB server program that replays the binary logs (default: mariadbd in PATH, /usr/sbin)")(
      "mysqld-defaults-file", po::value<std::string>(),
      "the restored server's my.cnf, read by the replay server for its plugins (key management, page "
      "compression) and InnoDB settings; its datadir, network, binlog and replication settings are "
      "overridden; replication filters and init_file in it are refused")(
      "restore-dry-run", "restore: say which backups and binary logs it would use, write nothing")(
      "no-server-version-check",
      "restore: go on with backups of a server version xbcloud was not tested against, at your own risk")(
      "start-server",
      "restore: then start the server on the datadir with --mysqld-defaults-file (as root, the datadir is "
      "first "
      "given to its user) and leave it running once it answers on its socket");
  visible->add(r);
}

std::optional<int> CheckRestoreOptions(const po::variables_map& vm, const std::string& command,
                                       pitr::PointRestoreOptions* o) {
  const bool restore = command == "restore";
  for (const char* opt :
       {"datadir", "to-time", "to-gtid", "latest", "backup", "mariadbd", "mysqld-defaults-file",
        "restore-dry-run", "start-server", "no-server-version-check"}) {
    if (vm.count(opt) && !restore) return Usage(std::string("--") + opt + " is for restore");
  }
  if (!vm["use-memory"].defaulted() && !restore) return Usage("--use-memory is for restore");
  if (!restore) return std::nullopt;
  const int targets = static_cast<int>(vm.count("to-time") + vm.count("to-gtid") + vm.count("latest"));
  if (targets != 1)
    return Usage(
        "restore needs exactly one target: --to-time='YYYY-MM-DD HH:MM:SS', --to-gtid=D-S-N or --latest");
  if (!vm.count("datadir") && !vm.count("restore-dry-run")) return Usage("restore needs --datadir=DIR");
  o->datadir = Str(vm, "datadir");
  o->target.kind = pitr::Target::Kind::kLatest;
  if (vm.count("to-time")) {
    o->target.kind = pitr::Target::Kind::kTime;
    o->target.text = Str(vm, "to-time");
    auto t = pitr::ParseLocalTime(o->target.text, "--to-time");
    if (!t.ok()) return Usage(t.status().message());
    o->target.time = *t;
  }
  if (vm.count("to-gtid")) {
    o->target.kind = pitr::Target::Kind::kGtid;
    o->target.text = Str(vm, "to-gtid");
    auto g = binlog::ParseGtid(o->target.text);
    if (!g.ok()) return Usage("--to-gtid: " + g.status().message());
    o->target.gtid = *g;
  }
  o->backup = Str(vm, "backup");
  const auto mem = util::ParseSize(Str(vm, "use-memory"), uint64_t{1} << 40);
  if (!mem || *mem < (uint64_t{32} << 20))
    return Usage("--use-memory must be a size of at least 32M, e.g. 2G");
  o->use_memory = *mem;
  o->mariadbd = Str(vm, "mariadbd");
  o->defaults_file = Str(vm, "mysqld-defaults-file");
  o->dry_run = vm.count("restore-dry-run") != 0;
  o->start_server = vm.count("start-server") != 0;
  o->no_server_version_check = vm.count("no-server-version-check") != 0;
  if (o->start_server && o->defaults_file.empty())
    return Usage("--start-server needs --mysqld-defaults-file (the my.cnf the server runs with)");
  return std::nullopt;
}

int RunPointRestore(storage::EventLoop& loop, storage::ObjectStore& store, pitr::PointRestoreOptions o) {
  Status st = pitr::RestoreToPoint(loop, store, o);
  return st.ok() ? 0 : Fail(st);
}

}  // namespace xbak::cli
