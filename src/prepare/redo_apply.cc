#include "xbak/prepare/redo_apply.h"

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
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "redo_check.h"
#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/page_compression.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/innodb/redo_record.h"
#include "xbak/prepare/doublewrite.h"
#include "xbak/prepare/log_file_ops.h"
#include "xbak/prepare/log_scanner.h"
#include "xbak/prepare/recorded_binlog.h"
#include "xbak/prepare/redo_batch.h"
#include "xbak/prepare/space_catalog.h"
#include "xbak/prepare/space_files.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/parallel.h"
#include "xbak/util/progress.h"

namespace xbak::prepare {
namespace {

using innodb::PageRecord;
using innodb::RecordType;

constexpr size_t kPagesPerJob = 128;  // pages a writer thread applies at a time

void StampLsn(uint8_t* frame, const innodb::SpaceFlags& flags, uint64_t lsn) {
  util::StoreBE64(frame + innodb::kFilPageLsn, lsn);
  if (!flags.zip()) util::StoreBE64(frame + flags.logical_size - innodb::kFilPageEndLsnOldChecksum, lsn);
  innodb::StampPageChecksum(frame, flags);
}

class Applier {
 public:
  Applier(const RedoApplyOptions& o, Catalog& catalog, uint32_t page_size, const LogCheck& check,
          PageSetPtr superseded)
      : o_(o), catalog_(catalog), page_size_(page_size), check_(check), superseded_(std::move(superseded)) {}

