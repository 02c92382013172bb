#include "xbak/backup/redo_apply.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "xbak/backup/layout.h"
#include "xbak/backup/metadata.h"
#include "xbak/backup/space_files.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/extended_redo.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/page_compression.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/innodb/redo_record.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/parallel.h"
#include "xbak/util/progress.h"

namespace xbak {
namespace {

using innodb::PageRecord;
using innodb::RecordType;

std::string Lsn(uint64_t lsn) { return "LSN " + std::to_string(lsn); }

// ---- The log -------------------------------------------------------------------

// One complete mtr as the scanner hands it out.
struct MtrView {
  const uint8_t* bytes;
  size_t records_len;
  uint64_t start_lsn;
  uint64_t end_lsn;
  const innodb::MtrInfo* info;
};

// Reads the backup's ib_logfile0 from the checkpoint. The backup log is one
// linear pass (first_lsn at offset 12288, every terminator 1), as both
// mariabackup and xbak write it.
//
// The file is mapped, not read: the records of a batch point straight into
// the mapping, with no copy, and what a batch has consumed is dropped from
// our resident set again (MADV_DONTNEED; the kernel keeps it in the page
// cache), so memory stays bounded by --use-memory whatever the log's size.
class LogScanner {
 public:
  static Result<std::unique_ptr<LogScanner>> Open(const std::string& path) {
    XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
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
      return Error(
          ErrorCode::kUnsupported,
          path +
              ": the redo log is encrypted (innodb_encrypt_log=ON): xbak --prepare cannot decrypt it "
              "yet (use mariabackup --prepare for this backup); nothing was written");
    }
    if (h->format != innodb::kRedoFormat10_8) {
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
  ~LogScanner() { ::munmap(const_cast<uint8_t*>(base_), size_); }
  LogScanner(const LogScanner&) = delete;
  LogScanner& operator=(const LogScanner&) = delete;

  const innodb::Checkpoint& checkpoint() const { return checkpoint_; }

  // Calls fn for every complete mtr from the checkpoint on. Stops at the first
  // position that holds no valid mtr; *end_lsn is its LSN and *why says why.
  // A record that no server writes (kCorrupt) is an error. The bytes handed
  // to fn stay valid until Release() passes them.
  Status Scan(const std::function<Status(const MtrView&)>& fn, uint64_t* end_lsn, std::string* why) {
    uint64_t lsn = checkpoint_.checkpoint_lsn;
    innodb::MtrInfo info;
    for (;;) {
      const uint64_t off = Offset(lsn);
      std::string reason;
      innodb::MtrStatus st = innodb::ParseMtr(base_ + off, size_ - off, true, &info, &reason);
      if (st == innodb::MtrStatus::kComplete) {
        MtrView v{base_ + off, info.records_length, lsn, lsn + info.length, &info};
        XBAK_RETURN_IF_ERROR(fn(v));
        lsn += info.length;
        continue;
      }
      *end_lsn = lsn;
      if (st == innodb::MtrStatus::kCorrupt) {
        return Error(ErrorCode::kCorrupt, path_ + ": corrupt redo log at " + Lsn(lsn) + " (byte " +
                                              std::to_string(off) + "): " + reason);
      }
      if (st == innodb::MtrStatus::kNeedMore) {
        *why = off == size_ ? "end of file" : "the file ends inside a mini-transaction";
      } else {
        *why = reason;
      }
      Release(UINT64_MAX);
      return Status::Ok();
    }
  }

  // Drops the mapping's pages below `lsn` from the resident set.
  void Release(uint64_t lsn) {
    const uint64_t upto = lsn == UINT64_MAX ? size_ : std::min<uint64_t>(Offset(lsn), size_);
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t end = upto / page * page;
    if (end > released_) {
      (void)::madvise(const_cast<uint8_t*>(base_) + released_, end - released_, MADV_DONTNEED);
      released_ = end;
    }
  }
  void Rewind() { released_ = 0; }

 private:
  LogScanner(std::string path, const uint8_t* base, uint64_t size)
      : path_(std::move(path)), base_(base), size_(size) {}
  uint64_t Offset(uint64_t lsn) const { return innodb::kLogStartOffset + (lsn - header_.first_lsn); }

  std::string path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t released_ = 0;
  innodb::LogHeader header_;
  innodb::Checkpoint checkpoint_;
};

// ---- Tablespaces -----------------------------------------------------------------

struct Space {
  uint32_t id = 0;
  std::string rel;                // path inside the backup directory
  std::vector<std::string> more;  // the system tablespace's further files (ibdata2, ...), in order
  innodb::SpaceFlags flags;
  bool flags_known = false;  // false: page 0 is still to come from the log (deferred creation)
};

// "./db/t.ibd", "/data/dir/db/t.ibd" -> "db/t.ibd": the last two components,
// as mariabackup --prepare maps DATA DIRECTORY paths into the backup.
std::optional<std::string> BackupRelName(const std::string& logged) {
  size_t last = logged.rfind('/');
  if (last == std::string::npos || last == 0) return std::nullopt;
  size_t prev = logged.rfind('/', last - 1);
  std::string rel = logged.substr(prev == std::string::npos ? 0 : prev + 1);
  if (rel.empty() || rel.find("..") != std::string::npos || rel[0] == '/' || rel.starts_with("./"))
    return std::nullopt;
  return rel;
}

// A WRITE of the crypt data fields (scheme .. mode, 27 bytes after the magic)
// to page 0 of a tablespace that turns encryption on: the key rotation
// threads began encrypting it during the backup.
bool TurnsEncryptionOn(const PageRecord& r, uint32_t page_size) {
  if (r.type != RecordType::kWrite || r.page_no != 0 || r.length != innodb::kCryptDataSize - 6 ||
      r.data_len < r.length || r.data[1] != 16) {
    return false;
  }
  bool at_crypt_data = r.offset == innodb::CryptDataOffset(page_size, page_size) + 6;
  for (uint32_t zip = 1024; zip <= 16384 && zip <= page_size; zip *= 2) {
    at_crypt_data = at_crypt_data || r.offset == innodb::CryptDataOffset(page_size, zip) + 6;
  }
  return at_crypt_data && (r.data[0] == 1 || r.data[26] == 1);
}

Result<SpaceFiles> OpenSpace(const std::string& dir, const Space& s) {
  std::vector<std::string> paths = {JoinPath(dir, s.rel)};
  for (const auto& m : s.more) paths.push_back(JoinPath(dir, m));
  return SpaceFiles::Open(paths);
}

struct FileNames {
  std::map<uint32_t, std::string> last_name;  // rel name after the last FILE_ record
  std::set<uint32_t> deleted;                 // last FILE_ record was FILE_DELETE
};

// What prepare says, before writing anything, of a PAGE_COMPRESSED algorithm
// this build cannot decompress (its library was not found at build time).
Status RefuseCompression(const std::string& where, uint32_t algo) {
  return Error(ErrorCode::kUnsupported,
               where + ": PAGE_COMPRESSED with " + innodb::CompressionName(algo) +
                   " is not supported by this build of xbak --prepare (built without "
                   "its library); use mariabackup --prepare for this backup");
}

// A PAGE_COMPRESSED space xbak can apply the log to: full_crc32 files name
// their algorithm in the flags; older files on each page (the server variable
// at the time of the write), so every page is looked at. Before anything is
// written, so that an algorithm xbak lacks is refused by name.
Status CheckCompressedSpace(const File& f, const std::string& path, const innodb::SpaceFlags& flags) {
  if (flags.full_crc32) {
    if (!innodb::CompressionSupported(flags.compression_algo))
      return RefuseCompression(path, flags.compression_algo);
    return Status::Ok();
  }
  const size_t size = flags.logical_size;
  std::vector<uint8_t> buf(size * 64);
  for (uint64_t off = 0;; off += buf.size()) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buf.data(), buf.size(), off));
    for (size_t i = 0; i + size <= n; i += size) {
      const uint32_t algo = innodb::StoredCompression(buf.data() + i, flags);
      if (algo != 0 && !innodb::CompressionSupported(algo)) {
        return RefuseCompression(path + " page " + std::to_string((off + i) / size), algo);
      }
    }
    if (n < buf.size()) break;
  }
  return Status::Ok();
}

