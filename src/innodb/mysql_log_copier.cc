#include "xbak/innodb/mysql_log_copier.h"

#include <algorithm>
#include <cstring>

#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::innodb {

namespace mr = mysql_redo;

namespace {

constexpr uint64_t kBlock = mr::kBlockSize;

std::string Lsn(uint64_t lsn) { return "LSN " + std::to_string(lsn); }

}  // namespace

std::vector<uint8_t> MakeMysqlBackupLogHeader(const mr::FileHeader& live, uint64_t checkpoint_lsn,
                                              const std::string& creator) {
  mr::FileHeader h = live;
  h.creator = creator;
  h.flags = 0;
  std::vector<uint8_t> out(mr::kFileHeaderSize, 0);
  const auto hb = mr::EncodeFileHeader(h);
  const auto cb = mr::EncodeCheckpoint(checkpoint_lsn);
  std::copy(hb.begin(), hb.end(), out.begin());
  std::copy(cb.begin(), cb.end(), out.begin() + mr::kCheckpoint1);
  std::copy(cb.begin(), cb.end(), out.begin() + mr::kCheckpoint2);
  return out;
}

Result<uint64_t> MakeMysqlRecoveryLog(const std::string& path) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  std::vector<uint8_t> head(mr::kFileHeaderSize + kBlock);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(head.data(), head.size(), 0));
  if (n < head.size() || size % kBlock != 0) {
    return Error(ErrorCode::kCorrupt,
                 path + ": " + std::to_string(size) +
                     " bytes, not a backup's redo log (a 2048-byte header and 512-byte blocks)");
  }
  XBAK_ASSIGN_OR_RETURN(mr::FileHeader h, mr::ParseFileHeader(head.data(), path));
  const auto c1 = mr::ParseCheckpoint(head.data() + mr::kCheckpoint1);
  const auto c2 = mr::ParseCheckpoint(head.data() + mr::kCheckpoint2);
  if (!c1 && !c2) return Error(ErrorCode::kCorrupt, path + ": no valid checkpoint in its header");
  const uint64_t cp = std::max(c1.value_or(0), c2.value_or(0));
  const uint64_t first = cp - cp % kBlock;
  if (mr::CheckBlock(head.data() + mr::kFileHeaderSize, first) != mr::BlockState::kOk) {
    return Error(ErrorCode::kCorrupt,
                 path + ": its first block is not the block of its checkpoint (" + Lsn(cp) + ")");
  }
  h.start_lsn = first;
  h.flags = 0;
  const std::vector<uint8_t> header = MakeMysqlBackupLogHeader(h, cp, h.creator);
  XBAK_RETURN_IF_ERROR(f.PWrite(header.data(), header.size(), 0));
  constexpr uint64_t kUnit = 64 << 10, kMin = 1 << 20;
  const uint64_t want = std::max(kMin, (size + kUnit - 1) / kUnit * kUnit);
  if (want > size) XBAK_RETURN_IF_ERROR(f.Truncate(want));
  XBAK_RETURN_IF_ERROR(f.Sync());
  XBAK_RETURN_IF_ERROR(f.Close());
  return cp;
}

MysqlLogCopier::MysqlLogCopier(Options o, uint64_t checkpoint_lsn, mr::FileHeader header)
    : o_(std::move(o)),
      checkpoint_lsn_(checkpoint_lsn),
      checkpoint_header_(std::move(header)),
      copied_lsn_(checkpoint_lsn - checkpoint_lsn % kBlock) {}

Result<std::unique_ptr<MysqlLogCopier>> MysqlLogCopier::Open(const Options& options) {
  if (options.max_read < kBlock || options.max_read % kBlock != 0) {
    return Error(ErrorCode::kInvalidArgument, "MysqlLogCopier: max_read must be a multiple of 512");
  }
  XBAK_ASSIGN_OR_RETURN(auto files, mr::ListRedoFiles(options.redo_dir));
  XBAK_ASSIGN_OR_RETURN(uint64_t cp, mr::FindCheckpoint(files));
  const mr::RedoFile* holder = nullptr;
  for (const auto& f : files) {
    if (f.header.redo_disabled()) {
      return Error(ErrorCode::kUnsupported,
                   f.path +
                       ": the server's redo log is disabled (ALTER INSTANCE DISABLE "
                       "INNODB REDO_LOG); a hot backup needs it: ALTER INSTANCE ENABLE "
                       "INNODB REDO_LOG first");
    }
    if (cp >= f.header.start_lsn && cp < f.end_lsn()) holder = &f;
  }
  std::unique_ptr<MysqlLogCopier> c(new MysqlLogCopier(options, cp, holder->header));
  c->files_ = std::move(files);
  // The checkpoint's own block: written before the checkpoint was, so it must be there.
  std::vector<uint8_t> b(kBlock);
  XBAK_RETURN_IF_ERROR(c->ReadBlocks(c->start_lsn(), b.data(), 1));
  if (mr::CheckBlock(b.data(), c->start_lsn()) != mr::BlockState::kOk) {
    return Error(ErrorCode::kCorrupt,
                 holder->path + ": the block of the checkpoint (" + Lsn(cp) + ") is not a valid redo block");
  }
  if (mr::ParseBlockHeader(b.data()).encrypted) {
    return Error(ErrorCode::kUnsupported, holder->path +
                                              ": the redo log is encrypted (innodb_redo_log_encrypt=ON); "
                                              "xbak does not read MySQL's keyring yet");
  }
  return c;
}

