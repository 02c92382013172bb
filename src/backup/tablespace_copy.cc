#include "xbak/backup/tablespace_copy.h"

#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::backup {
namespace {

constexpr size_t kBatchBytes = 4 << 20;  // 4 MiB per read: few syscalls, bounded memory per thread

}  // namespace

Status CopyTablespace(const backupdir::SourceFile& src, const std::string& dest_rel, sink::Sink& sink,
                      util::Progress& progress, const TablespaceCopyOptions& opts,
                      TablespaceCopyResult* result) {
  *result = TablespaceCopyResult{};
  auto opened = util::File::OpenRead(src.path);
  if (!opened.ok()) {
    if (opened.status().code() == ErrorCode::kNotFound) {
      result->vanished = true;  // DROP TABLE during the backup; the redo log records it
      return Status::Ok();
    }
    return opened.status().With("cannot read the datadir");
  }
  util::File in = std::move(opened).value();
  util::AdviseSequential(in);

  // Learn the physical page size and checksum format from page 0.
  std::vector<uint8_t> first(opts.page_size);
  XBAK_ASSIGN_OR_RETURN(size_t got, in.PRead(first.data(), first.size(), 0));
  bool known_flags = false;
  innodb::SpaceFlags flags{};
  uint32_t phys = opts.page_size;
  // Takes the format from page 0, whose first opts.page_size bytes are at
  // `p`. A header that does not parse may be caught while the server writes
  // it: it is read into `p` again, as a torn page is.
  auto learn_from_page0 = [&](uint8_t* p) -> Status {
    auto hdr = innodb::ParseSpaceHeader(p, opts.page_size);
    for (int attempt = 1; !hdr.ok() && attempt <= opts.max_retries; attempt++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
      XBAK_RETURN_IF_ERROR(in.PRead(p, opts.page_size, 0).status());
      hdr = innodb::ParseSpaceHeader(p, opts.page_size);
      result->retried_pages++;
    }
    if (!hdr.ok()) {
      return Error(ErrorCode::kCorrupt, src.path + " page 0: " + hdr.status().message() +
                                            ", still bad after " + std::to_string(opts.max_retries) +
                                            " re-reads");
    }
    flags = hdr->flags;
    known_flags = true;
    result->space_id = hdr->space_id;
    result->flags = flags.raw;
    phys = flags.physical_size;
    return Status::Ok();
  };
  if (opts.first_page_no != 0) {
    // ibdata2, ibdata3...: no header page of their own.
    XBAK_ASSIGN_OR_RETURN(flags, innodb::DecodeSpaceFlags(opts.system_flags));
    known_flags = true;
  } else if (got == first.size() && innodb::HasPage0(first.data(), got)) {
    XBAK_RETURN_IF_ERROR(learn_from_page0(first.data()));
  } else {
    // Page 0 not flushed yet (a table created moments ago: the server keeps
    // it dirty in the buffer pool). mariabackup re-reads such a page for
    // ~11 ms per file; we copy it as it is: its creation (FILE_CREATE and the
    // page-0 initialisation) is after the checkpoint, so it is in the redo
    // log we copy, and recovery rebuilds page 0 from there.
    result->deferred = true;
    if (opts.incremental) {
      // Its .meta would need a space id we cannot know yet; the caller copies
      // it whole as a ".new" file instead, as mariabackup does.
      return Status::Ok();
    }
  }

  if (opts.after_first_read) opts.after_first_read();

  std::unique_ptr<sink::SinkFile> out;
  std::unique_ptr<innodb::DeltaWriter> delta;
  if (opts.incremental) {
    if (opts.meta_sink == nullptr) return Error(ErrorCode::kInternal, "incremental copy without a meta sink");
    innodb::DeltaMeta meta{phys, flags.zip() ? phys : 0, result->space_id};
    XBAK_ASSIGN_OR_RETURN(auto mf, opts.meta_sink->Create(dest_rel + ".meta"));
    std::string text = innodb::FormatDeltaMeta(meta);
    XBAK_RETURN_IF_ERROR(mf->Write(text.data(), text.size()));
    XBAK_RETURN_IF_ERROR(mf->Close());
    XBAK_ASSIGN_OR_RETURN(out, sink.Create(dest_rel + ".delta"));
    sink::SinkFile* o = out.get();
    delta = std::make_unique<innodb::DeltaWriter>(phys,
                                                  [o](const uint8_t* d, size_t n) { return o->Write(d, n); });
  } else {
    XBAK_ASSIGN_OR_RETURN(out, sink.Create(dest_rel));
  }
  size_t batch_pages = std::max<size_t>(1, kBatchBytes / phys);
  std::vector<uint8_t> buf(batch_pages * phys);
  uint64_t offset = 0;
  for (;;) {
    if (opts.cancel && opts.cancel->load(std::memory_order_relaxed)) {
      return Error(ErrorCode::kCancelled, "cancelled");
    }
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.data(), buf.size(), offset));
    // Charged what was read (after the read: the shared clock still holds
    // the rate), so a small file costs its size, not a whole buffer.
    if (opts.throttle != nullptr) opts.throttle->Take(n);
    util::AdviseDone(in, offset, n);
    if (!known_flags && offset == 0 && n >= opts.page_size && innodb::HasPage0(buf.data(), n)) {
      // Page 0 reached the disk since it was first read (the server flushed
      // the new table meanwhile): learn the format from it and read again.
      // Guessing on would check a ROW_FORMAT=COMPRESSED table's smaller
      // pages two at a time as one page of innodb_page_size, which fails.
      XBAK_RETURN_IF_ERROR(learn_from_page0(buf.data()));
      result->deferred = false;
      batch_pages = std::max<size_t>(1, kBatchBytes / phys);
      buf.assign(batch_pages * phys, 0);
      continue;
    }
    size_t whole = n - n % phys;
    if (whole != n) {
      // The file is being extended: the tail page is not complete. Pages past
      // this point are recreated from the redo log at prepare.
      util::LogWarning(src.path + ": ignoring " + std::to_string(n - whole) +
                       " bytes of an incomplete page at offset " + std::to_string(offset + whole));
    }
    for (size_t i = 0; i < whole / phys; i++) {
      uint8_t* page = buf.data() + i * phys;
      uint64_t rel_page = offset / phys + i;
      uint32_t page_no = static_cast<uint32_t>(opts.first_page_no + rel_page);
      if (opts.is_system && innodb::InDoublewriteArea(0, page_no, opts.page_size)) continue;
      auto check = [&]() {
        return known_flags ? innodb::CheckPage(page, flags, page_no)
                           : innodb::CheckPageOfUnknownFormat(page, phys, page_no);
      };
      innodb::PageCheck c = check();
      for (int attempt = 1; c.verdict == innodb::PageVerdict::kCorrupt && attempt <= opts.max_retries;
           attempt++) {
        // A torn read of a page the server is writing right now: wait a little
        // and read this one page again.
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
        XBAK_ASSIGN_OR_RETURN(size_t r, in.PRead(page, phys, offset + i * phys));
        if (r != phys) break;
        c = check();
        result->retried_pages++;
      }
      if (c.verdict == innodb::PageVerdict::kCorrupt) {
        return Error(ErrorCode::kCorrupt,
                     "corrupt page in " + src.path + ": page " + std::to_string(page_no) + " (byte offset " +
                         std::to_string(offset + i * phys) + "): " + c.detail + ", still bad after " +
                         std::to_string(opts.max_retries) + " re-reads");
      }
    }
    if (whole > 0 && delta) {
      for (size_t i = 0; i < whole / phys; i++) {
        const uint8_t* page = buf.data() + i * phys;
        uint32_t page_no = static_cast<uint32_t>(opts.first_page_no + offset / phys + i);
        if (innodb::PageLsn(page) <= opts.incremental_lsn) continue;
        if (opts.is_system && page_no == 5) {
          // TRX_SYS: mariabackup refuses too; its layout depends on the undo
          // tablespace configuration, which must not change within a chain.
          return Error(
              ErrorCode::kUnsupported,
              "the TRX_SYS page of the system tablespace changed since the base backup (the server was "
              "restarted with a different innodb_undo_tablespaces?); take a new full backup");
        }
        // A delta numbers pages within its file (ibdata2.delta from 0), as
        // mariabackup writes and applies them.
        XBAK_RETURN_IF_ERROR(delta->AddPage(static_cast<uint32_t>(page_no - opts.first_page_no), page)
                                 .With("writing " + dest_rel + ".delta"));
        result->delta_pages++;
      }
    }
    if (whole > 0) {
      if (!delta) {
        XBAK_RETURN_IF_ERROR(
            out->Write(buf.data(), whole).With("writing " + dest_rel + " to " + sink.Describe()));
      }
      ::posix_fadvise(in.fd(), static_cast<off_t>(offset), static_cast<off_t>(whole), POSIX_FADV_DONTNEED);
      progress.AddDone(whole);
      result->pages += whole / phys;
      offset += whole;
    }
    if (n < buf.size()) break;
  }
  if (delta) XBAK_RETURN_IF_ERROR(delta->Finish().With("writing " + dest_rel + ".delta"));
  XBAK_RETURN_IF_ERROR(out->Close().With("closing " + dest_rel));
  progress.FileDone();
  return Status::Ok();
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
  util::AdviseSequential(in);
  XBAK_ASSIGN_OR_RETURN(auto out, sink.Create(dest_rel));
  std::vector<uint8_t> buf(1 << 20);
  uint64_t off = 0;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.data(), buf.size(), off));
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

}  // namespace xbak::backup
