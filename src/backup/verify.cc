#include "xbak/backup/verify.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "xbak/backup/layout.h"
#include "xbak/backup/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/sink/compress.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/options_file.h"
#include "xbak/util/parallel.h"

namespace xbak {
namespace {

constexpr size_t kReadBytes = size_t{4} << 20;  // one read per 4 MiB: few syscalls, bounded memory

// ---- Problems ----------------------------------------------------------------

class Reporter {
 public:
  explicit Reporter(const VerifyOptions& o) : o_(o) {}
  void Add(std::string line) {
    std::lock_guard<std::mutex> l(mu_);
    if (o_.on_problem) o_.on_problem(line);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(lines_);
  }
  // Problems not listed line by line (beyond a file's limit), counted only.
  std::atomic<uint64_t> unlisted{0};

 private:
  const VerifyOptions& o_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// The problems of one file: the first `max` get a line each, the rest one
// line with their count (a backup with a million bad pages must not print a
// million lines).
class FileProblems {
 public:
  FileProblems(Reporter& r, std::string file, size_t max) : r_(r), file_(std::move(file)), max_(max) {}
  ~FileProblems() {
    if (suppressed_ > 0) {
      r_.Add(file_ + ": " + std::to_string(suppressed_) + " more problem(s) like the above not listed");
      r_.unlisted += suppressed_ - 1;  // the summary line above counts as one
    }
  }
  void Add(const std::string& what) {
    count_++;
    if (count_ <= max_) {
      r_.Add(file_ + ": " + what);
    } else {
      suppressed_++;
    }
  }
  const std::string& file() const { return file_; }
  uint64_t count() const { return count_; }

 private:
  Reporter& r_;
  std::string file_;
  size_t max_;
  uint64_t count_ = 0, suppressed_ = 0;
};

// ---- Reading files (decompressing on the fly) ----------------------------------

using Consumer = std::function<void(const uint8_t* data, size_t n)>;

// Pushes the (decompressed) content of `path` to `consume` in pieces. Errors
// (I/O, corrupt or truncated compressed data) are returned; what was consumed
// before them stays consumed.
Status StreamFile(const std::string& path, std::optional<CompressOptions::Algo> algo, const Consumer& consume,
                  uint64_t* content_bytes) {
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
  ::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<Decompressor> dec;
  if (algo) {
    XBAK_ASSIGN_OR_RETURN(dec, Decompressor::Create(*algo, path));
  }
  std::vector<uint8_t> buf(kReadBytes);
  uint64_t off = 0;
  *content_bytes = 0;
  const Decompressor::Output out = [&](const uint8_t* d, size_t n) {
    *content_bytes += n;
    consume(d, n);
    return Status::Ok();
  };
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buf.data(), buf.size(), off));
    if (n == 0) break;
    if (dec) {
      XBAK_RETURN_IF_ERROR(dec->Feed(buf.data(), n, out));
    } else {
      XBAK_RETURN_IF_ERROR(out(buf.data(), n));
    }
    ::posix_fadvise(f.fd(), static_cast<off_t>(off), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    off += n;
    if (n < buf.size()) break;
  }
  if (dec) XBAK_RETURN_IF_ERROR(dec->Finish());
  return Status::Ok();
}

// False for a page whose space id field holds something else: a full_crc32
// PAGE_COMPRESSED page has its compressed bytes there (bit 15 of its type).
// (An encrypted full_crc32 page has ciphertext there: PageCheck::encrypted.)
bool HasSpaceId(const uint8_t* page) {
  return !(LoadBE16(page + innodb::kFilPageType) & innodb::kPageTypeFcrc32CompressedMarker);
}

// Gathers pushed bytes into fixed-size units (pages, delta blocks) and hands
// each whole unit to `unit`, without copying when a unit lies whole in the
// input. `size` may change between units (set_size).
class Chunker {
 public:
  explicit Chunker(size_t size) : size_(size) {}
  void set_size(size_t s) { size_ = s; }
  template <typename F>
  void Feed(const uint8_t* d, size_t n, F&& unit) {
    while (n > 0) {
      if (pending_.empty() && n >= size_) {
        size_t s = size_;
        unit(d);
        d += s;
        n -= s;
        continue;
      }
      size_t take = std::min(n, size_ - pending_.size());
      pending_.insert(pending_.end(), d, d + take);
      d += take;
      n -= take;
      if (pending_.size() == size_) {
        std::vector<uint8_t> u;
        u.swap(pending_);
        unit(u.data());
      }
    }
  }
  size_t leftover() const { return pending_.size(); }
  const std::vector<uint8_t>& pending() const { return pending_; }

