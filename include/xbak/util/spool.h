// A one-way byte queue between a producer that must never wait and a consumer
// that may be arbitrarily slow, drained by its own thread.
//
// Why: the redo log copier follows a circular file that the server overwrites
// as it goes. If the copier waited for the output (a stream read at 0.5 MiB/s,
// an upload), the server's writes would overtake it and the backup would fail
// (issue 18). The copier appends here instead; appending costs a memcpy while
// the bytes fit in memory, and a pwrite to a local file beyond that.
//
//   Spool spool({.memory_limit = 64 << 20, .tmpdir = "/tmp", .what = "redo log"});
//   spool.Start([&](const uint8_t* d, size_t n) { return out->Write(d, n); });
//   spool.Append(p, n);          // producer thread, never blocks on the output
//   Status st = spool.Finish();  // no more input; waits until all is written
//
// Bytes come out in the order they went in. Up to memory_limit bytes are held
// in memory; the rest goes to an unnamed file in tmpdir (O_TMPFILE, so it
// vanishes with the process however the process ends; an unlinked mkstemp file
// where O_TMPFILE is not supported). Written-out file ranges are punched out
// (FALLOC_FL_PUNCH_HOLE) so the disk holds only what is still pending.
//
// Errors are sticky and flow both ways: a failed write by the consumer makes
// the next Append fail with that error (so the producer stops), a failed spill
// (ENOSPC, disk_limit) makes Append fail with a message naming tmpdir, and
// Finish returns the first error of either side.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::util {

class Spool {
 public:
  struct Options {
    size_t memory_limit = size_t{64} << 20;  // bytes held in memory before spilling to disk
    std::string tmpdir;                      // where the spill file goes; "" = $TMPDIR or /tmp
    uint64_t disk_limit = 0;                 // most bytes pending on disk at once; 0 = no limit
    size_t chunk = size_t{1} << 20;          // largest piece handed to the consumer
    std::string what = "data";               // named in messages: "the redo log spool ..."
  };
  using Writer = std::function<Status(const uint8_t* data, size_t n)>;

  struct Stats {
    uint64_t appended = 0;      // bytes accepted so far
    uint64_t written = 0;       // bytes the consumer has written
    uint64_t pending = 0;       // appended - written
    uint64_t on_disk = 0;       // of pending, bytes in the spill file
    uint64_t peak_pending = 0;  // largest `pending` seen
    uint64_t peak_on_disk = 0;
    uint64_t spilled = 0;  // bytes that went through the file in total
  };

  explicit Spool(Options options);
  ~Spool();  // aborts the consumer if still running and joins it
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Starts the consumer thread. Once only.
  Status Start(Writer writer);
  // Producer side (one thread). Never waits for the consumer; fails with the
  // consumer's error once it has one, or if spilling fails.
  Status Append(const uint8_t* data, size_t n);
  // No more Append; waits until the consumer wrote everything (or failed) and
  // joins it. Returns the first error. Idempotent.
  Status Finish();
  // Makes the consumer stop as soon as possible and Finish/Append fail with
  // kCancelled (unless an error came first). For failure paths.
  void Abort();
  // While paused, the consumer starts no new write (the one under way ends);
  // Append goes on as usual. Why: the backup pauses the redo log's drain while
  // the server is held under BACKUP STAGE BLOCK_DDL, so the few files copied
  // then reach a slow output first instead of queueing behind minutes of
  // spooled log (issue 18). Finish and Abort resume.
  void Pause(bool paused);

  Stats stats() const;
  // Where the spill file lives (for messages); "" until resolved.
  const std::string& spill_dir() const { return dir_; }

 private:
  // One run of bytes: in memory (mem non-empty) or at [off, off+len) of the file.
  struct Segment {
    std::vector<uint8_t> mem;
    uint64_t off = 0;
    uint64_t len = 0;
    bool on_disk = false;
  };
  Status Spill(const uint8_t* data, size_t n);  // producer only
  Status OpenSpillFile();                       // producer only
  void Drain();                                 // consumer thread
  Status WriteSegment(const Segment& s, std::vector<uint8_t>* buf);
  void Fail(Status st);  // records the first error; caller holds mu_

  const Options o_;
  std::string dir_;
  Writer writer_;

  // Producer-owned: the spill file and its append offset. The consumer reads
  // and punches only ranges it got through a Segment, which were written before
  // the Segment was queued under mu_.
  std::optional<File> file_;
  uint64_t file_end_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Segment> queue_;  // guarded by mu_
  uint64_t memory_ = 0;        // bytes in memory segments, queued or being written
  Stats stats_;                // guarded by mu_
  Status error_;               // first error of either side, guarded by mu_
  bool closed_ = false;        // no more Append
  bool aborted_ = false;
  bool paused_ = false;
  std::thread thread_;
};

}  // namespace xbak::util
