#include "xbak/backup/tablespace_copy.h"

#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::backup {
namespace {

constexpr size_t kBatchBytes = 4 << 20;  // 4 MiB per read: few syscalls, bounded memory per thread

// A read buffer left uninitialized: every byte used is read first, and zeroing
// 4 MiB per file was a sixth of a 20,000-table backup's time.
class Batch {
 public:
  explicit Batch(size_t n) : data_(std::make_unique_for_overwrite<uint8_t[]>(n)), size_(n) {}
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_;
};

// One tablespace file's copy, one method per step: open it, learn its page
// format from page 0, open the output (the file itself, or .delta + .meta),
// then read it in batches whose every page is checked (and, incremental, the
// changed ones written to the .delta).
class TablespaceCopy {
 public:
  TablespaceCopy(util::File in, const backupdir::SourceFile& src, const std::string& dest_rel,
                 sink::Sink& sink, util::Progress& progress, const TablespaceCopyOptions& opts,
                 TablespaceCopyResult* result)
      : in_(std::move(in)),
        src_(src),
        dest_rel_(dest_rel),
        sink_(sink),
        progress_(progress),
        opts_(opts),
        result_(result) {}

  Status Run() {
    if (src_.size > kBatchBytes) util::AdviseSequential(in_);  // one read does a smaller file
    bool done = false;
    XBAK_RETURN_IF_ERROR(ReadFormat(&done));
    if (done) return Status::Ok();
    if (opts_.after_first_read) opts_.after_first_read();
    XBAK_RETURN_IF_ERROR(OpenOutput());
    XBAK_RETURN_IF_ERROR(CopyPages());
    if (delta_) XBAK_RETURN_IF_ERROR(delta_->Finish().With("writing " + dest_rel_ + ".delta"));
    XBAK_RETURN_IF_ERROR(out_->Close().With("closing " + dest_rel_));
    progress_.FileDone();
    return Status::Ok();
  }

 private:
  // Learns the physical page size and checksum format from page 0, or from
  // the system tablespace's flags for ibdata2...; `skip` when there is
  // nothing to copy now (see below).
  Status ReadFormat(bool* skip) {
    std::vector<uint8_t> first(opts_.page_size);
    XBAK_ASSIGN_OR_RETURN(size_t got, in_.PRead(first.data(), first.size(), 0));
    if (opts_.first_page_no != 0) {
      // ibdata2, ibdata3...: no header page of their own.
      XBAK_ASSIGN_OR_RETURN(flags_, innodb::DecodeSpaceFlags(opts_.system_flags));
      known_flags_ = true;
    } else if (got == first.size() && innodb::HasPage0(first.data(), got)) {
      XBAK_RETURN_IF_ERROR(LearnFromPage0(first.data()));
    } else {
      // Page 0 not flushed yet (a table created moments ago: the server keeps
      // it dirty in the buffer pool). mariabackup re-reads such a page for
      // ~11 ms per file; we copy it as it is: its creation (FILE_CREATE and the
      // page-0 initialisation) is after the checkpoint, so it is in the redo
      // log we copy, and recovery rebuilds page 0 from there.
      result_->deferred = true;
      // An incremental's .meta would need a space id we cannot know yet; the
      // caller copies the file whole as a ".new" file instead, as mariabackup does.
      *skip = opts_.incremental;
    }
    return Status::Ok();
  }

  // Takes the format from page 0, whose first page_size bytes are at `p`. A
  // header that does not parse may be caught while the server writes it: it
  // is read into `p` again, as a torn page is.
  Status LearnFromPage0(uint8_t* p) {
    auto hdr = innodb::ParseSpaceHeader(p, opts_.page_size);
    for (int attempt = 1; !hdr.ok() && attempt <= opts_.max_retries; attempt++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
      XBAK_RETURN_IF_ERROR(in_.PRead(p, opts_.page_size, 0).status());
      hdr = innodb::ParseSpaceHeader(p, opts_.page_size);
      result_->retried_pages++;
    }
    if (!hdr.ok()) {
      return Error(ErrorCode::kCorrupt, src_.path + " page 0: " + hdr.status().message() +
                                            ", still bad after " + std::to_string(opts_.max_retries) +
                                            " re-reads");
    }
    flags_ = hdr->flags;
    known_flags_ = true;
    if (opts_.keys != nullptr && !flags_.full_crc32) crypt_ = innodb::ReadCryptData(p, flags_);
    result_->space_id = hdr->space_id;
    result_->flags = flags_.raw;
    phys_ = flags_.physical_size;
    return Status::Ok();
  }