 private:
  size_t size_;
  std::vector<uint8_t> pending_;
};

// ---- Pages -------------------------------------------------------------------

uint32_t PageSsize(uint32_t size) {
  uint32_t ssize = 0;
  for (uint32_t s = size >> 9; s > 1; s >>= 1) ssize++;  // 16k -> 5, 1k -> 1
  return ssize;
}

// Flags for the pages of a delta without page 0 (its .meta gives the page
// size): full_crc32 or, failing that, the older crc32 layout
// (ROW_FORMAT=COMPRESSED when phys < logical).
std::vector<innodb::SpaceFlags> GuessFlags(uint32_t logical, uint32_t phys) {
  std::vector<innodb::SpaceFlags> out;
  if (phys == logical) {
    auto full = innodb::DecodeSpaceFlags(0x10 | PageSsize(logical));
    if (full.ok()) out.push_back(full.value());
  }
  uint32_t old = 1 | (1u << 5) | ((logical == 16384 ? 0 : PageSsize(logical)) << 6);
  if (phys != logical) old |= PageSsize(phys) << 1;
  auto o = innodb::DecodeSpaceFlags(old);
  if (o.ok()) out.push_back(o.value());
  return out;
}

innodb::PageCheck CheckWithAny(const uint8_t* page, const std::vector<innodb::SpaceFlags>& candidates,
                               uint32_t page_no) {
  innodb::PageCheck first;
  first.detail = "no valid page format for this page size";
  for (size_t i = 0; i < candidates.size(); i++) {
    innodb::PageCheck c = innodb::CheckPage(page, candidates[i], page_no);
    if (c.verdict != innodb::PageVerdict::kCorrupt) return c;
    if (i == 0) first = c;
  }
  return first;
}

std::string PageWhere(uint32_t page_no, uint64_t offset) {
  return "page " + std::to_string(page_no) + " (byte offset " + std::to_string(offset) + ")";
}

// Checks the pages of one tablespace file pushed to it in order.
class PageChecker {
 public:
  struct Options {
    uint32_t logical = 16384;
    bool is_system = false;                   // space 0: skip the doublewrite area
    uint32_t first_page_no = 0;               // ibdata2...: continues ibdata1
    std::optional<innodb::SpaceFlags> flags;  // known (ibdata2...): no page 0 in this file
    uint32_t space_id = 0;                    // with flags: the space id pages must carry
  };
  PageChecker(FileProblems& p, Options o) : p_(p), o_(o), chunker_(o.logical) {
    if (o_.flags) {
      candidates_ = {*o_.flags};
      phys_ = o_.flags->physical_size;
      chunker_.set_size(phys_);
      space_id_ = o_.space_id;
      started_ = true;
    }
  }

  void Feed(const uint8_t* d, size_t n) {
    if (!started_) {
      // Page 0 decides the page size: gather one logical page (or the file).
      size_t take = std::min(n, size_t{o_.logical} - head_.size());
      head_.insert(head_.end(), d, d + take);
      d += take;
      n -= take;
      if (head_.size() < o_.logical) return;
      Start();
    }
    chunker_.Feed(d, n, [&](const uint8_t* page) { Page(page); });
  }

  void Finish() {
    if (!started_) {
      if (head_.empty()) {
        p_.Add("empty file (an InnoDB data file has at least one page)");
        return;
      }
      Start();
    }
    if (chunker_.leftover() > 0) {
      p_.Add("size is not a whole number of " + std::to_string(phys_) +
             "-byte pages: " + std::to_string(chunker_.leftover()) + " bytes of a partial page " +
             std::to_string(PageNoAt(pages_)) + " at byte offset " + std::to_string(pages_ * phys_) +
             " (truncated or padded)");
    }
  }

  uint64_t pages() const { return pages_; }
  const std::optional<innodb::SpaceFlags>& flags() const { return header_flags_; }
  uint32_t space_id() const { return space_id_; }

 private:
  uint32_t PageNoAt(uint64_t i) const { return static_cast<uint32_t>(o_.first_page_no + i); }

