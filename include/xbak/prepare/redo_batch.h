// One batch of parsed redo records for --prepare: every record of the batch
// grouped by page, in LSN order, and their replay onto one page the way
// MariaDB 10.11's recovery does (recv_recover_page).
//
// Records live in one chunked arena (no per-page vectors: millions of
// small, growing vectors fragment the heap far beyond --use-memory); each
// page holds a singly linked list of indexes into it. Their bytes point into
// the log as LogScanner hands it out, which keeps them until the batch is
// applied.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

#include "xbak/innodb/redo_record.h"
#include "xbak/prepare/space_catalog.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

inline constexpr uint32_t kNoRec = UINT32_MAX;

struct StoredRec {
  const uint8_t* data;  // into the log
  uint32_t data_len;
  uint32_t mtr;  // index into Batch::mtrs
  uint32_t offset;
  uint32_t length;
  uint32_t source;
  uint32_t next;  // next record of the same page, or kNoRec
  innodb::RecordType type;
};

struct PageLog {
  uint32_t head = kNoRec, tail = kNoRec;
  bool skip_read = false;  // starts with INIT_PAGE/FREE_PAGE: the old content does not matter
};

class Batch {
 public:
  uint32_t AddMtr(uint64_t start, uint64_t end);
  void Add(const innodb::PageRecord& r, uint32_t mtr);
  size_t bytes() const { return bytes_; }
  bool empty() const { return pages.empty(); }
  void Clear();

  std::deque<std::pair<uint64_t, uint64_t>> mtrs;  // start LSN, end LSN
  std::deque<StoredRec> recs;
  std::unordered_map<uint64_t, PageLog> pages;  // (space id << 32 | page number)

 private:
  // An unordered_map node holding a PageLog, its bucket, and malloc's headers.
  static constexpr size_t kPageOverhead = 64;
  size_t bytes_ = 0;
};

// Replays the records of one page onto `frame` (physical size), following
// recv_recover_page: skip every mtr that started before the page LSN, treat
// an mtr that only freed the page as "not applied". Returns whether the page
// must be written, with its new LSN in *end_lsn.
Result<bool> ReplayPage(const Space& s, uint32_t page_no, const PageLog& pl, const Batch& batch,
                        uint8_t* frame, size_t frame_size, uint64_t* end_lsn);

}  // namespace xbak::prepare
