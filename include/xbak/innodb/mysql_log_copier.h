// Follows a running MySQL server's redo log (#innodb_redo/#ib_redoN, format 6:
// mysql_redo.h) while the backup copies the data files, and hands every
// complete 512-byte block from the checkpoint on to a Writer, verbatim, in LSN
// order: XtraBackup's xtrabackup_logfile is the 2048-byte header
// (MakeBackupLogHeader) followed by exactly these blocks.
//
// Usage:
//   auto c = MysqlLogCopier::Open({.redo_dir = datadir + "/#innodb_redo"});
//   write MakeBackupLogHeader(c->files(), c->checkpoint_lsn(), "xtrabkup ...");
//   c->Start(append);
//   ... copy data files ...
//   c->Hold();                 // blocks from now on are kept, not written
//   ... read the consistent LSN (performance_schema.log_status) ...
//   c->Finish(lsn, 30s);       // the blocks up to lsn, the last one cut at lsn
//
// The server fills a block, then starts the next; a block is final once it
// is full (data_len 512) with its CRC and number right. MySQL's consistent
// point (log_status) does not stop commits after it is read, so the log must
// end exactly there: blocks read after Hold are kept in memory, and Finish
// writes those below the LSN and the block holding it cut at it (an mtr
// boundary: log_status is read while commits wait), so recovery ends there.
//
// The server removes or renames consumed files to #ib_redoN_tmp spares and
// reuses them for later LSNs, whatever a reader still needs (unless a redo
// consumer is registered). The copier re-reads the set when it moves to the
// next file, and a block that carries a later LSN than the one it was read
// for means the file was reused before it was copied: the copy fails, saying
// so, never a log with a gap.
#pragma once

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

#include "xbak/innodb/mysql_redo.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

// The header of a backup's xtrabackup_logfile: the header block of the live
// file that holds `checkpoint_lsn` with `creator` in it ("xtrabkup ..." says
// to XtraBackup's prepare that it is not prepared yet), both checkpoint slots
// at checkpoint_lsn, no encryption block.
std::vector<uint8_t> MakeMysqlBackupLogHeader(const mysql_redo::FileHeader& live, uint64_t checkpoint_lsn,
                                              const std::string& creator);

// Turns a backup's xtrabackup_logfile (MakeMysqlBackupLogHeader and the
// copied blocks) at `path` into the one redo file MySQL recovers the backup
// from, in place: its header's start LSN set to its first block's (the
// checkpoint's block), both checkpoint slots at the checkpoint, the file
// padded with zeros (a block of zeros ends recovery) to a multiple of 64 KiB
// and at least 1 MiB, the smallest file the server accepts being 64 KiB. The
// caller renames it to #innodb_redo/#ib_redo0 (verified with mysqld 9.7.4:
// recovery from it equals the server's own crash recovery). Returns the
// checkpoint LSN; kCorrupt naming `path` when its header or first block is not
// a backup log's.
Result<uint64_t> MakeMysqlRecoveryLog(const std::string& path);

class MysqlLogCopier {
 public:
  struct Options {
    std::string redo_dir;                         // innodb_log_group_home_dir/#innodb_redo
    std::chrono::milliseconds poll_interval{20};  // longest sleep at the tail of an idle log
    size_t max_read = size_t{1} << 20;            // largest single read, a multiple of 512
    std::function<void()> on_failure;             // from the copier thread, when it fails
  };
  // Appends n bytes (whole blocks) to the backup log. Copier thread only, and Finish.
  using Writer = std::function<Status(const uint8_t* data, size_t n)>;

  // Lists the redo files and finds the newest checkpoint. kUnsupported for
  // an encrypted redo log (innodb_redo_log_encrypt) or one the server was
  // told not to write (ALTER INSTANCE DISABLE INNODB REDO_LOG).
  static Result<std::unique_ptr<MysqlLogCopier>> Open(const Options& options);
  ~MysqlLogCopier();
  MysqlLogCopier(const MysqlLogCopier&) = delete;
  MysqlLogCopier& operator=(const MysqlLogCopier&) = delete;

  uint64_t checkpoint_lsn() const { return checkpoint_lsn_; }
  // The live file that held the checkpoint, as found at Open (for its header).
  const mysql_redo::FileHeader& checkpoint_file_header() const { return checkpoint_header_; }
  // The LSN of the first block the log copies (the checkpoint's block).
  uint64_t start_lsn() const { return checkpoint_lsn_ - checkpoint_lsn_ % mysql_redo::kBlockSize; }

  Status Start(Writer writer);
  // Up to where whole blocks have been read and taken (a block boundary).
  uint64_t copied_lsn() const { return copied_lsn_.load(std::memory_order_acquire); }
  // From now on the blocks taken are kept for Finish instead of written (at
  // most kMaxHeld bytes: the time between Hold and Finish is one query).
  void Hold();
  static constexpr size_t kMaxHeld = size_t{256} << 20;
  // Waits until every block below `lsn` is final and copied, then stops the
  // thread and appends the block holding `lsn` cut there (if lsn is inside
  // a block). kTimeout when the copy does not advance for `stall_timeout`.
  Status Finish(uint64_t lsn, std::chrono::milliseconds stall_timeout);
  // Stops and joins the thread; its error, if any. Idempotent.
  Status Stop();

 private:
  MysqlLogCopier(Options o, uint64_t checkpoint_lsn, mysql_redo::FileHeader header);
  void Run();
  Status CopyLoop();
  // Reads what follows copied_lsn(); the blocks taken, how many (0: none final yet).
  Result<size_t> CopyOnce(std::vector<uint8_t>& buf);
  // The listed file that holds `lsn`, listing the directory again when none does.
  Result<const mysql_redo::RedoFile*> FileFor(uint64_t lsn);
  // `n` blocks read at `lsn` into `buf` (from whichever file holds them now).
  Status ReadBlocks(uint64_t lsn, uint8_t* buf, size_t n);

  const Options o_;
  const uint64_t checkpoint_lsn_;
  const mysql_redo::FileHeader checkpoint_header_;
  std::vector<mysql_redo::RedoFile> files_;  // copier thread (and Finish after it stopped)
  Writer writer_;
  std::atomic<bool> hold_{false};
  std::vector<uint8_t> held_;  // copier thread (then Finish): the blocks taken since Hold
  std::atomic<uint64_t> copied_lsn_;
  std::mutex mu_;
  std::condition_variable cv_;  // copied_lsn_ moved, the thread ended, or stop_ was set
  bool stop_ = false;           // under mu_
  bool ended_ = false;          // under mu_
  Status error_;                // under mu_: the thread's failure
  std::thread thread_;
};

}  // namespace xbak::innodb