MysqlLogCopier::~MysqlLogCopier() { (void)Stop(); }

Status MysqlLogCopier::Start(Writer writer) {
  if (thread_.joinable() || writer_) return Error(ErrorCode::kInternal, "MysqlLogCopier started twice");
  writer_ = std::move(writer);
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void MysqlLogCopier::Hold() { hold_.store(true, std::memory_order_seq_cst); }

void MysqlLogCopier::Run() {
  Status st = CopyLoop();
  bool failed = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    ended_ = true;
    failed = !st.ok() && !stop_;  // an error met while being stopped is not the backup's
    if (failed) error_ = st;
  }
  cv_.notify_all();
  if (failed && o_.on_failure) o_.on_failure();
}

Status MysqlLogCopier::CopyLoop() {
  std::vector<uint8_t> buf(o_.max_read);
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (stop_) return Status::Ok();
    }
    XBAK_ASSIGN_OR_RETURN(size_t taken, CopyOnce(buf));
    if (taken > 0) {
      { std::lock_guard<std::mutex> l(mu_); }  // a waiter between its check and its wait sees this
      cv_.notify_all();
      continue;  // more may be there now
    }
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, o_.poll_interval, [&] { return stop_; });
  }
}

Result<size_t> MysqlLogCopier::CopyOnce(std::vector<uint8_t>& buf) {
  const uint64_t lsn = copied_lsn();
  XBAK_ASSIGN_OR_RETURN(const mr::RedoFile* found, FileFor(lsn));
  if (found == nullptr) return size_t{0};  // the next file is not there yet
  const std::string path = found->path;    // by value: ReadBlocks may list the files again
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(buf.size() / kBlock, (found->end_lsn() - lsn) / kBlock));
  XBAK_RETURN_IF_ERROR(ReadBlocks(lsn, buf.data(), n));
  size_t taken = 0;
  for (; taken < n; taken++) {
    const uint8_t* b = buf.data() + taken * kBlock;
    const uint64_t at = lsn + taken * kBlock;
    const mr::BlockState st = mr::CheckBlock(b, at);
    if (st == mr::BlockState::kNewer) {
      return Error(ErrorCode::kIo, "the redo log block of " + Lsn(at) + " in " + path +
                                       " now holds a later one: the server reused the file before it was "
                                       "copied (the copy fell behind the server's redo writes)");
    }
    if (st != mr::BlockState::kOk || mr::ParseBlockHeader(b).data_len != kBlock) break;  // the log's tail
  }
  if (taken == 0) return size_t{0};
  const size_t bytes = taken * kBlock;
  if (hold_.load(std::memory_order_seq_cst)) {
    if (held_.size() + bytes > kMaxHeld) {
      return Error(ErrorCode::kIo, "more than " + std::to_string(kMaxHeld >> 20) +
                                       " MiB of redo log written while the consistent point was read");
    }
    held_.insert(held_.end(), buf.data(), buf.data() + bytes);
  } else {
    XBAK_RETURN_IF_ERROR(writer_(buf.data(), bytes));
  }
  copied_lsn_.store(lsn + bytes, std::memory_order_release);
  return taken;
}

Result<const mr::RedoFile*> MysqlLogCopier::FileFor(uint64_t lsn) {
  auto find = [&]() -> const mr::RedoFile* {
    for (const auto& f : files_) {
      if (lsn >= f.header.start_lsn && lsn < f.end_lsn()) return &f;
    }
    return nullptr;
  };
  if (const mr::RedoFile* f = find()) return f;
  XBAK_ASSIGN_OR_RETURN(files_, mr::ListRedoFiles(o_.redo_dir));
  if (const mr::RedoFile* f = find()) return f;
  if (lsn < files_.front().header.start_lsn) {
    return Error(ErrorCode::kIo, "the redo log of " + Lsn(lsn) +
                                     " is gone: the server removed the file that held "
                                     "it before it was copied (the oldest now starts at " +
                                     Lsn(files_.front().header.start_lsn) + ")");
  }
  return nullptr;  // past the last file: written next
}