class Catalog {
 public:
  // check_only: also look at the .new files the DDL markers will install,
  // and only refuse what xbak cannot apply to (before anything is written).
  // `system` names the system tablespace's files in order (ibdata1 first);
  // only the first has a page 0.
  Status Scan(const std::string& dir, uint32_t page_size, const std::vector<std::string>& system,
              bool check_only = false) {
    XBAK_ASSIGN_OR_RETURN(auto top, ListDir(dir));
    std::vector<std::string> candidates;
    const std::set<std::string> further(system.begin() + (system.empty() ? 0 : 1), system.end());
    for (const auto& n : top) {
      if (further.count(n) != 0) continue;
      if ((!system.empty() && n == system.front()) || IsUndoTablespaceName(n)) candidates.push_back(n);
      if (!IsDirectory(JoinPath(dir, n))) continue;
      XBAK_ASSIGN_OR_RETURN(auto files, ListDir(JoinPath(dir, n)));
      for (const auto& f : files) {
        if (f.ends_with(".ibd") || (check_only && f.ends_with(".new"))) candidates.push_back(n + "/" + f);
      }
    }
    std::vector<uint8_t> page(65536);
    for (const auto& rel : candidates) {
      const std::string path = JoinPath(dir, rel);
      XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
      XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(page.data(), page.size(), 0));
      if (!innodb::HasPage0(page.data(), n)) {
        unidentified_.insert(rel);  // created during the backup: page 0 comes from the log
        continue;
      }
      auto h = innodb::ParseSpaceHeader(page.data(), n);
      if (!h.ok()) return h.status().With(path + " page 0");
      if (h->flags.logical_size != page_size) {
        return Error(ErrorCode::kCorrupt, path + ": page size " + std::to_string(h->flags.logical_size) +
                                              " differs from innodb_page_size " + std::to_string(page_size));
      }
      if (h->flags.page_compressed) XBAK_RETURN_IF_ERROR(CheckCompressedSpace(f, path, h->flags));
      if (auto c = innodb::ReadCryptData(page.data(), h->flags); c && c->MayEncrypt()) {
        return Error(ErrorCode::kUnsupported,
                     path + ": encrypted tablespace (key id " + std::to_string(c->key_id) +
                         "): encrypted tablespaces are not supported by xbak --prepare yet (use mariabackup "
                         "--prepare for this backup); nothing was written");
      }
      if (check_only) continue;
      const bool sys = !system.empty() && rel == system.front();
      if (sys && h->space_id != 0) {
        return Error(ErrorCode::kCorrupt, path + ": page 0 says tablespace " + std::to_string(h->space_id));
      }
      auto [it, fresh] = spaces_.try_emplace(h->space_id);
      if (!fresh) {
        return Error(ErrorCode::kCorrupt, "two files claim tablespace id " + std::to_string(h->space_id) +
                                              ": " + it->second.rel + " and " + rel);
      }
      it->second = Space{h->space_id, rel, {}, h->flags, true};
      if (sys) {
        for (const auto& m : further) {
          if (!PathExists(JoinPath(dir, m))) {
            return Error(ErrorCode::kNotFound,
                         JoinPath(dir, m) + ": a file of the system tablespace (innodb_data_file_path in " +
                             kBackupCnfFile + ") is missing from the backup");
          }
        }
        it->second.more.assign(system.begin() + 1, system.end());
      }
    }
    return Status::Ok();
  }

  // Tablespaces that the log names but whose file holds no page 0 yet (or no
  // file at all): their page 0 must come from the log.
  void AddDeferred(const std::string& dir, const FileNames& names, const TableFilter& filter) {
    for (const auto& [id, rel] : names.last_name) {
      if (spaces_.count(id) || names.deleted.count(id)) continue;
      if (!filter.TakesSpace(rel.ends_with(".ibd") ? rel.substr(0, rel.size() - 4) : rel)) {
        continue;  // a table the partial backup left out: its records are ignored
      }
      if (unidentified_.count(rel) || !PathExists(JoinPath(dir, rel))) {
        spaces_[id] = Space{id, rel, {}, {}, false};
      }
    }
  }

  Space* Find(uint32_t id) {
    auto it = spaces_.find(id);
    return it == spaces_.end() ? nullptr : &it->second;
  }
  std::map<uint32_t, Space>& all() { return spaces_; }

 private:
  std::map<uint32_t, Space> spaces_;
  std::set<std::string> unidentified_;
};

