// `xbcloud put`: reads xbstream(s) and uploads them as a backup (layout.h).
//
// Pipeline: one reader thread per input stream parses chunks (checking every
// CRC, so a stream that is not xbstream fails at once) and appends them to a
// buffer per open file; a full buffer (or a file's end) becomes an object,
// handed to the event loop, which keeps up to `parallel` PUTs in flight.
// Memory is bounded per reader (a reader whose buffers reach its share stops
// reading until uploads complete), so a slow store slows the stream down
// instead of growing the process.
//
// NAME/xbcloud.started is written first (list and expire see a put under
// way); the manifest only after every object and sidecar was stored and
// every stream ended cleanly, so a put that failed (or was killed) never
// looks complete.
//
// Resuming: a put of a NAME that holds the objects of an interrupted put
// (no manifest) continues it. Each object it would send that the store
// already has with the same size and MD5 (and the same sidecar) is not sent
// again; what the interrupted put stored and this one did not produce is
// removed before the manifest. Object boundaries depend only on the stream
// (a file's object is cut at --read-buffer-size, or earlier when a reader's
// memory share is full), so a stream read again gives the same objects.
// MD5s come from the listing (S3: the ETag of a plain PUT); where the store
// does not list them (SSE-KMS, SSE-C) every object is sent again.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "xbak/cloud/layout.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct PutOptions {
  std::string name;               // backup name (CheckBackupName)
  int parallel = 4;               // PUTs in flight
  size_t object_size = 10 << 20;  // --read-buffer-size: target object size
  size_t memory_per_stream = 0;  // buffered bytes per input stream; 0: (parallel + 2) * object_size / streams
  // Size of the pieces whose MD5s the manifest records (layout.h; get
  // checks and writes each object piece by piece). 0: none (a version 1
  // manifest, which get checks object by object).
  uint64_t digest_piece_bytes = kDigestPieceBytes;
  std::chrono::milliseconds progress_interval{5000};  // 0: no progress lines
  // The start time the manifest records (Unix time); 0: the clock's. Tests
  // set it to order backups put within one second.
  int64_t started_unix = 0;
  // The S3 Object Lock the store puts on every object (S3Config), recorded
  // in the manifest so that list, expire and delete know it.
  std::string lock_mode;
  int64_t lock_until = 0;
};

struct PutStats {
  uint64_t bytes_read = 0, bytes_uploaded = 0, objects = 0, files = 0;
  uint64_t peak_buffered = 0;
  // A resumed put: objects (and their bytes) found stored with the same
  // bytes and not sent again, and objects of the interrupted put removed.
  uint64_t objects_skipped = 0, bytes_skipped = 0, stale_deleted = 0;
};

// Uploads the streams read from `fds` (not owned; read to their end).
// `names` describe the fds in messages ("stdin", "fifo D/thread_0").
// Runs `loop` on the calling thread until done.
Status CloudPut(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const PutOptions& options, PutStats* stats = nullptr);

}  // namespace xbak::cloud