  void Start() {
    started_ = true;
    phys_ = o_.logical;
    if (innodb::HasPage0(head_.data(), head_.size())) {
      auto hdr = innodb::ParseSpaceHeader(head_.data(), head_.size());
      if (hdr.ok()) {
        header_flags_ = hdr->flags;
        candidates_ = {hdr->flags};
        phys_ = hdr->flags.physical_size;
        space_id_ = hdr->space_id;
        check_space_id_ = true;
        if (hdr->flags.logical_size != o_.logical) {
          p_.Add("page 0: page size " + std::to_string(hdr->flags.logical_size) +
                 " differs from the backup's innodb_page_size " + std::to_string(o_.logical));
        }
      } else {
        p_.Add("page 0: bad tablespace header: " + hdr.status().message());
      }
    }
    // Page 0 not flushed when the file was copied (a table created moments
    // before), or a header we could not read: any format the server writes,
    // ROW_FORMAT=COMPRESSED pages of any KEY_BLOCK_SIZE included.
    unknown_format_ = candidates_.empty();
    chunker_.set_size(phys_);
    std::vector<uint8_t> head;
    head.swap(head_);
    chunker_.Feed(head.data(), head.size(), [&](const uint8_t* page) { Page(page); });
  }

  void Page(const uint8_t* page) {
    uint64_t index = pages_++;
    uint32_t page_no = PageNoAt(index);
    if (o_.is_system && innodb::InDoublewriteArea(0, page_no, o_.logical)) return;
    innodb::PageCheck c = unknown_format_ ? innodb::CheckPageOfUnknownFormat(page, o_.logical, page_no)
                                          : CheckWithAny(page, candidates_, page_no);
    if (c.verdict == innodb::PageVerdict::kCorrupt) {
      p_.Add(PageWhere(page_no, index * phys_) + ": " + c.detail);
      return;
    }
    if (c.verdict == innodb::PageVerdict::kOk && (check_space_id_ || o_.flags) && !c.encrypted &&
        HasSpaceId(page)) {
      uint32_t sid = innodb::PageSpaceId(page);
      // The server accepts 0 (pages written by old versions) besides the
      // file's own id.
      if (sid != space_id_ && sid != 0) {
        p_.Add(PageWhere(page_no, index * phys_) + ": carries space id " + std::to_string(sid) +
               ", the file's is " + std::to_string(space_id_));
      }
    }
  }

  FileProblems& p_;
  const Options o_;
  Chunker chunker_;
  std::vector<uint8_t> head_;
  bool started_ = false;
  uint32_t phys_ = 16384;
  std::vector<innodb::SpaceFlags> candidates_;
  bool unknown_format_ = false;  // no page 0 to read the format from
  std::optional<innodb::SpaceFlags> header_flags_;
  uint32_t space_id_ = 0;
  bool check_space_id_ = false;
  uint64_t pages_ = 0;
};

// ---- Deltas --------------------------------------------------------------------

// Checks a .delta pushed to it in order (delta.h has the format).
class DeltaChecker {
 public:
  // `first_page`: ibdata2.delta... number their pages within the file, whose
  // first page is this page of the system tablespace.
  DeltaChecker(FileProblems& p, const innodb::DeltaMeta& meta, uint32_t logical, uint32_t first_page = 0)
      : p_(p), meta_(meta), logical_(logical), first_page_(first_page), chunker_(meta.page_size) {
    candidates_ = GuessFlags(logical, meta.page_size);
  }

  void Feed(const uint8_t* d, size_t n) {
    if (state_ == kBroken) return;
    if (state_ == kDone) {
      Trailing(n);
      return;
    }
    chunker_.Feed(d, n, [&](const uint8_t* u) { Unit(u); });
  }

  void Finish() {
    if (state_ == kDone) {
      if (chunker_.leftover() > 0) Trailing(chunker_.leftover());
    } else if (state_ == kHeader && chunker_.leftover() == 0 && offset_ == 0) {
      p_.Add("empty .delta (even an unchanged table's delta has one header block)");
    } else if (state_ == kHeader || state_ == kPages) {
      p_.Add("truncated at byte offset " + std::to_string(offset_ + chunker_.leftover()) + ": " +
             (state_ == kPages
                  ? "inside a block (" + std::to_string(nos_.size() - next_) + " page(s) missing)"
                  : std::string("no last (\"XTRA\") block")));
    }
  }

  uint64_t pages() const { return pages_; }

 private:
  enum State { kHeader, kPages, kDone, kBroken };

  void Trailing(size_t n) {
    if (n > 0 && trailing_ == 0) {
      p_.Add("bytes after the last (\"XTRA\") block at byte offset " + std::to_string(offset_));
    }
    trailing_ += n;
  }

