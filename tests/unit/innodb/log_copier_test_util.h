// What the LogCopier tests share: options for a copier and sinks that
// collect what it copies.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "redo_synth.h"
#include "xbak/innodb/log_copier.h"

namespace xbak::innodb::copier_test {

using namespace std::chrono_literals;
using synth::Bytes;
using synth::SynthLog;

// Options for a copier of `log`: its written() stands for the server's
// Innodb_lsn_flushed.
inline LogCopier::Options Opts(const SynthLog& log, std::chrono::milliseconds poll = 20ms) {
  LogCopier::Options o;
  o.log_path = log.path();
  o.poll_interval = poll;
  o.written_lsn = [&log]() -> Result<uint64_t> { return log.written(); };
  o.written_refresh = 1ms;
  return o;
}
inline LogCopier::Options OptsFor(const std::string& path) {
  LogCopier::Options o;
  o.log_path = path;
  o.written_lsn = []() -> Result<uint64_t> { return uint64_t{0}; };
  return o;
}

struct Collected {
  std::mutex mu;
  Bytes log;
  std::vector<std::pair<FileOp, uint64_t>> ops;
};

inline LogCopier::Writer CollectTo(Collected* c) {
  return [c](const uint8_t* d, size_t n) {
    std::lock_guard lk(c->mu);
    c->log.insert(c->log.end(), d, d + n);
    return Status::Ok();
  };
}
inline LogCopier::FileOpSink OpsTo(Collected* c) {
  return [c](const FileOp& op, uint64_t lsn) {
    std::lock_guard lk(c->mu);
    c->ops.emplace_back(op, lsn);
  };
}

}  // namespace xbak::innodb::copier_test
