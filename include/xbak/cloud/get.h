// `xbcloud get`: downloads a backup (layout.h) and writes it as xbstream to
// stdout or N FIFOs, each file's objects in order, each file on one output.
//
// Objects are downloaded in a fixed global order and handed to one writer
// thread per output. At most `window_objects` objects are held in memory
// (being downloaded, hashed, or waiting for their writer): memory is at most
// that window times the object size, however large `parallel` is. Each object's
// body is hashed piece by piece as it arrives (the pieces of all objects in
// flight share the vector lanes of storage/md5_multi.h), its download held
// when it gets ahead of its MD5, and checked against the MD5 and size in
// the manifest (or its .md5 sidecar with allow_incomplete) before a byte of
// it is written; a mismatch is downloaded again (verify_retries times) and
// then reported by name. When `parallel` exceeds the window, the oldest
// objects are fetched in byte ranges (each at least min_range_bytes) to
// keep that many GETs in flight.
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
  size_t window_objects = 0;       // objects held at once; 0: max(4, min(parallel, 8), outputs + 2)
  // Each request's bytes are handed on (and hashed) in pieces of this size
  // as they arrive (rounded down to whole 64-byte MD5 blocks).
  uint64_t piece_bytes = uint64_t{1} << 20;
  // Flow control: a download reads at most this many pieces beyond what its
  // object's MD5 has reached (0: no limit). Hashing is what paces a get on
  // a fast link; unlimited, objects would download whole and wait in memory.
  size_t read_ahead_pieces = 2;
  // Checked by piece (a manifest with piece MD5s; the pieces are then its
  // pieces): bytes received and not yet written held at most (about: each
  // download under way may hold part of one piece more). 0: max(16 MiB,
  // parallel MiB, 4 pieces per output).
  uint64_t buffer_bytes = 0;
  // Objects larger than this are fetched in ranges of at most this size (0,
  // the default: one GET per object unless --parallel exceeds the window).
  // Each range is one more request for the store to serve: on loopback MinIO
  // 1 MiB ranges cost it 1 s of CPU per GiB more than whole objects.
  uint64_t range_bytes = 0;
  // Smallest range fetched by a request of its own: below it, a request's
  // overhead (and the store's per-request work) costs more than the overlap
  // gains. Objects under twice this size are fetched whole.
  uint64_t min_range_bytes = uint64_t{1} << 20;
  bool allow_incomplete = false;  // read a backup without its completion marker
  int verify_retries = 3;         // re-downloads of an object that fails its MD5
  double verify_backoff_s = 0.5;
  double verify_backoff_max_s = 20;  // --max-backoff
  std::chrono::milliseconds progress_interval{5000};
};

struct GetStats {
  uint64_t bytes_downloaded = 0, bytes_written = 0, objects = 0, files = 0, md5_retries = 0;
  uint64_t requests = 0;           // data GETs (whole objects or ranges), retries not counted
  uint64_t peak_held_objects = 0;  // most objects held at once (<= the window)
  uint64_t peak_held_bytes = 0;    // most bytes received and not yet written at once
};

// Writes to `fds` (not owned, blocking). `names` describe them in messages.
Status CloudGet(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const GetOptions& options, GetStats* stats = nullptr);

}  // namespace xbak::cloud