  void Unit(const uint8_t* u) {
    uint64_t at = offset_;
    if (state_ == kHeader) {
      Header(u, at);
    } else if (state_ == kPages) {
      Page(u, at);
    } else if (state_ == kDone) {  // more whole units after the last block, in the same input piece
      Trailing(meta_.page_size);
      return;
    }
    if (state_ != kBroken) offset_ += meta_.page_size;
  }

  void Header(const uint8_t* h, uint64_t at) {
    uint32_t magic = LoadBE32(h);
    if (magic != innodb::kDeltaMagicMore && magic != innodb::kDeltaMagicLast) {
      char b[16];
      std::snprintf(b, sizeof b, "0x%08x", magic);
      p_.Add("block at byte offset " + std::to_string(at) + ": not a delta block (magic " + b +
             ", expected \"xtra\" or \"XTRA\"); the rest of the file is not checked");
      state_ = kBroken;
      return;
    }
    last_ = magic == innodb::kDeltaMagicLast;
    nos_.clear();
    next_ = 0;
    const uint32_t slots = meta_.page_size / 4;
    for (uint32_t i = 1; i < slots; i++) {
      uint32_t no = LoadBE32(h + i * 4);
      if (no == innodb::kDeltaListEnd) break;
      if (no > 0x3FFFFFFF || (!nos_.empty() && no <= nos_.back())) {
        p_.Add("block at byte offset " + std::to_string(at) + ": slot " + std::to_string(i) +
               " holds page number " + std::to_string(no) +
               (no > 0x3FFFFFFF ? " (past any sane tablespace size)" : " (not increasing)") +
               "; the rest of the file is not checked");
        state_ = kBroken;
        return;
      }
      nos_.push_back(no);
    }
    state_ = nos_.empty() ? (last_ ? kDone : kHeader) : kPages;
  }

  void Page(const uint8_t* page, uint64_t at) {
    const uint32_t no = nos_[next_++] + first_page_;
    pages_++;
    if (no == 0 && !innodb::IsAllZero(page, meta_.page_size)) {
      // Page 0 of the space: it tells the exact format of the other pages.
      auto hdr = innodb::ParseSpaceHeader(page, meta_.page_size);
      if (hdr.ok()) {
        candidates_ = {hdr->flags};
        if (hdr->space_id != meta_.space_id) {
          p_.Add("page 0 says space id " + std::to_string(hdr->space_id) + ", the .meta says " +
                 std::to_string(meta_.space_id));
        }
      } else {
        p_.Add(PageWhere(0, at) + ": bad tablespace header: " + hdr.status().message());
      }
    }
    if (!(meta_.space_id == 0 && innodb::InDoublewriteArea(0, no, logical_))) {
      innodb::PageCheck c = CheckWithAny(page, candidates_, no);
      if (c.verdict == innodb::PageVerdict::kCorrupt) {
        p_.Add(PageWhere(no, at) + ": " + c.detail);
      } else if (c.verdict == innodb::PageVerdict::kOk && !c.encrypted && HasSpaceId(page)) {
        uint32_t sid = innodb::PageSpaceId(page);
        if (sid != meta_.space_id && sid != 0) {
          p_.Add(PageWhere(no, at) + ": carries space id " + std::to_string(sid) + ", the .meta says " +
                 std::to_string(meta_.space_id));
        }
      }
    }
    if (next_ == nos_.size()) state_ = last_ ? kDone : kHeader;
  }