// ---- Parsed records of one batch -------------------------------------------------

// Records live in one chunked arena (no per-page vectors: millions of
// small, growing vectors fragment the heap far beyond --use-memory); each
// page holds a singly linked list of indexes into it, in LSN order.
constexpr uint32_t kNoRec = UINT32_MAX;

struct StoredRec {
  const uint8_t* data;  // into the mapped log
  uint32_t data_len;
  uint32_t mtr;  // index into Batch::mtrs
  uint32_t offset;
  uint32_t length;
  uint32_t source;
  uint32_t next;  // next record of the same page, or kNoRec
  RecordType type;
};

struct PageLog {
  uint32_t head = kNoRec, tail = kNoRec;
  bool skip_read = false;  // starts with INIT_PAGE/FREE_PAGE: the old content does not matter
};

class Batch {
 public:
  uint32_t AddMtr(uint64_t start, uint64_t end) {
    mtrs.push_back({start, end});
    bytes_ += sizeof(mtrs[0]);
    return static_cast<uint32_t>(mtrs.size() - 1);
  }
  void Add(const PageRecord& r, uint32_t mtr) {
    const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
    auto [it, fresh] = pages.try_emplace(key);
    if (fresh) bytes_ += kPageOverhead;
    PageLog& pl = it->second;
    const uint32_t idx = static_cast<uint32_t>(recs.size());
    recs.push_back(StoredRec{r.data, r.data_len, mtr, r.offset, r.length, r.source, kNoRec, r.type});
    bytes_ += sizeof(StoredRec);
    if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage || pl.head == kNoRec) {
      // Nothing before a (re)initialisation matters (recv_sys_t::add); the
      // records left behind stay in the arena until the batch ends.
      if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage) pl.skip_read = true;
      pl.head = pl.tail = idx;
    } else {
      recs[pl.tail].next = idx;
      pl.tail = idx;
    }
  }
  size_t bytes() const { return bytes_; }
  bool empty() const { return pages.empty(); }
  void Clear() {
    pages.clear();
    recs.clear();
    mtrs.clear();
    bytes_ = 0;
  }

  std::deque<std::pair<uint64_t, uint64_t>> mtrs;  // start LSN, end LSN
  std::deque<StoredRec> recs;
  std::unordered_map<uint64_t, PageLog> pages;

 private:
  // An unordered_map node holding a PageLog, its bucket, and malloc's headers.
  static constexpr size_t kPageOverhead = 64;
  size_t bytes_ = 0;
};