Status MysqlLogCopier::ReadBlocks(uint64_t lsn, uint8_t* buf, size_t n) {
  for (int attempt = 0;; attempt++) {
    XBAK_ASSIGN_OR_RETURN(const mr::RedoFile* f, FileFor(lsn));
    if (f == nullptr || lsn + n * kBlock > f->end_lsn()) {
      return Error(ErrorCode::kInternal, "redo blocks of " + Lsn(lsn) + " are not in one listed file");
    }
    auto file = util::File::OpenRead(f->path);
    if (!file.ok() && file.status().code() == ErrorCode::kNotFound && attempt == 0) {
      files_.clear();  // renamed since it was listed: list again
      continue;
    }
    XBAK_RETURN_IF_ERROR(file.status());
    XBAK_ASSIGN_OR_RETURN(size_t got,
                          file->PRead(buf, n * kBlock, mr::kFileHeaderSize + (lsn - f->header.start_lsn)));
    if (got != n * kBlock) {
      return Error(ErrorCode::kCorrupt, f->path + ": shorter than its header says (read " +
                                            std::to_string(got) + " of " + std::to_string(n * kBlock) +
                                            " bytes at " + Lsn(lsn) + ")");
    }
    return Status::Ok();
  }
}

Status MysqlLogCopier::Finish(uint64_t lsn, std::chrono::milliseconds stall_timeout) {
  const uint64_t block_lsn = lsn - lsn % kBlock;
  if (lsn < checkpoint_lsn_) {
    return Error(ErrorCode::kInvalidArgument,
                 "the backup's end " + Lsn(lsn) + " is before its checkpoint " + Lsn(checkpoint_lsn_));
  }
  {
    std::unique_lock<std::mutex> l(mu_);
    uint64_t seen = copied_lsn();
    while (copied_lsn() < block_lsn && !ended_) {
      if (!cv_.wait_for(l, stall_timeout, [&] { return copied_lsn() != seen || ended_; })) {
        return Error(ErrorCode::kTimeout, "the redo log copy stopped at " + Lsn(copied_lsn()) +
                                              ", short of " + Lsn(lsn) + ", for " +
                                              std::to_string(stall_timeout.count()) + " ms");
      }
      seen = copied_lsn();
    }
  }
  XBAK_RETURN_IF_ERROR(Stop());
  if (copied_lsn() < block_lsn) {
    return Error(ErrorCode::kInternal,
                 "the redo log copy ended at " + Lsn(copied_lsn()) + ", short of " + Lsn(lsn));
  }
  // Blocks held since Hold: those below lsn's block, then that block cut at lsn.
  const uint64_t held_from = copied_lsn() - held_.size();
  if (block_lsn < held_from) {
    return Error(ErrorCode::kInternal, "redo log past " + Lsn(lsn) +
                                           " was written before the consistent "
                                           "point was read (Hold was not called first)");
  }
  const size_t keep = static_cast<size_t>(block_lsn - held_from);
  if (keep > 0) XBAK_RETURN_IF_ERROR(writer_(held_.data(), keep));
  if (lsn == block_lsn) return Status::Ok();
  const size_t cut = static_cast<size_t>(lsn - block_lsn);
  // The log ends where this block's records would start: the blocks before it are the whole log.
  if (cut <= mr::kBlockHeaderSize) return Status::Ok();
  std::vector<uint8_t> last(kBlock);
  mr::BlockHeader h;
  // The server may not have written its log buffer that far yet: read again until it has.
  for (auto since = std::chrono::steady_clock::now();;) {
    if (held_.size() >= keep + kBlock) {
      std::memcpy(last.data(), held_.data() + keep, kBlock);
    } else {
      XBAK_RETURN_IF_ERROR(ReadBlocks(block_lsn, last.data(), 1));
    }
    h = mr::ParseBlockHeader(last.data());
    const mr::BlockState st = mr::CheckBlock(last.data(), block_lsn);
    if (st == mr::BlockState::kOk && h.data_len >= cut) break;
    if (st == mr::BlockState::kNewer || std::chrono::steady_clock::now() - since > stall_timeout) {
      return Error(ErrorCode::kTimeout, "the redo log block holding " + Lsn(lsn) +
                                            " was not written that far within " +
                                            std::to_string(stall_timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(o_.poll_interval);
  }
  // Cut at lsn: nothing after it for recovery to apply. An mtr group that
  // would start past the cut does not start in this block any more.
  std::memset(last.data() + cut, 0, kBlock - mr::kBlockTrailerSize - cut);
  const uint32_t first = h.first_rec_group > cut ? 0 : h.first_rec_group;
  util::StoreBE32(last.data() + 4, (static_cast<uint32_t>(cut) << 16) | first);
  mr::StampBlock(last.data(), block_lsn);
  return writer_(last.data(), kBlock);
}

Status MysqlLogCopier::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

}  // namespace xbak::innodb