  FileProblems& p_;
  const innodb::DeltaMeta meta_;
  const uint32_t logical_;
  const uint32_t first_page_;
  Chunker chunker_;
  std::vector<innodb::SpaceFlags> candidates_;
  State state_ = kHeader;
  bool last_ = false;
  std::vector<uint32_t> nos_;
  size_t next_ = 0;
  uint64_t offset_ = 0, pages_ = 0, trailing_ = 0;
};

// ---- The redo log ----------------------------------------------------------------

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

// ---- One backup directory ----------------------------------------------------------

struct FileEntry {
  std::string rel;   // as stored, e.g. "db/t.ibd.zst"
  std::string base;  // without the compression suffix
  std::optional<CompressOptions::Algo> algo;
  uint64_t size = 0;
};

struct BackupDir {
  std::string dir;
  bool has_checkpoints = false;
  Checkpoints cp;
  uint32_t page_size = 16384;
  std::vector<std::string> system_files{"ibdata1"};
  std::vector<uint32_t> system_first_page{0};  // page number of each one's first page
  uint32_t undo_tablespaces = 0;
  bool binlog_promised = false;
  std::map<std::string, FileEntry> files;  // by base name
  std::vector<std::string> stored;         // every stored name (rel), for lookups
  std::set<std::string> stored_set;
  // Results of the jobs, read after they finished.
  std::unique_ptr<LogChecker> log;
  std::unique_ptr<FileProblems> log_problems;
};

bool IsIncremental(const BackupDir& b) { return b.has_checkpoints && b.cp.backup_type == "incremental"; }
bool IsPrepared(const BackupDir& b) {
  return b.has_checkpoints && (b.cp.backup_type == "log-applied" || b.cp.backup_type == "full-prepared");
}

std::string Display(const BackupDir& b, const std::string& rel) { return JoinPath(b.dir, rel); }

void ListTree(const std::string& root, const std::string& rel, BackupDir* b, Reporter& r) {
  std::string path = rel.empty() ? root : JoinPath(root, rel);
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    r.Add(path + ": cannot read the directory: " + std::strerror(errno));
    return;
  }
  std::vector<std::pair<std::string, unsigned char>> entries;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    entries.emplace_back(n, e->d_type);
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end());
  for (auto& [n, type] : entries) {
    std::string child = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::fstatat(AT_FDCWD, JoinPath(root, child).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      r.Add(JoinPath(root, child) + ": cannot stat: " + std::strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      ListTree(root, child, b, r);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      r.Add(JoinPath(root, child) + ": a symbolic link (a backup never holds one; not followed)");
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      r.Add(JoinPath(root, child) + ": not a regular file");
      continue;
    }
    FileEntry f;
    f.rel = child;
    f.base = child;
    f.size = static_cast<uint64_t>(st.st_size);
    if (child.ends_with(".zst")) {
      f.algo = CompressOptions::kZstd;
      f.base = child.substr(0, child.size() - 4);
    } else if (child.ends_with(".lz4")) {
      f.algo = CompressOptions::kLz4;
      f.base = child.substr(0, child.size() - 4);
    }
    b->stored.push_back(child);
    b->stored_set.insert(child);
    if (b->files.count(f.base)) {
      r.Add(JoinPath(root, child) + ": " + f.base +
            " is stored twice (plain and compressed, or as .zst and .lz4)");
      continue;
    }
    b->files[f.base] = std::move(f);
  }
}

// Reads the metadata files of one backup. Missing or bad ones are problems.
void ReadMetadata(BackupDir* b, Reporter& r) {
  std::string cp_path = JoinPath(b->dir, kCheckpointsFile);
  auto text = ReadSmallFile(cp_path);
  if (!text.ok()) {
    r.Add(cp_path + ": missing or unreadable (" + text.status().message() +
          "): the backup is incomplete (it is written last)");
  } else {
    auto c = ParseCheckpoints(text.value(), cp_path);
    if (!c.ok()) {
      r.Add(cp_path + ": " + c.status().message());
    } else {
      b->has_checkpoints = true;
      b->cp = c.value();
      if (b->cp.last_lsn < b->cp.to_lsn) {
        r.Add(cp_path + ": last_lsn " + std::to_string(b->cp.last_lsn) + " is below to_lsn " +
              std::to_string(b->cp.to_lsn));
      }
      if (b->cp.backup_type == "full-backuped" && b->cp.from_lsn != 0) {
        r.Add(cp_path + ": a full backup with from_lsn " + std::to_string(b->cp.from_lsn) + " (must be 0)");
      }
      if (b->cp.to_lsn == 0) r.Add(cp_path + ": to_lsn is 0");
    }
  }
  std::string cnf_path = JoinPath(b->dir, kBackupCnfFile);
  auto cnf_text = ReadSmallFile(cnf_path);
  if (!cnf_text.ok()) {
    r.Add(cnf_path + ": missing or unreadable (" + cnf_text.status().message() + ")");
  } else {
    auto m = ParseOptionText(cnf_text.value(), cnf_path, {"mysqld"});
    if (!m.ok()) {
      r.Add(cnf_path + ": " + m.status().message());
    } else {
      auto get = [&](const char* k) {
        auto it = m->find(k);
        return it == m->end() ? std::string() : it->second.value;
      };
      std::string ps = get("innodb-page-size");
      if (!ps.empty()) {
        unsigned long v = std::strtoul(ps.c_str(), nullptr, 10);
        if (v == 4096 || v == 8192 || v == 16384 || v == 32768 || v == 65536) {
          b->page_size = static_cast<uint32_t>(v);
        } else {
          r.Add(cnf_path + ": innodb_page_size=" + ps + " is not a page size InnoDB has");
        }
      }
      std::string dfp = get("innodb-data-file-path");
      if (!dfp.empty()) {
        auto files = ParseDataFiles(dfp);
        if (files.ok()) {
          b->system_files.clear();
          for (const auto& f : *files) b->system_files.push_back(f.name);
          b->system_first_page = FirstPages(*files, b->page_size);
        } else {
          r.Add(cnf_path + ": innodb_data_file_path: " + files.status().message());
        }
      }
      std::string undo = get("innodb-undo-tablespaces");
      if (!undo.empty() && undo.find_first_not_of("0123456789") == std::string::npos && undo.size() < 4) {
        b->undo_tablespaces = static_cast<uint32_t>(std::stoul(undo));
      }
    }
  }
  std::string info_path = JoinPath(b->dir, kInfoFile);
  auto info = ReadSmallFile(info_path);
  if (!info.ok()) {
    r.Add(info_path + ": missing or unreadable (" + info.status().message() + ")");
  } else {
    size_t p = info->find("\nbinlog_pos = ");
    if (p != std::string::npos) {
      size_t e = info->find('\n', p + 1);
      std::string v = info->substr(p + 14, e == std::string::npos ? std::string::npos : e - p - 14);
      b->binlog_promised = !v.empty();
    }
  }
}