// ---- Applying ----------------------------------------------------------------------

std::string PageName(const Space& s, uint32_t page_no) {
  return s.rel + " page " + std::to_string(page_no) + " (tablespace " + std::to_string(s.id) + ")";
}

// Replays the records of one page onto `frame` (physical size), following
// recv_recover_page: skip every mtr that started before the page LSN, treat
// an mtr that only freed the page as "not applied". Returns whether the page
// must be written, with its new LSN in *end_lsn.
Result<bool> ReplayPage(const Space& s, uint32_t page_no, const PageLog& pl, const Batch& batch,
                        uint8_t* frame, size_t frame_size, uint64_t* end_lsn) {
  const uint64_t page_lsn = pl.skip_read ? 0 : LoadBE64(frame + innodb::kFilPageLsn);
  uint64_t start = 0, end = 0;
  for (uint32_t i = pl.head; i != kNoRec;) {
    const uint32_t mtr = batch.recs[i].mtr;
    const auto [mtr_start, mtr_end] = batch.mtrs[mtr];
    end = mtr_end;
    if (mtr_start < page_lsn) {  // already in the page
      while (i != kNoRec && batch.recs[i].mtr == mtr) i = batch.recs[i].next;
      continue;
    }
    bool applied = false;
    for (; i != kNoRec && batch.recs[i].mtr == mtr; i = batch.recs[i].next) {
      const StoredRec& r = batch.recs[i];
      if (r.type == RecordType::kFreePage) continue;
      Status st;
      if (r.type == RecordType::kExtended) {
        if (page_no < 3 || s.flags.zip()) {
          st = Error(ErrorCode::kCorrupt, "EXTENDED record on a page that cannot take one");
        } else {
          st = innodb::ApplyExtendedRecord(frame, frame_size, r.data, r.data_len);
        }
      } else {
        PageRecord pr;
        pr.type = r.type;
        pr.space_id = s.id;
        pr.page_no = page_no;
        pr.offset = r.offset;
        pr.length = r.length;
        pr.source = r.source;
        pr.data = r.data;
        pr.data_len = r.data_len;
        st = innodb::ApplySimpleRecord(frame, frame_size, pr);
      }
      if (!st.ok()) {
        return st.With("redo of the mini-transaction at " + Lsn(mtr_start) + " on " + PageName(s, page_no));
      }
      applied = true;
    }
    if (!applied) {
      start = 0;  // the page was freed: it is not written (its old content stays)
    } else if (start == 0) {
      start = mtr_start;
    }
  }
  *end_lsn = end;
  return start != 0;
}

void StampLsn(uint8_t* frame, const innodb::SpaceFlags& flags, uint64_t lsn) {
  StoreBE64(frame + innodb::kFilPageLsn, lsn);
  if (!flags.zip()) StoreBE64(frame + flags.logical_size - innodb::kFilPageEndLsnOldChecksum, lsn);
  innodb::StampPageChecksum(frame, flags);
}

class Applier {
 public:
  Applier(const RedoApplyOptions& o, Catalog& catalog, uint32_t page_size,
          const std::unordered_set<uint64_t>& freed_at_end,
          const std::unordered_map<uint64_t, uint64_t>& last_init,
          const std::map<uint32_t, uint64_t>& last_trim)
      : o_(o),
        catalog_(catalog),
        page_size_(page_size),
        freed_at_end_(freed_at_end),
        last_init_(last_init),
        last_trim_(last_trim) {}

  Status AddMtr(const MtrView& m) {
    // The batch holds its records and index, and keeps the log it spans
    // mapped (resident) until it is applied.
    if (batch_log_start_ == 0) batch_log_start_ = m.start_lsn;
    if (batch_.bytes() + (m.end_lsn - batch_log_start_) > o_.use_memory && !batch_.empty()) {
      XBAK_RETURN_IF_ERROR(Flush());
      batch_log_start_ = m.start_lsn;
    }
    stats_.mtrs++;
    bool added = false;
    uint32_t mtr_index = 0;
    return innodb::ForEachPageRecord(m.bytes, m.records_len, page_size_, [&](const PageRecord& r) -> Status {
      stats_.records++;
      if (r.type == RecordType::kExtended && r.data_len == 1 &&
          r.data[0] == static_cast<uint8_t>(innodb::ExtendedType::kTrimPages)) {
        return Trim(r.space_id, r.page_no);
      }
      if (auto t = last_trim_.find(r.space_id); t != last_trim_.end() && t->second > m.start_lsn) {
        return Status::Ok();  // the undo tablespace is truncated later: void (recv_sys_t::trim)
      }
      const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
      if (!freed_at_end_.empty() && freed_at_end_.count(key)) {
        return Status::Ok();  // freed by the end of the log: never written
      }
      if (auto it = last_init_.find(key); it != last_init_.end() && it->second > m.start_lsn) {
        return Status::Ok();  // re-initialised later: this record cannot matter
      }
      Space* s = catalog_.Find(r.space_id);
      if (s == nullptr) {
        stats_.ignored_records++;
        stats_.ignored_spaces.insert(r.space_id);
        return Status::Ok();
      }
      if (!added) {
        mtr_index = batch_.AddMtr(m.start_lsn, m.end_lsn);
        added = true;
      }
      batch_.Add(r, mtr_index);  // r.data points into the mapped log
      return Status::Ok();
    });
  }