  Status AddMtr(const MtrView& m) {
    // The batch holds its records and index, and keeps the log it spans
    // mapped (resident) until it is applied.
    // While nothing is held, the log behind is not needed (a stretch of
    // records of dropped or left-out tables, or of pages freed later).
    if (batch_log_start_ == 0 || batch_.empty()) batch_log_start_ = m.start_lsn;
    if (batch_.bytes() + (m.end_lsn - batch_log_start_) > o_.use_memory && !batch_.empty()) {
      XBAK_RETURN_IF_ERROR(Flush());
      batch_log_start_ = m.start_lsn;
    }
    stats_.mtrs++;
    bool added = false;
    uint32_t mtr_index = 0;
    return innodb::ForEachPageRecord(m.bytes, m.records_len, page_size_, [&](const PageRecord& r) -> Status {
      stats_.records++;
      if (innodb::IsTrimPages(r)) return Trim(r.space_id, r.page_no);
      if (auto t = check_.trims.find(r.space_id); t != check_.trims.end()) {
        for (const LogCheck::Trim& trim : t->second) {
          if (trim.lsn > m.start_lsn && r.page_no >= trim.size) return Status::Ok();  // cut off later: void
        }
      }
      const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
      // The next incremental replaces the page whole. Not page 0: a tablespace
      // created during the backup is known to this apply only by its page 0
      // from the log (ResolveDeferred), and its other pages with it.
      if (superseded_ != nullptr && r.page_no != 0 && superseded_->Contains(r.space_id, r.page_no)) {
        stats_.superseded_records++;
        return Status::Ok();
      }
      if (!check_.freed_at_end.empty() && check_.freed_at_end.count(key)) {
        return Status::Ok();  // freed by the end of the log: never written
      }
      if (auto it = check_.last_init.find(key); it != check_.last_init.end() && it->second > m.start_lsn) {
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
    const size_t jobs = (keys.size() + kPagesPerJob - 1) / kPagesPerJob;
    std::atomic<uint64_t> written{0};
    std::atomic<bool> cancel{false};
    std::mutex touched_mu;
    XBAK_RETURN_IF_ERROR(util::RunParallel(
        jobs, o_.parallel,
        [&](size_t job) -> Status {
          const size_t first = job * kPagesPerJob, n = std::min(keys.size(), first + kPagesPerJob) - first;
          std::set<uint32_t> touched;
          XBAK_ASSIGN_OR_RETURN(size_t w,
                                FlushJob(std::span<const uint64_t>(keys).subspan(first, n), cancel, touched));
          written.fetch_add(w, std::memory_order_relaxed);
          std::lock_guard<std::mutex> l(touched_mu);
          touched_.insert(touched.begin(), touched.end());
          return Status::Ok();
        },
        &cancel));
    stats_.pages_written += written.load();
    stats_.corrupt_pages_left = skipped_.size();
    batch_.Clear();
    return Status::Ok();
  }

  void set_doublewrite(Doublewrite* d) { doublewrite_ = d; }

  // Files grow as their page 0 says (FSP_SIZE), like fil_system.extend_to_recv_size.
  // Pages freed by the end of the log in PAGE_COMPRESSED spaces: the server
  // deallocates them (punches a hole: they read as zeros), and so does
  // mariabackup --prepare. Elsewhere freed pages keep their bytes.
  Status PunchFreedPages() {
    std::map<uint32_t, std::vector<uint32_t>> by_space;
    for (uint64_t key : check_.freed_at_end) {
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

  // Every tablespace whose size the log writes, not only those this run
  // wrote pages of: a run killed after it wrote page 0 and run again skips
  // that page by its LSN, and the file must still grow.
  Status ExtendFiles() {
    std::vector<uint8_t> page(65536);
    std::set<uint32_t> ids = touched_;
    ids.insert(check_.sized.begin(), check_.sized.end());
    for (uint32_t id : ids) {
      const Space* s = catalog_.Find(id);
      if (s == nullptr || !s->flags_known) continue;
      XBAK_ASSIGN_OR_RETURN(SpaceFiles f, OpenSpace(o_.dir, *s));
      XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(page.data(), s->flags.physical_size, 0));
      if (n < innodb::kFspHeaderEnd) continue;
      const uint64_t want = uint64_t{util::LoadBE32(page.data() + innodb::kFspSize)} * s->flags.physical_size;
      XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
      // A truncated undo tablespace gets exactly the size its page 0 says.
      if (size < want || (trims_.count(id) && size > want)) XBAK_RETURN_IF_ERROR(f.Truncate(want));
    }
    for (const auto& [id, size] : trims_) {
      const Space* s = catalog_.Find(id);
      if (s == nullptr || !s->flags_known) continue;
      util::LogInfo("undo tablespace " + s->rel +
                    " was truncated (innodb_undo_log_truncate) during the backup");
    }
    return Status::Ok();
  }

  RedoApplyStats& stats() { return stats_; }
  bool holding() const { return !batch_.empty(); }
  void set_compression_level(int level) { compression_level_ = level; }

 private:
  // TRIM_PAGES: innodb_undo_log_truncate shrank an undo tablespace and
  // rewrote its first pages. Older records of pages past the new size are
  // void (skipped above, from the first pass's list); the pages the
  // truncation re-creates are initialised again by the log (their older
  // records are skipped by last_init). The file gets exactly the size page
  // 0 says at the end (ExtendFiles). The server truncates the file at the
  // record instead (recv_sys_t::trim), so where the undo tablespace grew
  // again within the log, its pages past the trim that the log does not
  // initialise again hold zeros there and their old bytes here: free pages,
  // never read.
  Status Trim(uint32_t space_id, uint32_t size) {
    Space* s = catalog_.Find(space_id);
    if (s == nullptr) return Status::Ok();
    if (!backupdir::IsUndoTablespaceName(s->rel)) {
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
      XBAK_RETURN_IF_ERROR(catalog_.Resolve(s, frame.data(), frame.size(), page_size_));
      util::LogInfo("creating " + s.rel + " (tablespace " + std::to_string(id) + ") from the redo log");
      XBAK_RETURN_IF_ERROR(util::MakeDirs(util::JoinPath(o_.dir, s.rel.substr(0, s.rel.find('/')))));
    }
    return Status::Ok();
  }

  // Applies the log to one page in `frame` (which it may read from `file`)
  // and returns how many of its bytes go in place (0: none).
  Result<size_t> ApplyPage(const Space& s, uint32_t page_no, const PageLog& pl, const SpaceFiles& file,
                           uint8_t* frame) {
    const size_t fs = s.flags.physical_size;
    const uint64_t off = uint64_t{page_no} * fs;
    if (!pl.skip_read) {
      XBAK_ASSIGN_OR_RETURN(size_t n, file.PRead(frame, fs, off));
      if (n < fs) std::memset(frame + n, 0, fs - n);  // past the end: reads as zeros, as after extension
      // Encrypted pages are decrypted, as the server's read does (the key
      // version field decides; a tablespace the rotation threads are
      // encrypting holds plain and encrypted pages side by side). One that
      // claims a key version but fails its checksum is damaged: applying the
      // log to it and encrypting it again would hide that.
      if (innodb::ClaimsEncryption(frame, s.flags, s.id, page_no)) {
        const uint32_t kv = innodb::PageKeyVersion(frame, s.flags);
        const innodb::PageCheck c = innodb::CheckPage(frame, s.flags, page_no);
        if (c.encrypted) {
          const auto* crypt = catalog_.crypt();
          XBAK_RETURN_IF_ERROR(
              DecryptForApply(s, page_no, frame, crypt ? crypt->mode() : innodb::CryptMode::kCbc));
        } else if (s.crypt || s.flags.full_crc32) {
          return Error(ErrorCode::kCorrupt, PageName(s, page_no) + " has key version " + std::to_string(kv) +
                                                " but is not a valid encrypted page: " +
                                                (c.detail.empty() ? "checksum mismatch" : c.detail));
        }
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
    if (!write) return size_t{0};
    if (s.flags.page_compressed && s.flags.full_crc32) {
      // Written back compressed, as the server's flush does; the checksum is
      // of the compressed bytes only.
      // Recovery writes the 8-byte LSN at 16 and at the page end (so the
      // last 4 bytes are its low half), then the flush copies the low half
      // to the trailer: the frame ends with the low half twice.
      util::StoreBE64(frame + innodb::kFilPageLsn, end);
      util::StoreBE64(frame + fs - 8, end);
      std::memcpy(frame + fs - innodb::kFilPageFcrc32EndLsn, frame + innodb::kFilPageLsn + 4, 4);
      std::vector<uint8_t> out(fs);
      XBAK_ASSIGN_OR_RETURN(
          size_t w, innodb::CompressPageFullCrc32(frame, s.flags, s.id, compression_level_, out.data()));
      if (w > 0) {
        if (Encrypts(s, page_no, out.data())) XBAK_RETURN_IF_ERROR(Encrypt(s, page_no, out.data()));
        // Written up to the file system's block size (zeros after W); what
        // follows keeps its old bytes, which nothing reads (W is in the page
        // type). mariabackup --prepare writes them the same way.
        const size_t blk = file.BlockSize();
        const size_t n = std::min<size_t>(fs, (w + blk - 1) / blk * blk);
        std::memcpy(frame, out.data(), n);
        return n;
      }
    }
    StampLsn(frame, s.flags, end);
    if (Encrypts(s, page_no, frame)) XBAK_RETURN_IF_ERROR(Encrypt(s, page_no, frame));
    return fs;
  }

  // One page of a job, applied and ready to go in place: `len` bytes, in the
  // file `part` of its tablespace at `part_offset`.
  struct Ready {
    const Space* s;
    uint32_t page_no;
    size_t len;
    size_t part;
    uint64_t part_offset;
  };

  // A job's pages (sorted), applied one file open at a time (thousands of
  // tables: no descriptor per table). Without a doublewrite file each page
  // goes in place at once; with one, the job's pages are kept, written there
  // (and synced), and only then in place. Returns how many were written.
  Result<size_t> FlushJob(std::span<const uint64_t> keys, std::atomic<bool>& cancel,
                          std::set<uint32_t>& touched) {
    const size_t stride = page_size_;  // every page's physical size is at most the server's page size
    std::vector<uint8_t> images((doublewrite_ != nullptr ? keys.size() : 1) * stride);
    std::vector<Ready> ready;
    size_t direct = 0;
    std::optional<SpaceFiles> file;
    uint32_t file_space = UINT32_MAX;
    for (uint64_t key : keys) {
      if (cancel.load(std::memory_order_relaxed)) return Error(ErrorCode::kCancelled, "cancelled");
      const uint32_t space_id = static_cast<uint32_t>(key >> 32), page_no = static_cast<uint32_t>(key);
      const Space* s = catalog_.Find(space_id);
      if (s == nullptr || !s->flags_known) continue;  // no page 0 for a deferred space: ignored
      if (s->flags.physical_size > stride) {
        return Error(ErrorCode::kCorrupt, s->rel + ": pages of " + std::to_string(s->flags.physical_size) +
                                              " bytes in a server of " + std::to_string(stride) +
                                              "-byte pages");
      }
      if (space_id != file_space) {
        XBAK_ASSIGN_OR_RETURN(SpaceFiles f, OpenSpace(o_.dir, *s));
        file.emplace(std::move(f));
        file_space = space_id;
      }
      uint8_t* frame = images.data() + (doublewrite_ != nullptr ? ready.size() * stride : 0);
      if (o_.ignore_corrupt_pages && Skipped(key)) continue;
      Result<size_t> applied = ApplyPage(*s, page_no, batch_.pages.at(key), *file, frame);
      if (!applied.ok() && applied.status().code() == ErrorCode::kCorrupt && o_.ignore_corrupt_pages) {
        util::LogWarning(applied.status().message() + "; left as it was (--innodb-force-recovery)");
        std::lock_guard<std::mutex> l(skipped_mu_);
        skipped_.insert(key);
        continue;
      }
      XBAK_ASSIGN_OR_RETURN(size_t len, std::move(applied));
      if (len == 0) continue;
      touched.insert(space_id);
      const uint64_t off = uint64_t{page_no} * s->flags.physical_size;
      if (doublewrite_ == nullptr) {
        XBAK_RETURN_IF_ERROR(file->PWrite(frame, len, off));
        direct++;
      } else {
        const auto [part, part_offset] = file->Locate(off);
        ready.push_back({s, page_no, len, part, part_offset});
      }
    }
    if (doublewrite_ == nullptr || ready.empty()) return direct;
    return WriteThroughDoublewrite(ready, images, stride);
  }

  Result<size_t> WriteThroughDoublewrite(const std::vector<Ready>& ready, const std::vector<uint8_t>& images,
                                         size_t stride) {
    std::vector<PageImage> pages;
    pages.reserve(ready.size());
    for (size_t i = 0; i < ready.size(); i++) {
      const Ready& r = ready[i];
      pages.push_back({.rel = r.part == 0 ? r.s->rel : r.s->more.at(r.part - 1),
                       .space_rel = r.s->rel,
                       .space_id = r.s->id,
                       .offset = r.part_offset,
                       .bytes = std::span<const uint8_t>(images.data() + i * stride, r.len)});
    }
    XBAK_ASSIGN_OR_RETURN(const size_t slot, doublewrite_->Acquire());
    // Released once every page is in place; abandoned when a write in place
    // fails (it may have torn a page whose only whole copy is the slot's).
    struct SlotGuard {
      Doublewrite& d;
      size_t slot;
      bool writing_in_place = false;
      ~SlotGuard() { writing_in_place ? d.Abandon(slot) : d.Release(slot); }
    } guard{*doublewrite_, slot};
    XBAK_RETURN_IF_ERROR(doublewrite_->Write(slot, pages));
    guard.writing_in_place = true;
    std::optional<SpaceFiles> file;
    const Space* file_space = nullptr;
    for (size_t i = 0; i < ready.size(); i++) {
      const Ready& r = ready[i];
      if (r.s != file_space) {
        XBAK_ASSIGN_OR_RETURN(SpaceFiles f, OpenSpace(o_.dir, *r.s));
        file.emplace(std::move(f));
        file_space = r.s;
      }
      const uint64_t off = uint64_t{r.page_no} * r.s->flags.physical_size;
      XBAK_RETURN_IF_ERROR(file->PWrite(images.data() + i * stride, r.len, off));
    }
    guard.writing_in_place = false;
    return ready.size();
  }

  // As the server's flush decides (buf_page_encrypt), from the tablespace's
  // crypt data and the backup's innodb_encrypt_tables.
  bool Encrypts(const Space& s, uint32_t page_no, const uint8_t* frame) const {
    return s.crypt && catalog_.crypt() != nullptr &&
           innodb::EncryptsOnWrite(*s.crypt, catalog_.crypt()->encrypt_tables()) &&
           innodb::PageTypeMayEncrypt(frame, s.flags, s.id, page_no);
  }

  bool Skipped(uint64_t key) {
    std::lock_guard<std::mutex> l(skipped_mu_);
    return skipped_.count(key) != 0;
  }

  Status Encrypt(const Space& s, uint32_t page_no, uint8_t* frame) {
    if (!s.key) return Error(ErrorCode::kInternal, PageName(s, page_no) + ": no key to encrypt it with");
    Status st = innodb::EncryptPage(frame, s.flags, s.id, 1, *s.key, catalog_.crypt()->mode());
    return st.ok() ? st : st.With(PageName(s, page_no));
  }

  const RedoApplyOptions& o_;
  Catalog& catalog_;
  uint32_t page_size_;
  int compression_level_ = 6;  // innodb_compression_level of the backup (PAGE_COMPRESSED, zlib)
  uint64_t batch_log_start_ = 0;
  const LogCheck& check_;        // the first pass over the log
  const PageSetPtr superseded_;  // RedoApplyOptions::superseded's answer
  Batch batch_;
  RedoApplyStats stats_;
  std::set<uint32_t> touched_;
  std::map<uint32_t, uint32_t> trims_;
  Doublewrite* doublewrite_ = nullptr;  // RedoApplyOptions::doublewrite
  // RedoApplyOptions::ignore_corrupt_pages: pages left as they were, never written by a later batch
  // either (its records would go onto the page's old bytes and stamp them valid).
  std::mutex skipped_mu_;
  std::set<uint64_t> skipped_;
};

// Unsupported tablespaces, and encrypted ones without their keys, are
// refused before anything is written; the same pass over the files builds
// the catalog.
Status BuildCatalog(const RedoApplyOptions& o, const backupdir::BackupCnf& cnf, const LogCheck& check,
                    Catalog& catalog) {
  const uint32_t page_size = cnf.page_size;
  const std::vector<std::string>& system = cnf.system_files;
  XBAK_RETURN_IF_ERROR(catalog.CheckLogSpaces(check.log_flags));
  XBAK_RETURN_IF_ERROR(catalog.Scan(o.dir, page_size, system, o.parallel, Catalog::ScanMode::kCheckAndBuild));
  if (o.before_write) {
    XBAK_RETURN_IF_ERROR(o.before_write());
    // The DDL markers it installs move files (a .new becomes the .ibd, a
    // .ren renames one, a .del removes one): the catalog must name the files
    // as they are now. Backups without markers keep the one pass.
    if (catalog.saw_ddl_markers())
      XBAK_RETURN_IF_ERROR(catalog.Rebuild(o.dir, page_size, system, o.parallel));
  }
  catalog.AddDeferred(o.dir, check.names, o.filter);
  return Status::Ok();
}

// Pass 2: hands every mini-transaction pass 1 checked to the applier, which
// applies them in batches.
Status ApplyMtrs(LogScanner& scanner, Applier& applier, util::Progress& progress, uint64_t end_lsn) {
  uint64_t end2 = 0;
  std::string why2;
  return scanner.Scan(
      [&](const MtrView& m) -> Status {
        progress.AddDone(m.end_lsn - m.start_lsn);
        const uint64_t batches = applier.stats().batches;
        Status st = applier.AddMtr(m);
        // Applied, or never held: not needed any more (for an encrypted log,
        // its decrypted copy is freed).
        if (applier.stats().batches != batches || !applier.holding()) scanner.Release(m.start_lsn);
        return st;
      },
      &end2, &why2, end_lsn);  // what appeared since pass 1 is not ours
}

}  // namespace

Result<RedoApplyStats> ApplyRedoLog(const RedoApplyOptions& o) {
  RaiseOpenFileLimit();
  const std::string log_path = util::JoinPath(o.log_dir.empty() ? o.dir : o.log_dir, "ib_logfile0");
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf cnf, backupdir::ReadBackupCnf(o.dir));
  const uint32_t page_size = cnf.page_size;
  XBAK_ASSIGN_OR_RETURN(auto crypt, PrepareCrypt::Load(o.dir, o.keys));
  XBAK_ASSIGN_OR_RETURN(auto scanner_ptr, LogScanner::Open(log_path, crypt.get()));
  LogScanner& scanner = *scanner_ptr;
  // The first pass, unless CheckRedoApplicable made it on this very log (an
  // incremental's apply checks its log before its deltas go in).
  const CheckedLog* prior = o.checked.get();
  if (!IsPassOver(prior, log_path, o.required_lsn, page_size) ||
      prior->checkpoint_lsn != scanner.checkpoint().checkpoint_lsn) {
    prior = nullptr;
  }
  LogCheck fresh;
  if (prior == nullptr) {
    XBAK_ASSIGN_OR_RETURN(fresh, CheckLog(o, log_path, page_size, scanner));
    scanner.Rewind();
  }
  const LogCheck& check = prior != nullptr ? prior->check : fresh;
  // A run of this same apply was stopped: its pages in the doublewrite file
  // go back in place whole first (a torn page 0 would not even be read).
  const DoublewriteTag tag{scanner.checkpoint().checkpoint_lsn, check.end_lsn};
  if (o.doublewrite) {
    XBAK_ASSIGN_OR_RETURN(size_t back, RestoreDoublewrite(o.dir, tag));
    if (back != 0) {
      util::LogInfo(std::to_string(back) + " page(s) of an interrupted run of this apply written back from " +
                    util::JoinPath(o.dir, kDoublewriteFile));
    }
  }
  Catalog catalog(crypt, check.log_crypt);
  XBAK_RETURN_IF_ERROR(BuildCatalog(o, cnf, check, catalog));
  PageSetPtr superseded;
  // Not asked when no record changes a page (a flushed server's backup): the answer (every
  // delta's pages, read from a cold disk) would skip nothing, and cost 1.5 s of a 20,000-table
  // restore's 12.
  if (o.superseded && check.page_records > 0) {
    XBAK_ASSIGN_OR_RETURN(superseded, o.superseded(check.ddl));
  }
  const FileNames& names = check.names;
  const uint64_t end_lsn = check.end_lsn;

  util::Progress progress("prepare", o.progress_interval);
  progress.AddTotal(end_lsn - scanner.checkpoint().checkpoint_lsn, 0);
  Applier applier(o, catalog, page_size, check, std::move(superseded));
  applier.set_compression_level(cnf.compression_level);
  std::unique_ptr<Doublewrite> doublewrite;
  if (o.doublewrite) {
    XBAK_ASSIGN_OR_RETURN(doublewrite,
                          Doublewrite::Create(o.dir, tag, static_cast<size_t>(std::max(o.parallel, 1)),
                                              kPagesPerJob, page_size));
    applier.set_doublewrite(doublewrite.get());
  }
  XBAK_RETURN_IF_ERROR(ApplyMtrs(scanner, applier, progress, end_lsn));
  XBAK_RETURN_IF_ERROR(applier.Flush());
  XBAK_RETURN_IF_ERROR(applier.PunchFreedPages());
  XBAK_RETURN_IF_ERROR(applier.ExtendFiles());
  XBAK_RETURN_IF_ERROR(RenameAsTheLogSays(o.dir, names, catalog));
  XBAK_RETURN_IF_ERROR(RemoveDroppedFiles(o.dir, names));
  if (doublewrite) {
    // The copies go only once every page is on disk: a power loss after
    // this point finds no file and nothing torn (the next run on a later
    // boot must not find this step's pages half written without it).
    XBAK_RETURN_IF_ERROR(util::SyncFilesystem(o.dir));
    XBAK_RETURN_IF_ERROR(doublewrite->Remove());
  }
  progress.Finish(true);

  RedoApplyStats st = applier.stats();
  st.checkpoint_lsn = scanner.checkpoint().checkpoint_lsn;
  st.end_lsn = end_lsn;
  st.recorded_binlog = RecordedBinlogIfNeeded(o.dir, catalog, page_size);
  return st;
}

}  // namespace xbak::prepare