std::string UndoName(uint32_t i) {
  char n[16];
  std::snprintf(n, sizeof n, "undo%03u", i);
  return n;
}

// Files that the metadata says must be there.
void CheckPromised(const BackupDir& b, Reporter& r) {
  auto need = [&](const std::string& base, const std::string& why) {
    if (!b.files.count(base)) r.Add(Display(b, base) + ": missing (promised by " + why + ")");
  };
  need("ib_logfile0", "every backup");
  bool inc = IsIncremental(b);
  for (const auto& f : b.system_files) {
    if (inc) {
      need(f + ".delta", "innodb_data_file_path in backup-my.cnf");
      need(f + ".meta", "innodb_data_file_path in backup-my.cnf");
    } else {
      need(f, "innodb_data_file_path in backup-my.cnf");
    }
  }
  for (uint32_t i = 1; i <= b.undo_tablespaces; i++) {
    if (inc) {
      need(UndoName(i) + ".delta", "innodb_undo_tablespaces in backup-my.cnf");
    } else {
      need(UndoName(i), "innodb_undo_tablespaces in backup-my.cnf");
    }
  }
  if (b.binlog_promised) need(kBinlogInfoFile, "binlog_pos in xtrabackup_info");
}

struct Job {
  uint64_t size = 0;
  std::function<void()> run;
};

class Verifier {
 public:
  explicit Verifier(const VerifyOptions& o) : o_(o), r_(o) {}