  Status Flush() {
    if (batch_.empty()) {
      batch_.Clear();
      return Status::Ok();
    }
    stats_.batches++;
    XBAK_RETURN_IF_ERROR(ResolveDeferred());
    std::vector<uint64_t> keys;
    keys.reserve(batch_.pages.size());
    for (const auto& [k, pl] : batch_.pages) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    constexpr size_t kPagesPerJob = 128;
    const size_t jobs = (keys.size() + kPagesPerJob - 1) / kPagesPerJob;
    std::atomic<uint64_t> written{0};
    std::atomic<bool> cancel{false};
    std::mutex touched_mu;
    XBAK_RETURN_IF_ERROR(RunParallel(
        jobs, o_.parallel,
        [&](size_t job) -> Status {
          std::vector<uint8_t> frame(65536);
          std::optional<SpaceFiles> file;
          uint32_t file_space = UINT32_MAX;
          std::set<uint32_t> touched;
          const size_t first = job * kPagesPerJob, last = std::min(keys.size(), first + kPagesPerJob);
          for (size_t i = first; i < last; i++) {
            if (cancel.load(std::memory_order_relaxed)) return Error(ErrorCode::kCancelled, "cancelled");
            const uint32_t space_id = static_cast<uint32_t>(keys[i] >> 32);
            const uint32_t page_no = static_cast<uint32_t>(keys[i]);
            const Space* s = catalog_.Find(space_id);
            if (s == nullptr || !s->flags_known) continue;  // no page 0 for a deferred space: ignored
            if (space_id != file_space) {
              auto f = OpenSpace(o_.dir, *s);
              if (!f.ok()) return f.status();
              file.emplace(std::move(f).value());
              file_space = space_id;
            }
            XBAK_ASSIGN_OR_RETURN(bool w,
                                  ApplyPage(*s, page_no, batch_.pages.at(keys[i]), *file, frame.data()));
            if (w) {
              written.fetch_add(1, std::memory_order_relaxed);
              touched.insert(space_id);
            }
          }
          std::lock_guard<std::mutex> l(touched_mu);
          touched_.insert(touched.begin(), touched.end());
          return Status::Ok();
        },
        &cancel));
    stats_.pages_written += written.load();
    batch_.Clear();
    return Status::Ok();
  }

  // Files grow as their page 0 says (FSP_SIZE), like fil_system.extend_to_recv_size.
  // Pages freed by the end of the log in PAGE_COMPRESSED spaces: the server
  // deallocates them (punches a hole: they read as zeros), and so does
  // mariabackup --prepare. Elsewhere freed pages keep their bytes.
  Status PunchFreedPages() {
    std::map<uint32_t, std::vector<uint32_t>> by_space;
    for (uint64_t key : freed_at_end_) {
      const Space* s = catalog_.Find(static_cast<uint32_t>(key >> 32));
      if (s != nullptr && s->flags_known && s->flags.page_compressed) {
        by_space[s->id].push_back(static_cast<uint32_t>(key));
      }
    }
    for (auto& [id, pages] : by_space) {
      const Space* s = catalog_.Find(id);
      XBAK_ASSIGN_OR_RETURN(SpaceFiles f, OpenSpace(o_.dir, *s));
      XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
      const uint64_t ps = s->flags.physical_size;
      for (uint32_t p : pages) {
        if (uint64_t{p} * ps < size) f.PunchHole(uint64_t{p} * ps, ps);
      }
    }
    return Status::Ok();
  }