  // The file itself, or for an incremental DEST.meta (written at once) and DEST.delta.
  Status OpenOutput() {
    if (!opts_.incremental) {
      XBAK_ASSIGN_OR_RETURN(out_, sink_.Create(dest_rel_));
      return Status::Ok();
    }
    if (opts_.meta_sink == nullptr)
      return Error(ErrorCode::kInternal, "incremental copy without a meta sink");
    innodb::DeltaMeta meta{phys_, flags_.zip() ? phys_ : 0, result_->space_id};
    XBAK_ASSIGN_OR_RETURN(auto mf, opts_.meta_sink->Create(dest_rel_ + ".meta"));
    std::string text = innodb::FormatDeltaMeta(meta);
    XBAK_RETURN_IF_ERROR(mf->Write(text.data(), text.size()));
    XBAK_RETURN_IF_ERROR(mf->Close());
    XBAK_ASSIGN_OR_RETURN(out_, sink_.Create(dest_rel_ + ".delta"));
    sink::SinkFile* o = out_.get();
    delta_ = std::make_unique<innodb::DeltaWriter>(
        phys_, [o](const uint8_t* d, size_t n) { return o->Write(d, n); });
    return Status::Ok();
  }

  Status CopyPages() {
    Batch buf(BatchBytes());
    std::vector<util::File::Span> spans;
    uint64_t offset = 0;
    for (;;) {
      if (opts_.cancel && opts_.cancel->load(std::memory_order_relaxed)) {
        return Error(ErrorCode::kCancelled, "cancelled");
      }
      // Preallocated space (InnoDB extends a tablespace with fallocate) is neither read nor
      // checked: reading it had the kernel zero-fill page cache for it, and zero-filling and
      // scanning it here took a fifth of a full backup's CPU where it was most of the files.
      size_t read = 0;
      XBAK_ASSIGN_OR_RETURN(size_t n, in_.PReadSpans(buf.data(), buf.size(), offset, phys_, &spans, &read));
      // Charged what was read from the disk (after the read: the shared clock
      // still holds the rate), so a small file costs its size, not a whole
      // buffer, and preallocated space nothing.
      if (opts_.throttle != nullptr) opts_.throttle->Take(read);
      if (!known_flags_ && offset == 0 && !spans.empty() && spans[0].begin == 0 &&
          spans[0].end >= opts_.page_size && innodb::HasPage0(buf.data(), spans[0].end)) {
        // Page 0 reached the disk since it was first read (the server flushed
        // the new table meanwhile): learn the format from it and read again.
        // Guessing on would check a ROW_FORMAT=COMPRESSED table's smaller
        // pages two at a time as one page of innodb_page_size, which fails.
        XBAK_RETURN_IF_ERROR(LearnFromPage0(buf.data()));
        result_->deferred = false;
        buf = Batch(BatchBytes());
        continue;
      }
      size_t whole = n - n % phys_;
      if (whole != n) {
        // The file is being extended: the tail page is not complete. Pages past
        // this point are recreated from the redo log at prepare.
        util::LogWarning(src_.path + ": ignoring " + std::to_string(n - whole) +
                         " bytes of an incomplete page at offset " + std::to_string(offset + whole));
      }
      size_t at = 0;  // spans are page-aligned (but for the file's end, cut at `whole`)
      for (const util::File::Span& sp : spans) {
        const size_t b = std::min(sp.begin, whole), e = std::min(sp.end, whole);
        XBAK_RETURN_IF_ERROR(Zeros(b - at));
        XBAK_RETURN_IF_ERROR(Pages(buf.data() + b, e - b, offset + b));
        at = e;
      }
      XBAK_RETURN_IF_ERROR(Zeros(whole - at));
      // What was read leaves the page cache (as XtraBackup's reads do): the host's cache stays the server's.
      if (!spans.empty())
        util::AdviseDone(in_, offset + spans.front().begin, spans.back().end - spans.front().begin);
      progress_.AddDone(whole);
      result_->pages += whole / phys_;
      offset += whole;
      if (n < buf.size()) return Status::Ok();
      if (buf.size() < FullBatchBytes()) buf = Batch(FullBatchBytes());  // it grew since it was listed
    }
  }

  // `n` bytes of pages read at file offset `offset`: checked, then copied
  // (full) or the changed ones put in the .delta (incremental).
  Status Pages(uint8_t* p, size_t n, uint64_t offset) {
    if (n == 0) return Status::Ok();
    XBAK_RETURN_IF_ERROR(CheckPages(p, n, offset));
    if (delta_) return AddChangedPages(p, n, offset);
    return out_->Write(p, n).With("writing " + dest_rel_ + " to " + sink_.Describe());
  }

