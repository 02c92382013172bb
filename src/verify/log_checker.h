// --verify's check of a backup's ib_logfile0, pushed to it in order: header
// and checkpoint, then every mini-transaction from the checkpoint to the end
// of the log, after which only zero bytes may follow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "problems.h"
#include "xbak/innodb/redo_log.h"

namespace xbak::verify {

// Walks the backup's ib_logfile0: header, checkpoint, then every mtr from the
// checkpoint to the end of the file.
class LogChecker {
 public:
  LogChecker(FileProblems& p, bool walk) : p_(p), walk_(walk) {}

  void Feed(const uint8_t* d, size_t n) {
    while (n > 0 && state_ != kBroken) {
      if (state_ == kHead) {
        size_t take = std::min(n, innodb::kLogStartOffset - buf_.size());
        buf_.insert(buf_.end(), d, d + take);
        d += take;
        n -= take;
        offset_ += take;
        if (buf_.size() == innodb::kLogStartOffset) Head();
        continue;
      }
      if (state_ == kSkip) {  // up to the checkpoint's LSN
        size_t take = static_cast<size_t>(std::min<uint64_t>(n, skip_));
        d += take;
        n -= take;
        skip_ -= take;
        offset_ += take;
        if (skip_ == 0) state_ = kWalk;
        continue;
      }
      if (state_ == kWalk) {
        buf_.insert(buf_.end(), d, d + n);
        offset_ += n;
        n = 0;
        Walk();
        continue;
      }
      if (state_ == kEnded) {  // only zero bytes may follow the last mtr
        const uint8_t* nz = std::find_if(d, d + n, [](uint8_t b) { return b != 0; });
        if (nz != d + n) {
          uint64_t at = offset_ + static_cast<uint64_t>(nz - d);
          p_.Add("mtr chain broken at byte offset " + std::to_string(end_offset_) + " (LSN " +
                 std::to_string(lsn_) + "): " + why_ + "; non-zero bytes follow at byte offset " +
                 std::to_string(at) + " (a damaged or truncated log: prepare would stop here)");
          state_ = kBroken;
        }
        offset_ += n;
        n = 0;
      }
    }
  }

  void Finish() {
    if (state_ == kHead) {
      p_.Add("only " + std::to_string(buf_.size()) + " bytes: shorter than the 12288-byte log header");
      return;
    }
    if (state_ == kSkip) {
      p_.Add("the file ends before the checkpoint LSN " + std::to_string(ckpt_.checkpoint_lsn));
      return;
    }
    if (state_ == kWalk && pos_ < buf_.size()) {
      p_.Add("ends inside a mini-transaction at byte offset " + std::to_string(end_offset_) + " (LSN " +
             std::to_string(lsn_) + "): truncated");
    }
  }

  bool header_ok() const { return header_ok_; }
  uint64_t first_lsn() const { return header_.first_lsn; }
  uint64_t checkpoint_lsn() const { return ckpt_.checkpoint_lsn; }
  bool walked() const { return walk_ && header_ok_ && state_ != kBroken; }
  uint64_t end_lsn() const { return lsn_; }
  uint64_t mtrs() const { return mtrs_; }

 private:
  enum State { kHead, kSkip, kWalk, kEnded, kBroken };

  void Head() {
    auto h = innodb::ParseLogHeader(buf_.data(), buf_.size());
    if (!h.ok()) {
      p_.Add("bad log header: " + h.status().message());
      state_ = kBroken;
      return;
    }
    header_ = h.value();
    auto c = innodb::PickCheckpoint(buf_.data(), buf_.size(), header_.first_lsn);
    if (!c.ok()) {
      p_.Add("no valid checkpoint: " + c.status().message());
      state_ = kBroken;
      return;
    }
    ckpt_ = c.value();
    header_ok_ = true;
    buf_.clear();
    if (!walk_) {
      state_ = kBroken;  // nothing more to check (a prepared backup's log)
      return;
    }
    // The backup log is linear: the checkpoint's LSN is at 12288 + (lsn - first_lsn).
    skip_ = ckpt_.checkpoint_lsn - header_.first_lsn;
    lsn_ = ckpt_.checkpoint_lsn;
    end_offset_ = offset_ + skip_;
    state_ = skip_ == 0 ? kWalk : kSkip;
  }

  void Walk() {
    for (;;) {
      innodb::MtrInfo info;
      std::string why;
      innodb::MtrStatus s = innodb::ParseMtr(buf_.data() + pos_, buf_.size() - pos_, true, &info, &why,
                                             SIZE_MAX, header_.encrypted);
      if (s == innodb::MtrStatus::kComplete) {
        pos_ += info.length;
        lsn_ += info.length;
        end_offset_ += info.length;
        mtrs_++;
        continue;
      }
      if (s == innodb::MtrStatus::kNeedMore) break;
      // The end of the chain: fine if nothing but zeros follows.
      why_ = why;
      state_ = kEnded;
      std::vector<uint8_t> rest(buf_.begin() + static_cast<std::ptrdiff_t>(pos_), buf_.end());
      uint64_t rest_offset = end_offset_;
      buf_.clear();
      pos_ = 0;
      offset_ = rest_offset;
      if (s == innodb::MtrStatus::kCorrupt) {
        p_.Add("corrupt mini-transaction at byte offset " + std::to_string(end_offset_) + " (LSN " +
               std::to_string(lsn_) + "): " + why);
        state_ = kBroken;
        return;
      }
      Feed(rest.data(), rest.size());
      return;
    }
    // Keep only the unparsed tail.
    if (pos_ > 0) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
      pos_ = 0;
    }
  }

  FileProblems& p_;
  const bool walk_;
  State state_ = kHead;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
  uint64_t offset_ = 0;      // file offset of the next byte fed (of buf_'s end while walking)
  uint64_t end_offset_ = 0;  // file offset of the next mtr
  uint64_t skip_ = 0;
  innodb::LogHeader header_;
  innodb::Checkpoint ckpt_;
  bool header_ok_ = false;
  uint64_t lsn_ = 0, mtrs_ = 0;
  std::string why_;
};

}  // namespace xbak::verify