  Status ExtendFiles() {
    std::vector<uint8_t> page(65536);
    for (uint32_t id : touched_) {
      const Space* s = catalog_.Find(id);
      if (s == nullptr || !s->flags_known) continue;
      XBAK_ASSIGN_OR_RETURN(SpaceFiles f, OpenSpace(o_.dir, *s));
      XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(page.data(), s->flags.physical_size, 0));
      if (n < innodb::kFspHeaderEnd) continue;
      const uint64_t want = uint64_t{LoadBE32(page.data() + innodb::kFspSize)} * s->flags.physical_size;
      XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
      // A truncated undo tablespace gets exactly the size its page 0 says.
      if (size < want || (trims_.count(id) && size > want)) XBAK_RETURN_IF_ERROR(f.Truncate(want));
    }
    for (const auto& [id, size] : trims_) {
      const Space* s = catalog_.Find(id);
      if (s == nullptr || !s->flags_known) continue;
      LogInfo("undo tablespace " + s->rel + " was truncated (innodb_undo_log_truncate) during the backup");
    }
    return Status::Ok();
  }

  RedoApplyStats& stats() { return stats_; }
  void set_compression_level(int level) { compression_level_ = level; }

 private:
  // TRIM_PAGES: innodb_undo_log_truncate shrank an undo tablespace and
  // rewrote its first pages. Every older record of the space is void (they
  // are skipped above, whatever batch they fall in); the file gets the size
  // page 0 says at the end (ExtendFiles), as recv_sys_t::apply truncates it.
  Status Trim(uint32_t space_id, uint32_t size) {
    Space* s = catalog_.Find(space_id);
    if (s == nullptr) return Status::Ok();
    if (!IsUndoTablespaceName(s->rel)) {
      return Error(ErrorCode::kCorrupt,
                   "TRIM_PAGES record for " + s->rel + ", which is not an undo tablespace");
    }
    trims_[space_id] = size;
    touched_.insert(space_id);
    return Status::Ok();
  }

  // Page 0 of tablespaces created during the backup comes from the log:
  // replay it first to learn the page size and create the file.
  Status ResolveDeferred() {
    for (auto& [id, s] : catalog_.all()) {
      if (s.flags_known) continue;
      auto it = batch_.pages.find(uint64_t{id} << 32);
      if (it == batch_.pages.end() || !it->second.skip_read) continue;
      std::vector<uint8_t> frame(page_size_, 0);
      uint64_t end = 0;
      s.flags.logical_size = s.flags.physical_size = page_size_;
      XBAK_ASSIGN_OR_RETURN(bool w, ReplayPage(s, 0, it->second, batch_, frame.data(), frame.size(), &end));
      if (!w) continue;
      auto h = innodb::ParseSpaceHeader(frame.data(), frame.size());
      if (!h.ok()) return h.status().With("page 0 of " + s.rel + " as rebuilt from the redo log");
      if (h->flags.page_compressed && h->flags.full_crc32 &&
          !innodb::CompressionSupported(h->flags.compression_algo)) {
        return RefuseCompression(s.rel, h->flags.compression_algo);
      }
      if (h->flags.logical_size != page_size_) {
        return Error(ErrorCode::kCorrupt, "page 0 of " + s.rel +
                                              " as rebuilt from the redo log has page size " +
                                              std::to_string(h->flags.logical_size));
      }
      s.flags = h->flags;
      s.flags_known = true;
      LogInfo("creating " + s.rel + " (tablespace " + std::to_string(id) + ") from the redo log");
      XBAK_RETURN_IF_ERROR(MakeDirs(JoinPath(o_.dir, s.rel.substr(0, s.rel.find('/')))));
    }
    return Status::Ok();
  }

  Result<bool> ApplyPage(const Space& s, uint32_t page_no, const PageLog& pl, SpaceFiles& file,
                         uint8_t* frame) {
    const size_t fs = s.flags.physical_size;
    const uint64_t off = uint64_t{page_no} * fs;
    if (!pl.skip_read) {
      XBAK_ASSIGN_OR_RETURN(size_t n, file.PRead(frame, fs, off));
      if (n < fs) std::memset(frame + n, 0, fs - n);  // past the end: reads as zeros, as after extension
      // The last guard (the catalog and the log were checked before anything
      // was written): a page of a tablespace without crypt data may still be
      // encrypted if the server began encrypting it while its page 0 on disk
      // lagged. Applying the log to ciphertext would write garbage.
      if (page_no != 0 && !(s.id == 0 && page_no == 5) && innodb::PageKeyVersion(frame, s.flags) != 0 &&
          innodb::CheckPage(frame, s.flags, page_no).encrypted) {
        return Error(ErrorCode::kUnsupported,
                     PageName(s, page_no) + " is encrypted (key version " +
                         std::to_string(innodb::PageKeyVersion(frame, s.flags)) +
                         "): encrypted tablespaces are not supported by xbak --prepare "
                         "yet; restore the backup from its source and use mariabackup "
                         "--prepare");
      }
      if (s.flags.page_compressed) {
        // The log applies to the plain frame, as in the server's buffer pool.
        std::vector<uint8_t> plain(fs);
        auto d = innodb::DecompressPage(frame, s.flags, plain.data());
        if (!d.ok()) return d.status().With(PageName(s, page_no));
        if (*d) std::memcpy(frame, plain.data(), fs);
      }
    } else {
      std::memset(frame, 0, fs);
    }
    uint64_t end = 0;
    XBAK_ASSIGN_OR_RETURN(bool write, ReplayPage(s, page_no, pl, batch_, frame, fs, &end));
    if (!write) return false;
    if (s.flags.page_compressed && s.flags.full_crc32) {
      // Written back compressed, as the server's flush does; the checksum is
      // of the compressed bytes only.
      // Recovery writes the 8-byte LSN at 16 and at the page end (so the
      // last 4 bytes are its low half), then the flush copies the low half
      // to the trailer: the frame ends with the low half twice.
      StoreBE64(frame + innodb::kFilPageLsn, end);
      StoreBE64(frame + fs - 8, end);
      std::memcpy(frame + fs - innodb::kFilPageFcrc32EndLsn, frame + innodb::kFilPageLsn + 4, 4);
      std::vector<uint8_t> out(fs);
      XBAK_ASSIGN_OR_RETURN(
          size_t w, innodb::CompressPageFullCrc32(frame, s.flags, s.id, compression_level_, out.data()));
      if (w > 0) {
        // Written up to the file system's block size (zeros after W); what
        // follows keeps its old bytes, which nothing reads (W is in the page
        // type). mariabackup --prepare writes them the same way.
        const size_t blk = file.BlockSize();
        XBAK_RETURN_IF_ERROR(file.PWrite(out.data(), std::min<size_t>(fs, (w + blk - 1) / blk * blk), off));
        return true;
      }
    }
    StampLsn(frame, s.flags, end);
    XBAK_RETURN_IF_ERROR(file.PWrite(frame, fs, off));
    return true;
  }

  const RedoApplyOptions& o_;
  Catalog& catalog_;
  uint32_t page_size_;
  int compression_level_ = 6;  // innodb_compression_level of the backup (PAGE_COMPRESSED, zlib)
  uint64_t batch_log_start_ = 0;
  const std::unordered_set<uint64_t>& freed_at_end_;
  const std::unordered_map<uint64_t, uint64_t>& last_init_;
  const std::map<uint32_t, uint64_t>& last_trim_;
  Batch batch_;
  RedoApplyStats stats_;
  std::set<uint32_t> touched_;
  std::map<uint32_t, uint32_t> trims_;
};

void RaiseOpenFileLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

namespace {

struct LogCheck {
  uint64_t end_lsn = 0;
  FileNames names;
  // Pages whose last record is FREE_PAGE. The server never writes them
  // (fil_space_t::freed_ranges); knowing them up front keeps the result the
  // same whether the log is applied in one batch or many.
  std::unordered_set<uint64_t> freed_at_end;
  // The start LSN of the last mtr that initialised or freed each page. Older
  // records of such a page are never applied: in a batch that ends before
  // that mtr, the page's old content may be anything (the server's own
  // recovery skips them too: mlog_init_t::will_avoid_read).
  std::unordered_map<uint64_t, uint64_t> last_init;
  // The start LSN of the last TRIM_PAGES of each undo tablespace.
  std::map<uint32_t, uint64_t> last_trim;
};

// Pass 1: the whole log must be sound before anything is written.
Result<LogCheck> CheckLog(const RedoApplyOptions& o, const std::string& log_path, uint32_t page_size,
                          LogScanner& scanner) {
  LogCheck out;
  FileNames& names = out.names;
  uint64_t& end_lsn = out.end_lsn;
  std::string why;
  uint64_t released = scanner.checkpoint().checkpoint_lsn;
  Status walk = scanner.Scan(
      [&](const MtrView& m) -> Status {
        for (const auto& op : m.info->file_ops) {
          auto rel = BackupRelName(op.type == innodb::FileOp::Type::kRename ? op.new_name : op.name);
          if (!rel) {
            return Error(ErrorCode::kCorrupt, log_path + ": FILE_ record at " + Lsn(m.start_lsn) +
                                                  " names an impossible path '" + op.name + "'");
          }
          names.last_name[op.space_id] = *rel;
          if (op.type == innodb::FileOp::Type::kDelete) {
            names.deleted.insert(op.space_id);
          } else {
            names.deleted.erase(op.space_id);
          }
        }
        if (m.start_lsn - released >= (64u << 20)) {
          scanner.Release(m.start_lsn);
          released = m.start_lsn;
        }
        Status st = innodb::ForEachPageRecord(m.bytes, m.records_len, page_size, [&](const PageRecord& r) {
          const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
          if (r.type == RecordType::kFreePage) {
            out.freed_at_end.insert(key);
          } else if (!out.freed_at_end.empty()) {
            out.freed_at_end.erase(key);
          }
          if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage)
            out.last_init[key] = m.start_lsn;
          if (TurnsEncryptionOn(r, page_size)) {
            return Error(ErrorCode::kUnsupported,
                         "the server began encrypting tablespace " + std::to_string(r.space_id) +
                             " during the backup (innodb_encrypt_tables with innodb_encryption_threads): "
                             "encrypted tablespaces are not supported by xbak --prepare yet (use mariabackup "
                             "--prepare for this backup); nothing was written");
          }
          return Status::Ok();
        });
        return st.ok() ? st : st.With(log_path + ": mini-transaction at " + Lsn(m.start_lsn));
      },
      &end_lsn, &why);
  XBAK_RETURN_IF_ERROR(walk);
  if (end_lsn < o.required_lsn) {
    const bool corrupt =
        why.find("checksum") != std::string::npos || why.find("sequence bit") != std::string::npos;
    return Error(ErrorCode::kCorrupt,
                 log_path + (corrupt ? ": the redo log is corrupt at " : ": the redo log ends at ") +
                     Lsn(end_lsn) + " (" + why + "), but the backup needs it up to " + Lsn(o.required_lsn) +
                     (corrupt ? "" : ": the log is truncated"));
  }
  return out;
}

}  // namespace