  // `n` bytes that read as zeros: all-zero pages, valid and never changed
  // since any base (their LSN is 0).
  Status Zeros(size_t n) {
    if (n == 0 || delta_) return Status::Ok();
    return out_->WriteZeros(n).With("writing " + dest_rel_ + " to " + sink_.Describe());
  }

  // A batch of whole pages: kBatchBytes, or less for a smaller file (with
  // 20,000 small tables, a 4 MiB buffer each cost more CPU than the copy):
  // one page more than it had when listed, so that one short read copies it.
  // A file that grew since is read on until a short read.
  size_t FullBatchBytes() const { return std::max<size_t>(1, kBatchBytes / phys_) * phys_; }
  size_t BatchBytes() const {
    const uint64_t pages = src_.size / phys_ + 1;
    return static_cast<size_t>(std::min<uint64_t>(FullBatchBytes(), pages * phys_));
  }

  // Every page of a batch (`n` bytes read at file offset `offset`) checked in
  // its tablespace's format; one that fails is read again, alone, up to
  // max_retries times: the server may be writing it at this instant.
  Status CheckPages(uint8_t* batch, size_t n, uint64_t offset) {
    for (size_t i = 0; i < n / phys_; i++) {
      uint8_t* page = batch + i * phys_;
      uint32_t page_no = static_cast<uint32_t>(opts_.first_page_no + offset / phys_ + i);
      if (opts_.is_system && innodb::InDoublewriteArea(0, page_no, opts_.page_size)) continue;
      auto check = [&]() {
        innodb::PageCheck c = known_flags_ ? innodb::CheckPage(page, flags_, page_no)
                                           : innodb::CheckPageOfUnknownFormat(page, phys_, page_no);
        return c.verdict == innodb::PageVerdict::kCorrupt ? c : CheckDecrypted(page, page_no, c);
      };
      innodb::PageCheck c = check();
      for (int attempt = 1; c.verdict == innodb::PageVerdict::kCorrupt && attempt <= opts_.max_retries;
           attempt++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
        XBAK_ASSIGN_OR_RETURN(size_t r, in_.PRead(page, phys_, offset + i * phys_));
        if (r != phys_) break;
        c = check();
        result_->retried_pages++;
      }
      if (c.verdict == innodb::PageVerdict::kCorrupt) {
        return Error(ErrorCode::kCorrupt,
                     // "Database page corruption detected": mariabackup's words, which scripts grep for.
                     "Database page corruption detected in " + src_.path + ": page " +
                         std::to_string(page_no) + " (byte offset " + std::to_string(offset + i * phys_) +
                         "): " + c.detail + ", still bad after " + std::to_string(opts_.max_retries) +
                         " re-reads");
      }
    }
    return Status::Ok();
  }

  // --extended-validation: an encrypted page (of the formats before
  // full_crc32) decrypted, and its plain content checked; `c` otherwise.
  innodb::PageCheck CheckDecrypted(const uint8_t* page, uint32_t page_no, const innodb::PageCheck& c) {
    if (!crypt_ || page_no == 0) return c;
    const uint32_t key_version = util::LoadBE32(page + 26);  // FIL_PAGE_FILE_FLUSH_LSN_OR_KEY_VERSION
    if (key_version == 0) return c;
    auto key = opts_.keys->keys.Get(crypt_->key_id, key_version);
    if (!key.ok()) return c;  // a key this key file does not hold: nothing more to check
    auto aes = innodb::DeriveKey(**key, crypt_->iv.data());
    if (!aes.ok()) return c;
    plain_.assign(page, page + phys_);
    Status st = innodb::DecryptPage(plain_.data(), flags_, result_->space_id, *aes, opts_.keys->mode);
    if (!st.ok()) return c;  // a format DecryptPage does not read (older PAGE_COMPRESSED): checked as stored
    innodb::PageCheck d = innodb::CheckPage(plain_.data(), flags_, page_no);
    if (d.verdict == innodb::PageVerdict::kCorrupt) {
      d.detail =
          "after decryption (--extended-validation; if every encrypted page fails so, the key file "
          "read is not the server's): " +
          d.detail;
    }
    return d;
  }

