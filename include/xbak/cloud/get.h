// `xbcloud get`: downloads a backup (layout.h) and writes it as xbstream to
// stdout or N FIFOs, each file's objects in order, each file on one output.
//
// Objects are downloaded `parallel` at a time in a fixed global order and
// handed to one writer thread per output; at most parallel + max(2, outputs)
// objects are held in memory (in flight or downloaded and waiting for their
// writer), so memory is bounded by that window times the object size. Each object is checked against the
// MD5 and size in the manifest (or its .md5 sidecar with allow_incomplete);
// a mismatch is downloaded again (verify_retries times) and then reported by
// name.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct GetOptions {
  std::string name;
  std::vector<std::string> files;  // only these files of the backup (empty: all)
  int parallel = 4;                // GETs in flight
  bool allow_incomplete = false;   // read a backup without its completion marker
  int verify_retries = 3;          // re-downloads of an object that fails its MD5
  double verify_backoff_s = 0.5;
  std::chrono::milliseconds progress_interval{5000};
};

struct GetStats {
  uint64_t bytes_downloaded = 0, bytes_written = 0, objects = 0, files = 0, md5_retries = 0;
};

// Writes to `fds` (not owned, blocking). `names` describe them in messages.
Status CloudGet(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const GetOptions& options, GetStats* stats = nullptr);

}  // namespace xbak::cloud