Status CheckRedoApplicable(const std::string& log_dir, const std::string& data_dir, uint64_t required_lsn) {
  RaiseOpenFileLimit();
  const std::string log_path = JoinPath(log_dir, "ib_logfile0");
  XBAK_ASSIGN_OR_RETURN(BackupCnf cnf, ReadBackupCnf(data_dir));
  XBAK_ASSIGN_OR_RETURN(auto scanner, LogScanner::Open(log_path));
  RedoApplyOptions o;
  o.dir = data_dir;
  o.required_lsn = required_lsn;
  XBAK_RETURN_IF_ERROR(CheckLog(o, log_path, cnf.page_size, *scanner).status());
  Catalog probe;
  return probe.Scan(data_dir, cnf.page_size, cnf.system_files, /*check_only=*/true);
}

Result<RedoApplyStats> ApplyRedoLog(const RedoApplyOptions& o) {
  RaiseOpenFileLimit();
  const std::string log_path = JoinPath(o.dir, "ib_logfile0");
  XBAK_ASSIGN_OR_RETURN(BackupCnf cnf, ReadBackupCnf(o.dir));
  const uint32_t page_size = cnf.page_size;
  const std::vector<std::string>& system = cnf.system_files;
  XBAK_ASSIGN_OR_RETURN(auto scanner_ptr, LogScanner::Open(log_path));
  LogScanner& scanner = *scanner_ptr;
  XBAK_ASSIGN_OR_RETURN(LogCheck check, CheckLog(o, log_path, page_size, scanner));
  scanner.Rewind();
  {
    Catalog probe;  // unsupported tablespaces are refused before anything is written
    XBAK_RETURN_IF_ERROR(probe.Scan(o.dir, page_size, system, /*check_only=*/true));
  }
  if (o.before_write) XBAK_RETURN_IF_ERROR(o.before_write());
  const FileNames& names = check.names;
  const uint64_t end_lsn = check.end_lsn;

  Catalog catalog;
  XBAK_RETURN_IF_ERROR(catalog.Scan(o.dir, page_size, system));
  catalog.AddDeferred(o.dir, names, o.filter);

  // Pass 2: apply in batches.
  Progress progress("prepare", o.progress_interval);
  progress.AddTotal(end_lsn - scanner.checkpoint().checkpoint_lsn, 0);
  Applier applier(o, catalog, page_size, check.freed_at_end, check.last_init, check.last_trim);
  applier.set_compression_level(cnf.compression_level);
  uint64_t end2 = 0;
  std::string why2;
  XBAK_RETURN_IF_ERROR(scanner.Scan(
      [&](const MtrView& m) -> Status {
        if (m.start_lsn >= end_lsn) return Status::Ok();  // appeared since pass 1: not ours
        progress.AddDone(m.end_lsn - m.start_lsn);
        const uint64_t batches = applier.stats().batches;
        Status st = applier.AddMtr(m);
        if (applier.stats().batches != batches) scanner.Release(m.start_lsn);  // applied: not needed any more
        return st;
      },
      &end2, &why2));
  XBAK_RETURN_IF_ERROR(applier.Flush());
  XBAK_RETURN_IF_ERROR(applier.PunchFreedPages());
  XBAK_RETURN_IF_ERROR(applier.ExtendFiles());

  // FILE_RENAME / FILE_DELETE that the backup's own DDL markers did not
  // already carry out (a backup of another tool, or none was needed).
  for (auto& [id, s] : catalog.all()) {
    if (names.deleted.count(id)) continue;
    auto it = names.last_name.find(id);
    if (it == names.last_name.end() || it->second == s.rel || !s.flags_known) continue;
    const std::string from = JoinPath(o.dir, s.rel), to = JoinPath(o.dir, it->second);
    if (PathExists(to) || !PathExists(from)) continue;
    XBAK_RETURN_IF_ERROR(MakeDirs(to.substr(0, to.rfind('/'))));
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename " + from + " to", to, errno);
    LogInfo("renamed " + s.rel + " to " + it->second + " as the redo log says");
    s.rel = it->second;
  }
  for (uint32_t id : names.deleted) {
    auto it = names.last_name.find(id);
    if (it == names.last_name.end()) continue;
    const std::string path = JoinPath(o.dir, it->second);
    // Only the file that still holds that tablespace id.
    std::vector<uint8_t> page(innodb::kFspHeaderEnd);
    auto f = File::OpenRead(path);
    if (!f.ok()) continue;
    auto n = f->PRead(page.data(), page.size(), 0);
    if (!n.ok() || n.value() < page.size() || LoadBE32(page.data() + innodb::kFspSpaceId) != id) continue;
    if (::unlink(path.c_str()) != 0) return ErrnoError("remove", path, errno);
    LogInfo("removed " + it->second + ": the table was dropped during the backup");
  }
  progress.Finish(true);

  RedoApplyStats st = applier.stats();
  st.checkpoint_lsn = scanner.checkpoint().checkpoint_lsn;
  st.end_lsn = end_lsn;
  return st;
}

}  // namespace xbak