  // Incremental: the pages of a batch changed after the base's LSN, into the .delta.
  Status AddChangedPages(const uint8_t* batch, size_t n, uint64_t offset) {
    for (size_t i = 0; i < n / phys_; i++) {
      const uint8_t* page = batch + i * phys_;
      uint32_t page_no = static_cast<uint32_t>(opts_.first_page_no + offset / phys_ + i);
      if (innodb::PageLsn(page) <= opts_.incremental_lsn) continue;
      if (opts_.is_system && page_no == 5) {
        // TRX_SYS: mariabackup refuses too; its layout depends on the undo
        // tablespace configuration, which must not change within a chain.
        return Error(
            ErrorCode::kUnsupported,
            "the TRX_SYS page of the system tablespace changed since the base backup (the server was "
            "restarted with a different innodb_undo_tablespaces?); take a new full backup");
      }
      // A delta numbers pages within its file (ibdata2.delta from 0), as
      // mariabackup writes and applies them.
      XBAK_RETURN_IF_ERROR(delta_->AddPage(static_cast<uint32_t>(page_no - opts_.first_page_no), page)
                               .With("writing " + dest_rel_ + ".delta"));
      result_->delta_pages++;
    }
    return Status::Ok();
  }

  util::File in_;
  const backupdir::SourceFile& src_;
  const std::string& dest_rel_;
  sink::Sink& sink_;
  util::Progress& progress_;
  const TablespaceCopyOptions& opts_;
  TablespaceCopyResult* result_;
  innodb::SpaceFlags flags_{};
  bool known_flags_ = false;
  std::optional<innodb::CryptData> crypt_;  // --extended-validation of an encryptable tablespace
  std::vector<uint8_t> plain_;              // a page decrypted for that
  uint32_t phys_ = opts_.page_size;         // the physical page size, once known
  std::unique_ptr<sink::SinkFile> out_;
  std::unique_ptr<innodb::DeltaWriter> delta_;
};

}  // namespace

Status CopyTablespace(const backupdir::SourceFile& src, const std::string& dest_rel, sink::Sink& sink,
                      util::Progress& progress, const TablespaceCopyOptions& opts,
                      TablespaceCopyResult* result) {
  *result = TablespaceCopyResult{};
  auto opened = util::File::OpenRead(src.path);
  if (!opened.ok()) {
    if (opened.status().code() != ErrorCode::kNotFound)
      return opened.status().With("cannot read the datadir");
    result->vanished = true;  // DROP TABLE during the backup; the redo log records it
    return Status::Ok();
  }
  return TablespaceCopy(std::move(opened).value(), src, dest_rel, sink, progress, opts, result).Run();
}

Status CopyPlainFile(const backupdir::SourceFile& src, const std::string& dest_rel, sink::Sink& sink,
                     util::Progress& progress, bool* vanished, util::Throttle* throttle) {
  *vanished = false;
  auto opened = util::File::OpenRead(src.path);
  if (!opened.ok()) {
    if (opened.status().code() == ErrorCode::kNotFound) {
      *vanished = true;
      return Status::Ok();
    }
    return opened.status();
  }
  util::File in = std::move(opened).value();
  // At least one byte more than the file: a file that did not grow is then
  // copied by one short read (20,000 table definitions: a read, and the
  // advice for a sequential read, less per file).
  Batch buf(static_cast<size_t>(std::min<uint64_t>(1 << 20, src.size + 1)));
  if (src.size >= buf.size()) util::AdviseSequential(in);
  XBAK_ASSIGN_OR_RETURN(auto out, sink.Create(dest_rel));
  uint64_t off = 0;
  for (size_t n = buf.size(); n == buf.size();) {
    XBAK_ASSIGN_OR_RETURN(n, in.PRead(buf.data(), buf.size(), off));
    if (n == 0) break;
    if (throttle != nullptr) throttle->Take(n);
    util::AdviseDone(in, off, n);
    XBAK_RETURN_IF_ERROR(out->Write(buf.data(), n).With("writing " + dest_rel + " to " + sink.Describe()));
    progress.AddDone(n);
    off += n;
  }
  XBAK_RETURN_IF_ERROR(out->Close().With("closing " + dest_rel));
  progress.FileDone();
  return Status::Ok();
}

std::unique_ptr<util::Prefetcher> ReadAhead(const std::vector<const backupdir::SourceFile*>& files) {
  std::vector<util::PrefetchRange> ranges;
  ranges.reserve(files.size());
  for (const backupdir::SourceFile* f : files) ranges.push_back({f->path, f->size});
  return util::PrefetchWholeFiles(std::move(ranges));
}

}  // namespace xbak::backup
