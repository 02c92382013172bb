#include "xbcloud_binlog.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "common.h"
#include "xbak/util/log.h"
#include "xbcloud_store.h"  // Usage, Str

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

// Set by SIGTERM/SIGINT: the service finishes its pass (a segment stored is
// recorded in its state first) and exits. The one global a signal handler needs.
std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

}  // namespace

void DescribeBinlogOptions(po::options_description* visible) {
  po::options_description b("Binary log archiving (binlog-push PREFIX)");
  b.add_options()(
      "binlog-index", po::value<std::string>(),
      "the server's binlog index file (log_bin_index, e.g. /var/lib/mysql/mysql-bin.index); its binlogs "
      "are read from its directory")("server-id", po::value<uint32_t>(),
                                     "the server's server_id: its binlogs go under PREFIX/binlogs/ID/")(
      "once", "one pass, then exit (from cron); without it, a pass every --max-lag seconds until SIGTERM")(
      "max-lag", po::value<unsigned>()->default_value(60),
      "seconds between passes: the most a disaster can lose of what the server wrote (the file being written "
      "is archived up to its last complete transaction)");
  visible->add(b);
}

std::optional<int> CheckBinlogOptions(const po::variables_map& vm, const std::string& command,
                                      BinlogPushSettings* s) {
  const bool push = command == "binlog-push";
  for (const char* o : {"binlog-index", "server-id", "once"}) {
    if (vm.count(o) && !push) return Usage(std::string("--") + o + " is for binlog-push");
  }
  if (!vm["max-lag"].defaulted() && (!push || vm.count("once")))
    return Usage("--max-lag is for binlog-push without --once");
  if (!push) return std::nullopt;
  if (!vm.count("binlog-index"))
    return Usage("binlog-push needs --binlog-index=FILE (the server's log_bin_index)");
  if (!vm.count("server-id")) return Usage("binlog-push needs --server-id=N (the server's server_id)");
  s->index = Str(vm, "binlog-index");
  s->server_id = vm["server-id"].as<uint32_t>();
  s->once = vm.count("once") != 0;
  s->max_lag_s = vm["max-lag"].as<unsigned>();
  if (s->max_lag_s < 1 || s->max_lag_s > 86400) return Usage("--max-lag must be between 1 and 86400 seconds");
  return std::nullopt;
}

int RunBinlogPush(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& prefix,
                  const BinlogPushSettings& s) {
  auto source = cloud::LocalBinlogs(s.index);
  if (!source.ok()) return Fail(source.status());
  signal(SIGTERM, OnStop);
  signal(SIGINT, OnStop);
  cloud::BinlogPushOptions o;
  o.prefix = prefix;
  o.server_id = s.server_id;
  o.stop = [] { return g_stop.load(); };
  // Complete files' states, kept across the service's passes.
  std::map<std::string, cloud::ArchivedBinlog> complete;
  o.complete = &complete;
  int status = 0;  // of the last pass
  for (;;) {
    auto r = cloud::PushBinlogs(loop, store, **source, o);
    status = r.ok() ? 0 : 1;
    if (!r.ok()) {
      // As a service, a failed pass is reported and tried again at the next;
      // a gap stays recorded in the archive.
      util::LogError("binlog-push " + prefix + ": " + r.status().message());
    } else {
      for (const auto& w : r->warnings) util::LogWarning("binlog-push " + prefix + ": " + w);
    }
    if (r.ok() && (r->segments > 0 || !r->completed.empty())) {
      std::string done;
      for (const auto& f : r->completed) done += (done.empty() ? "" : ", ") + f;
      util::LogInfo("binlog-push " + prefix + ": " + std::to_string(r->segments) + " segments, " +
                    std::to_string(r->bytes) + " bytes stored" +
                    (r->last_gtid ? ", up to GTID " + binlog::FormatGtid(*r->last_gtid) : std::string()) +
                    (done.empty() ? "" : "; complete: " + done));
    }
    if (s.once || g_stop) return status;
    for (unsigned waited = 0; waited < s.max_lag_s * 10 && !g_stop; waited++)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_stop) return status;
  }
}

}  // namespace xbak::cli
