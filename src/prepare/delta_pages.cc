#include "xbak/prepare/delta_pages.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/prepare/applied_delta.h"
#include "xbak/prepare/delta_apply.h"
#include "xbak/util/file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"

namespace xbak::prepare {
namespace {

// The pages of one delta, in its tablespace, into `set` a block at a time
// (under `mu`: bounded memory whatever the deltas' size): each block's slot
// 0 is read, its page images skipped.
Status AddDeltaPages(const DeltaJob& j, uint32_t first_page, PageSet* set, std::mutex* mu) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(j.delta));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  const uint32_t ps = j.meta.page_size;
  std::vector<uint8_t> slot0(ps);
  uint64_t off = 0;
  while (off < size) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(slot0.data(), ps, off));
    if (n != ps) {
      return Error(ErrorCode::kCorrupt,
                   j.delta + ": a block header cut short at byte " + std::to_string(off));
    }
    auto h = innodb::ParseDeltaBlockHeader(slot0.data(), ps);
    if (!h.ok()) return h.status().With(j.delta + ": the block at byte " + std::to_string(off));
    {
      std::lock_guard<std::mutex> l(*mu);
      for (uint32_t no : h->page_nos) set->Add(j.meta.space_id, no + first_page);
    }
    off += (1 + uint64_t{h->page_nos.size()}) * ps;
    if (h->last) break;
  }
  return Status::Ok();
}

// A delta written as its stream arrived: its pages are in the file of its
// tablespace already, whatever the markers do with that file next, and a
// record of the step before must not touch them (one that re-initialises a
// page would not even read it). So all of them, even for a void delta.
Status AddAppliedPages(const DeltaJob& j, PageSet* set, std::mutex* mu) {
  XBAK_ASSIGN_OR_RETURN(std::string bytes, util::ReadSmallFile(j.delta, size_t{1} << 32));
  XBAK_ASSIGN_OR_RETURN(AppliedDelta d, ParseAppliedDelta(bytes, j.delta));
  std::lock_guard<std::mutex> l(*mu);
  for (uint32_t no : d.pages) set->Add(d.space_id, no);
  return Status::Ok();
}

}  // namespace

Result<PageSetPtr> DeltaPages(const std::string& inc, int parallel, bool applied_records) {
  XBAK_ASSIGN_OR_RETURN(IncScan scan, ScanIncremental(inc, parallel, applied_records));
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf cnf, backupdir::ReadBackupCnf(inc));
  auto set = std::make_shared<PageSet>();
  std::mutex mu;
  // Each delta's first block header asked of the disk ahead of the threads:
  // read one at a time, 20,000 small deltas kept a cold restore waiting 3 s.
  std::vector<util::PrefetchRange> heads;
  heads.reserve(scan.deltas.size());
  for (const DeltaJob& j : scan.deltas) heads.push_back({j.delta, j.meta.page_size});
  util::Prefetcher ahead(std::move(heads));
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(util::RunParallel(
      scan.deltas.size(), parallel,
      [&](size_t i) -> Status {
        const DeltaJob& j = scan.deltas[i];
        if (j.applied) return AddAppliedPages(j, set.get(), &mu);
        // Not applied, or applied under another name (DeltaJob::is_void,
        // target): nothing certain.
        if (j.is_void || j.target != j.rel) return Status::Ok();
        const uint32_t first_page =
            backupdir::LaterSystemFileFirstPage(cnf.system_files, cnf.system_first_page, j.rel).value_or(0);
        return AddDeltaPages(j, first_page, set.get(), &mu);
      },
      &cancel));
  return PageSetPtr(std::move(set));
}

}  // namespace xbak::prepare
