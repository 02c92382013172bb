// `xbcloud get`: downloads a backup (layout.h) and writes it as xbstream to
// stdout or N FIFOs, each file's objects in order, each file on one output.
//
// Objects are downloaded in a fixed global order and handed to one writer
// thread per output. At most `window_objects` objects are held in memory
// (being downloaded, hashed, or waiting for their writer): memory is that
// window times the object size, whatever `parallel` is. When `parallel`
// exceeds the window, the oldest objects are fetched in byte ranges (each at
// least min_range_bytes) to keep that many GETs in flight. Each object is
// hashed range by range as its ranges arrive (storage/md5_multi.h: the
// ranges of all objects in flight share the vector lanes) and checked
// against the MD5 and size in the manifest (or its .md5 sidecar with
// allow_incomplete); a mismatch is downloaded again (verify_retries times)
// and then reported by name.
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
  size_t window_objects = 0;       // objects held at once; 0: max(3, outputs + 2)
  // Objects larger than this are fetched in ranges of at most this size,
  // each hashed as it arrives. 0 (the default): whole objects unless
  // --parallel exceeds the window. On loopback MinIO, 4 MiB ranges of 10 MiB
  // objects cost more in requests than the earlier hashing saved (1.55 s
  // against 1.35-1.5 s per GiB); over a real network they may pay.
  uint64_t range_bytes = 0;
  // Smallest range fetched by a request of its own: below it, a request's
  // overhead (and the store's per-request work) costs more than the overlap
  // gains. Objects under twice this size are fetched whole.
  uint64_t min_range_bytes = uint64_t{1} << 20;
  bool allow_incomplete = false;  // read a backup without its completion marker
  int verify_retries = 3;         // re-downloads of an object that fails its MD5
  double verify_backoff_s = 0.5;
  std::chrono::milliseconds progress_interval{5000};
};

struct GetStats {
  uint64_t bytes_downloaded = 0, bytes_written = 0, objects = 0, files = 0, md5_retries = 0;
  uint64_t requests = 0;           // data GETs (whole objects or ranges), retries not counted
  uint64_t peak_held_objects = 0;  // most objects held at once (<= the window)
};

// Writes to `fds` (not owned, blocking). `names` describe them in messages.
Status CloudGet(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const GetOptions& options, GetStats* stats = nullptr);

}  // namespace xbak::cloud
