#include "xbak/prepare/log_scanner.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "xbak/innodb/log_crypt.h"
#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {
constexpr size_t kChunkSize = 4u << 20;
}  // namespace

Result<std::unique_ptr<LogScanner>> LogScanner::Open(const std::string& path, const PrepareCrypt* crypt) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  if (size < innodb::kLogStartOffset) {
    return Error(ErrorCode::kCorrupt, path + ": shorter than the 12 KiB log header");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd(), 0);
  if (map == MAP_FAILED) return ErrnoError("mmap", path, errno);
  std::unique_ptr<LogScanner> s(new LogScanner(path, static_cast<const uint8_t*>(map), size));
  (void)::madvise(map, size, MADV_SEQUENTIAL);
  auto h = innodb::ParseLogHeader(s->base_, innodb::kLogStartOffset);
  if (!h.ok()) return h.status().With(path);
  if (h->encrypted) {
    if (crypt == nullptr) {
      return Error(ErrorCode::kUnsupported,
                   path +
                       ": the redo log is encrypted (innodb_encrypt_log=ON) and backup-my.cnf names no "
                       "file_key_management key file: give --file-key-management-filename (only that key "
                       "management plugin is supported); nothing was written");
    }
    auto key = crypt->LogKey(*h);
    if (!key.ok()) return key.status().With(path + ": the redo log is encrypted (innodb_encrypt_log=ON)");
    s->key_ = *key;
    s->mode_ = crypt->mode();
  } else if (h->format != innodb::kRedoFormat10_8) {
    return Error(ErrorCode::kUnsupported, path + ": redo log format " + std::to_string(h->format) +
                                              " is not the MariaDB 10.8+ format xbak applies");
  }
  auto c = innodb::PickCheckpoint(s->base_, innodb::kLogStartOffset, h->first_lsn);
  if (!c.ok()) return c.status().With(path);
  s->header_ = h.value();
  s->checkpoint_ = c.value();
  if (s->checkpoint_.checkpoint_lsn - s->header_.first_lsn > size - innodb::kLogStartOffset) {
    return Error(ErrorCode::kCorrupt, path + ": the checkpoint LSN lies beyond the end of the file");
  }
  return s;
}

LogScanner::LogScanner(std::string path, const uint8_t* base, uint64_t size)
    : path_(std::move(path)), base_(base), size_(size) {}

LogScanner::~LogScanner() { ::munmap(const_cast<uint8_t*>(base_), size_); }

uint8_t* LogScanner::PlainSpace(size_t n, uint64_t end_lsn) {
  if (plain_.empty() || plain_.back().size - plain_.back().used < n) {
    Chunk c;
    c.size = std::max(kChunkSize, n);
    c.buf.reset(new uint8_t[c.size]);  // not zeroed: every byte handed out is written first
    plain_.push_back(std::move(c));
  }
  Chunk& c = plain_.back();
  uint8_t* p = c.buf.get() + c.used;
  c.used += n;
  c.end_lsn = end_lsn;
  return p;
}

Status LogScanner::Scan(const std::function<Status(const MtrView&)>& fn, uint64_t* end_lsn, std::string* why,
                        uint64_t stop_lsn) {
  uint64_t lsn = checkpoint_.checkpoint_lsn;
  const bool encrypted = key_.has_value();
  innodb::MtrInfo info;
  for (;;) {
    if (lsn >= stop_lsn) {
      *end_lsn = lsn;
      *why = "stopped at " + innodb::FormatLsn(stop_lsn);
      ReleaseMapping(size_);
      return Status::Ok();
    }
    const uint64_t off = Offset(lsn);
    std::string reason;
    innodb::MtrStatus st =
        innodb::ParseMtr(base_ + off, size_ - off, true, &info, &reason, SIZE_MAX, encrypted);
    if (st == innodb::MtrStatus::kComplete) {
      const uint8_t* records = base_ + off;
      if (encrypted) {
        uint8_t* plain = PlainSpace(info.records_length, lsn + info.length);
        Status d = innodb::DecryptMtr(records, info.records_length, *key_, mode_, plain);
        if (d.ok() && innodb::ParseFileRecords(plain, info.records_length, &info, &reason) !=
                          innodb::MtrStatus::kComplete) {
          d = Error(ErrorCode::kCorrupt, reason);
        }
        if (!d.ok()) {
          *end_lsn = lsn;
          return d.With(path_ + ": the encrypted mini-transaction at " + innodb::FormatLsn(lsn) +
                        " (wrong key file or file_key_management_encryption_algorithm?)");
        }
        records = plain;
        // The ciphertext is not needed again in this pass.
        if (off - released_ >= kChunkSize * 4) ReleaseMapping(off);
      }
      MtrView v{records, info.records_length, lsn, lsn + info.length, &info};
      XBAK_RETURN_IF_ERROR(fn(v));
      lsn += info.length;
      continue;
    }
    *end_lsn = lsn;
    if (st == innodb::MtrStatus::kCorrupt) {
      return Error(ErrorCode::kCorrupt, path_ + ": corrupt redo log at " + innodb::FormatLsn(lsn) +
                                            " (byte " + std::to_string(off) + "): " + reason);
    }
    if (st == innodb::MtrStatus::kNeedMore) {
      *why = off == size_ ? "end of file" : "the file ends inside a mini-transaction";
    } else {
      *why = reason;
    }
    // Only the mapping (read again from the page cache if needed): the
    // caller still applies its last batch from the decrypted chunks.
    ReleaseMapping(size_);
    return Status::Ok();
  }
}

void LogScanner::ReleaseMapping(uint64_t upto) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min(upto, size_) / page * page;
  if (end > released_) {
    (void)::madvise(const_cast<uint8_t*>(base_) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }
}

void LogScanner::Release(uint64_t lsn) {
  const uint64_t upto = lsn == UINT64_MAX ? size_ : Offset(lsn);
  // In steps of a MiB at least: callers may release after every mtr.
  if (lsn == UINT64_MAX || upto >= released_ + (1u << 20)) ReleaseMapping(upto);
  while (!plain_.empty() && plain_.front().end_lsn <= lsn) plain_.pop_front();
}

void LogScanner::Rewind() {
  released_ = 0;
  plain_.clear();
}

}  // namespace xbak::prepare
