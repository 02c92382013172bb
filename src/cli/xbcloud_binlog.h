// xbcloud binlog-push: the server's binary logs archived into object storage
// as they are written (cloud/binlog_archive.h), from cron (--once) or as a
// service that runs a pass every --max-lag seconds until SIGTERM/SIGINT.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "xbak/cloud/binlog_archive.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"

namespace xbak::cli {

struct BinlogPushSettings {
  std::string index;        // --binlog-index: the server's log_bin_index file
  uint32_t server_id = 0;   // --server-id: the server's @@server_id
  bool once = false;        // --once: one pass, then exit
  unsigned max_lag_s = 60;  // --max-lag: seconds between passes
};

void DescribeBinlogOptions(boost::program_options::options_description* visible);
// Checks them for `command`; an exit status when they are wrong.
std::optional<int> CheckBinlogOptions(const boost::program_options::variables_map& vm,
                                      const std::string& command, BinlogPushSettings* out);
// Runs binlog-push PREFIX; its exit status.
int RunBinlogPush(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& prefix,
                  const BinlogPushSettings& s);

}  // namespace xbak::cli
