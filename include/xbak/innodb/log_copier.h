// Follows the live, circular ib_logfile0 of a running server while the backup
// copies the data files, and hands every complete mini-transaction to a Writer
// that appends it to the backup's linear ib_logfile0 (after the 12 KiB header
// from MakeBackupLogHeader). This is what makes a copy of data files taken
// over a period of time recoverable to one point: --prepare replays this log.
//
// Usage:
//   auto c = LogCopier::Open({.log_path = datadir + "/ib_logfile0"});
//   write MakeBackupLogHeader(c->format(), c->checkpoint_lsn(), c->checkpoint_end_lsn(), "Backup " + ver);
//   c->Start(append_to_backup_log, track_ddl);
//   ... copy data files ...
//   c->WaitUntil(server_lsn, 5s);  // after FLUSH ENGINE LOGS under the backup lock
//   c->Stop();
//
// The thread reads in blocks of up to Options::max_read bytes with pread (two
// reads when the block wraps round the end of the file), walks the mtr framing,
// and appends only whole mtrs whose sequence bit and CRC-32C are right, each
// terminator forced to 1 (the backup log is one first pass, it never wraps).
// At the live tail the server keeps rewriting its last block, so anything after
// the last complete mtr is read again on the next poll; an mtr cut off by the
// end of a read is kept (carried over) and only the rest is read.
//
// Failures are reported, never papered over:
//  * overwrite: the server reused log space that was not copied yet (detected
//    from the live checkpoint: once it passes copied_lsn the server may reuse
//    that space, and the CRC/sequence bit show whether it did);
//  * the live file was replaced or its header changed (online resize with
//    SET GLOBAL innodb_log_file_size, a restart), which would otherwise make
//    the copier read garbage or stall;
//  * an mtr that cannot be parsed although the server has checkpointed past it.
// All waiting is bounded: WaitUntil fails when the copy makes no progress for
// its timeout, Stop returns within one poll interval.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "xbak/innodb/redo_log.h"
#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

class LogCopier {
 public:
  struct Options {
    std::string log_path;                         // the live ib_logfile0
    std::chrono::milliseconds poll_interval{20};  // longest sleep at the tail of an idle log
    size_t max_read = size_t{2} << 20;            // largest single read; must exceed kMtrSizeMax
    // How far the server has finished writing its log (for a server: the
    // status variable Innodb_lsn_flushed). Required: only log below this (or
    // below the latest checkpoint's end) is taken, because the bytes after the
    // log's end in the block being written are garbage that may hold stale
    // copies of whole mtrs, and a read can catch a block halfway through a
    // write. Called from the copier thread, at most every written_refresh,
    // when log was found beyond what is known to be written.
    std::function<Result<uint64_t>()> written_lsn;
    std::chrono::milliseconds written_refresh{20};
    // Called from the copier thread when it fails (the backup is then lost:
    // the caller stops copying data files at once instead of at the end).
    std::function<void()> on_failure;
  };
  // Appends n bytes to the backup log. Called from the copier thread only.
  using Writer = std::function<Status(const uint8_t* data, size_t n)>;
  // DDL tracking: every FILE_CREATE/DELETE/RENAME/MODIFY in LSN order with the
  // end LSN of its mtr. Called from the copier thread after the Writer accepted
  // the mtr and before copied_lsn() covers it, so once WaitUntil(lsn) returns
  // every file operation up to lsn has been delivered.
  using FileOpSink = std::function<void(const FileOp&, uint64_t lsn)>;

  // Opens the live log and reads its header and checkpoint. Fails for logs
  // older than 10.8 (kUnsupported). An encrypted log is copied as it is (its
  // mtrs are framed and checksummed without the key; FILE_ records of it are
  // not delivered).
  static Result<std::unique_ptr<LogCopier>> Open(const Options& options);
  ~LogCopier();  // stops and joins the thread if it still runs
  LogCopier(const LogCopier&) = delete;
  LogCopier& operator=(const LogCopier&) = delete;

  const LogHeader& header() const { return header_; }
  uint32_t format() const { return header_.format; }
  uint64_t first_lsn() const { return header_.first_lsn; }
  // The checkpoint found at Open: the backup log starts at checkpoint_lsn.
  uint64_t checkpoint_lsn() const { return start_.checkpoint_lsn; }
  uint64_t checkpoint_end_lsn() const { return start_.end_lsn; }
  uint64_t capacity() const { return capacity_; }  // file size - 12288