  VerifyResult Run() {
    std::vector<std::string> dirs{o_.target_dir};
    for (const auto& d : o_.incremental_dirs) dirs.push_back(d);
    for (const auto& d : dirs) {
      auto b = std::make_unique<BackupDir>();
      b->dir = d;
      struct stat st;
      if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        r_.Add(d + ": not a directory");
        backups_.push_back(std::move(b));
        continue;
      }
      ReadMetadata(b.get(), r_);
      ListTree(d, "", b.get(), r_);
      CheckPromised(*b, r_);
      backups_.push_back(std::move(b));
    }
    CheckChain();
    for (auto& b : backups_) PlanJobs(*b);
    std::sort(jobs_.begin(), jobs_.end(), [](const Job& a, const Job& b) { return a.size > b.size; });
    std::atomic<bool> cancel{false};
    (void)RunParallel(
        jobs_.size(), o_.parallel,
        [&](size_t i) {
          jobs_[i].run();
          return Status::Ok();
        },
        &cancel);
    for (auto& b : backups_) CheckLogLsns(*b);
    // The log checkers' FileProblems report their summaries when destroyed.
    for (auto& b : backups_) {
      b->log.reset();
      b->log_problems.reset();
    }
    VerifyResult res;
    res.files = files_.load();
    res.pages = pages_.load();
    res.bytes = bytes_.load();
    res.problems = r_.Take();
    std::sort(res.problems.begin(), res.problems.end());
    res.problem_count = res.problems.size() + r_.unlisted.load();
    return res;
  }

 private:
  void CheckChain() {
    for (size_t i = 0; i < backups_.size(); i++) {
      const BackupDir& b = *backups_[i];
      if (!b.has_checkpoints) continue;
      std::string cp = JoinPath(b.dir, kCheckpointsFile);
      if (backups_.size() > 1 && i == 0 && b.cp.backup_type == "incremental") {
        r_.Add(cp + ": the first backup of a chain must be a full backup, this one is incremental");
      }
      if (i == 0) continue;
      if (b.cp.backup_type != "incremental") {
        r_.Add(cp + ": backup_type " + b.cp.backup_type + " where the chain needs an incremental");
        continue;
      }
      const BackupDir& prev = *backups_[i - 1];
      if (!prev.has_checkpoints) continue;
      if (b.cp.from_lsn != prev.cp.to_lsn) {
        r_.Add(cp + ": from_lsn " + std::to_string(b.cp.from_lsn) + " does not continue " + prev.dir +
               " (to_lsn " + std::to_string(prev.cp.to_lsn) + ")" +
               (b.cp.from_lsn > prev.cp.to_lsn ? ": changes in between are in no backup of the chain"
                                               : ": wrong base, or incrementals out of order"));
      }
    }
  }

  void AddJob(uint64_t size, std::function<void()> fn) { jobs_.push_back(Job{size, std::move(fn)}); }

  // Streams one file into `consume`; stream errors are problems of that file
  // (false: the content was cut short, its checker's Finish would only echo it).
  bool Stream(const BackupDir& b, const FileEntry& f, FileProblems& p, const Consumer& consume) {
    uint64_t content = 0;
    Status st = StreamFile(Display(b, f.rel), f.algo, consume, &content);
    bytes_ += content;
    files_++;
    if (!st.ok()) p.Add(st.message());
    return st.ok();
  }

  void PlanJobs(BackupDir& b) {
    const bool inc = IsIncremental(b);
    std::set<std::string> system(b.system_files.begin(), b.system_files.end());
    for (auto& [base, f] : b.files) {
      const FileEntry* fe = &f;
      BackupDir* bp = &b;
      if (base.ends_with(kXbstreamPartialSuffix)) {
        r_.Add(Display(b, f.rel) + ": an unfinished file (its backup or extraction was interrupted)");
        files_++;
        continue;
      }
      if (system.count(base)) {
        if (base != b.system_files.front()) continue;  // checked with the first, in order
        uint64_t total = 0;
        for (const auto& s : b.system_files) {
          if (b.files.count(s)) total += b.files.at(s).size;
        }
        AddJob(total, [this, bp] { CheckSystem(*bp); });
        continue;
      }
      if (base == "ib_logfile0") {
        b.log_problems = std::make_unique<FileProblems>(r_, Display(b, f.rel), o_.max_problems_per_file);
        b.log = std::make_unique<LogChecker>(*b.log_problems, !IsPrepared(b));
        AddJob(f.size, [this, bp, fe] {
          if (Stream(*bp, *fe, *bp->log_problems, [&](const uint8_t* d, size_t n) { bp->log->Feed(d, n); })) {
            bp->log->Finish();
          }
        });
        continue;
      }
      if (base.ends_with(".ibd") || base.ends_with(".new") || IsUndoTablespaceName(base)) {
        AddJob(f.size, [this, bp, fe] { CheckTablespace(*bp, *fe); });
        continue;
      }
      if (base.ends_with(".delta")) {
        AddJob(f.size, [this, bp, fe] { CheckDelta(*bp, *fe); });
        continue;
      }
      if (base.ends_with(".meta")) {
        files_++;
        std::string stem = base.substr(0, base.size() - 5);
        if (!b.files.count(stem + ".delta")) {
          r_.Add(Display(b, f.rel) + ": a .meta without its .delta");
        }
        if (f.algo) r_.Add(Display(b, f.rel) + ": a compressed .meta (they are never compressed)");
        continue;
      }
      if (f.algo) {
        // Any other compressed file: its frames and content checksums.
        AddJob(f.size, [this, bp, fe] {
          FileProblems p(r_, Display(*bp, fe->rel), o_.max_problems_per_file);
          Stream(*bp, *fe, p, [](const uint8_t*, size_t) {});
        });
        continue;
      }
      files_++;  // a plain file with nothing to check inside
    }
    (void)inc;
  }

  void CheckSystem(const BackupDir& b) {
    std::optional<innodb::SpaceFlags> flags;
    uint32_t next_page = 0;
    for (size_t i = 0; i < b.system_files.size(); i++) {
      auto it = b.files.find(b.system_files[i]);
      if (it == b.files.end()) return;  // reported as missing; later files cannot be numbered
      FileProblems p(r_, Display(b, it->second.rel), o_.max_problems_per_file);
      PageChecker::Options po;
      po.logical = b.page_size;
      po.is_system = true;
      po.first_page_no = next_page;
      if (i > 0) {
        if (!flags) {
          p.Add("not checked: the first system tablespace file has no readable page 0");
          files_++;
          continue;
        }
        po.flags = flags;
        po.space_id = 0;
      }
      PageChecker c(p, po);
      if (Stream(b, it->second, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
      pages_ += c.pages();
      if (i == 0) {
        flags = c.flags();
        if (flags && c.space_id() != 0)
          p.Add("page 0 says space id " + std::to_string(c.space_id()) + ", not 0");
      }
      next_page += static_cast<uint32_t>(c.pages());
    }
  }

  void CheckTablespace(const BackupDir& b, const FileEntry& f) {
    FileProblems p(r_, Display(b, f.rel), o_.max_problems_per_file);
    PageChecker::Options po;
    po.logical = b.page_size;
    PageChecker c(p, po);
    if (Stream(b, f, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
    pages_ += c.pages();
  }

  void CheckDelta(const BackupDir& b, const FileEntry& f) {
    FileProblems p(r_, Display(b, f.rel), o_.max_problems_per_file);
    std::string stem = f.base.substr(0, f.base.size() - 6);
    std::string meta_path = JoinPath(b.dir, stem + ".meta");
    auto text = ReadSmallFile(meta_path, 4096);
    if (!text.ok()) {
      p.Add("its .meta is missing or unreadable (" + text.status().message() + "); the delta is not checked");
      files_++;
      return;
    }
    auto meta = innodb::ParseDeltaMeta(text.value(), meta_path);
    if (!meta.ok()) {
      p.Add("bad .meta: " + meta.status().message() + "; the delta is not checked");
      files_++;
      return;
    }
    uint32_t first_page = 0;
    for (size_t i = 1; i < b.system_files.size(); i++) {
      if (stem == b.system_files[i]) first_page = b.system_first_page[i];
    }
    DeltaChecker c(p, meta.value(), b.page_size, first_page);
    if (Stream(b, f, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
    pages_ += c.pages();
  }

  // After the walk: the log must reach what the checkpoints promise.
  void CheckLogLsns(const BackupDir& b) {
    if (!b.log || !b.log->header_ok() || !b.has_checkpoints || IsPrepared(b)) return;
    FileProblems& p = *b.log_problems;
    const LogChecker& l = *b.log;
    if (l.checkpoint_lsn() > b.cp.to_lsn) {
      p.Add("starts at checkpoint LSN " + std::to_string(l.checkpoint_lsn()) + ", after to_lsn " +
            std::to_string(b.cp.to_lsn) + " of xtrabackup_checkpoints");
    }
    if (IsIncremental(b) && l.checkpoint_lsn() < b.cp.from_lsn) {
      p.Add("starts at checkpoint LSN " + std::to_string(l.checkpoint_lsn()) + ", before from_lsn " +
            std::to_string(b.cp.from_lsn));
    }
    if (!l.walked()) return;
    if (l.end_lsn() < b.cp.last_lsn) {
      p.Add("the mini-transactions end at LSN " + std::to_string(l.end_lsn()) + ", before last_lsn " +
            std::to_string(b.cp.last_lsn) + " of xtrabackup_checkpoints: the log is truncated");
    } else if (l.end_lsn() < b.cp.to_lsn) {
      p.Add("the mini-transactions end at LSN " + std::to_string(l.end_lsn()) + ", before to_lsn " +
            std::to_string(b.cp.to_lsn));
    }
  }

  const VerifyOptions& o_;
  Reporter r_;
  std::vector<std::unique_ptr<BackupDir>> backups_;
  std::vector<Job> jobs_;
  std::atomic<uint64_t> files_{0}, pages_{0}, bytes_{0};
};

}  // namespace

std::string VerifyResult::Summary() const {
  return "verify: " + std::to_string(files) + " files, " + std::to_string(pages) + " pages, " +
         std::to_string(problem_count) + " problem" + (problem_count == 1 ? "" : "s");
}

Result<VerifyResult> VerifyBackup(const VerifyOptions& options) {
  if (options.target_dir.empty()) return Error(ErrorCode::kInvalidArgument, "--verify needs --target-dir");
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  Verifier v(options);
  return v.Run();
}

}  // namespace xbak
