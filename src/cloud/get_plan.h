// What a get downloads and where each object goes: the backup's objects
// (from its manifest, or listed when it has none), each file on one output,
// the outputs balanced by bytes, and one global download order that takes
// from every output in turn. Internal to `xbcloud get` (get.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "xbak/cloud/get.h"
#include "xbak/cloud/layout.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct Object {
  ManifestEntry entry;
  bool md5_known = false;  // false: read the .md5 sidecar first (incomplete backups)
  size_t output = 0;       // which fd its file goes to
  size_t output_pos = 0;   // its place in that output's sequence
};

struct GetPlan {
  std::vector<Object> order;          // the global download order
  std::vector<size_t> output_counts;  // objects per output
  size_t files = 0;
  // The manifest has the MD5 of every piece of every object, all of this
  // size: objects are checked piece by piece (0: each object whole).
  uint64_t piece_digest_bytes = 0;
};

// Reads the manifest (or, with options.allow_incomplete, lists a backup
// without one) and plans the get onto `outputs` outputs. Errors name the
// backup, a missing file or a damaged manifest.
Result<GetPlan> PlanGet(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options,
                        size_t outputs);

}  // namespace xbak::cloud