  // Reads the live checkpoint again (for to_lsn at the end of the backup).
  // Fails as the copier does if the file was replaced or its header changed.
  // Safe to call from any thread, also while the copier runs.
  Result<Checkpoint> ReadLiveCheckpoint() const;

  // Starts the copier thread at checkpoint_lsn(). Once only.
  Status Start(Writer writer, FileOpSink file_ops);
  // LSN up to which the backup log is complete (every Writer call for it has
  // returned). Starts at checkpoint_lsn().
  uint64_t copied_lsn() const { return copied_lsn_.load(std::memory_order_acquire); }
  // Waits until copied_lsn() >= lsn. Returns the thread's error if it failed,
  // kCancelled if it was stopped, kTimeout if copied_lsn() did not advance for
  // `stall_timeout` (the server has not written that far, or the copy is stuck).
  Status WaitUntil(uint64_t lsn, std::chrono::milliseconds stall_timeout);
  // Stops and joins the thread; returns its error, if any. Idempotent.
  Status Stop();
  // Redo bytes per second the copier has been copying (a moving average over
  // the last seconds; 0 until the first second). While the copy keeps up this
  // is the server's write rate.
  uint64_t write_rate() const { return rate_bps_.load(std::memory_order_relaxed); }

 private:
  LogCopier(Options options, util::File file, LogHeader header, std::vector<uint8_t> header_block,
            Checkpoint start, uint64_t file_size, dev_t dev, ino_t ino);
  void Run();
  // The copier thread: reads the log, takes the mtrs that are final, hands
  // them to the writer, and polls for more until stopped or failed.
  struct CopyState;
  enum class Next { kReadNow, kPoll };  // after a read: read again at once, or wait first
  Status CopyLoop();
  // One read of the log from s.lsn and what it decided.
  Result<Next> CopyOnce(CopyState& s);
  // The whole mtrs at the start of s.buf that end below final_below, into
  // s.out and s.ops; returns their bytes. *ms says why it stopped.
  size_t TakeFinalMtrs(CopyState& s, uint64_t final_below, MtrStatus* ms, bool* not_yet_final);
  // Hands the mtrs taken to the writer and advances copied_lsn().
  Status Commit(CopyState& s, size_t pos);
  // A read that ended at the log's tail (or found nothing valid): whether
  // the log is there, overwritten or damaged, and when to read again.
  Result<Next> AtTail(CopyState& s, const Checkpoint& live, uint64_t final_below, size_t want, size_t pos);
  void WaitUnlessStopped(std::chrono::milliseconds wait);
  Status RefreshWritten(uint64_t* durable, std::chrono::steady_clock::time_point* last);
  // Re-validates that the path still names the file we opened, with the same
  // size and header, then returns its current checkpoint.
  Result<Checkpoint> ReadLiveState() const;
  Status ReadCircular(uint64_t lsn, uint8_t* dst, size_t n) const;
  bool StopRequested();
  // The two ways a log that should be there fails to parse, told apart by
  // OtherPassAt: overwritten by the server, or damaged.
  Status Overwritten(uint64_t lsn, const Checkpoint& live) const;
  Status Unparsable(uint64_t lsn, const Checkpoint& live, const std::string& why) const;
  // True if `buf` (read at lsn) holds a whole mtr of the next pass over the file.
  bool OtherPassAt(uint64_t lsn, const std::vector<uint8_t>& buf) const;
  struct RateMeter {
    explicit RateMeter(uint64_t lsn) : since_lsn(lsn) {}
    void Note(uint64_t lsn, std::atomic<uint64_t>* out);
    std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
    uint64_t since_lsn;
    double ewma = 0;
  };

  // Fixed after Open; read by both threads.
  const Options options_;
  const util::File file_;  // pread only, which is safe from several threads
  const LogHeader header_;
  const std::vector<uint8_t> header_block_;  // the first 512 bytes as seen at Open
  const Checkpoint start_;
  const uint64_t file_size_;
  const uint64_t capacity_;
  const dev_t dev_;
  const ino_t ino_;

  // Owned by the copier thread once started.
  Writer writer_;
  FileOpSink file_ops_;

  // Release-stored by the copier after the Writer returned, acquire-loaded by
  // readers, so that bytes written up to copied_lsn happen-before the read.
  std::atomic<uint64_t> copied_lsn_;
  std::atomic<uint64_t> rate_bps_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;   // progress, thread exit, stop request
  bool stop_requested_ = false;  // guarded by mu_
  bool running_ = false;         // guarded by mu_
  Status error_;                 // guarded by mu_
  std::thread thread_;           // touched only by the owner (Start/Stop/dtor)
};

}  // namespace xbak::innodb
