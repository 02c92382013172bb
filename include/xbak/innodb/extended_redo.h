// Applying MariaDB 10.11 redo records of type EXTENDED (0x20) to an
// uncompressed page frame, bit-exactly as the server's recovery does
// (log0recv.cc log_phys_t::apply and the page_apply_* functions of
// page0cur.cc). These records are "logical-physical": an INSERT or DELETE
// carries only the predecessor record's offset and the bytes that differ, and
// the applier re-derives every header, directory and free-list byte from the
// page itself. Later WRITE records of the same page address bytes by offset,
// so one divergent byte here corrupts everything after it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xbak/util/status.h"

namespace xbak::innodb {

// mrec_ext_t: the first payload byte of an EXTENDED (0x20) redo record.
enum class ExtendedType : uint8_t {
  kInitRowFormatRedundant = 0,
  kInitRowFormatDynamic = 1,
  kUndoInit = 2,
  kUndoAppend = 3,
  kInsertHeapRedundant = 4,
  kInsertReuseRedundant = 5,
  kInsertHeapDynamic = 6,
  kInsertReuseDynamic = 7,
  kDeleteRowFormatRedundant = 8,
  kDeleteRowFormatDynamic = 9,
  kTrimPages = 10,
};

// Applies one EXTENDED record to the uncompressed page frame `page` of
// `page_size` bytes (4096..65536). `body` points at the subtype byte and
// `body_len` counts it plus its arguments: i.e. everything in the record after
// the space id / page number varints. Returns kCorrupt with a message in words
// (e.g. "INSERT_HEAP_DYNAMIC: prev_rec offset 17000 outside the page") when the
// record is malformed or does not fit the page (where the server would mark the
// page corrupted); kUnsupported for kTrimPages (a file-level operation the
// caller handles) and unknown subtypes. Never reads or writes outside
// [page, page + page_size) or [body, body + body_len), whatever the input
// (this is fed untrusted bytes; a fuzzer will be pointed at it).
// Does NOT touch FIL_PAGE_LSN or checksums: the caller sets those after the mtr.
//
// Like the server, every subtype is refused (kCorrupt) when the frame's
// FIL_PAGE_OFFSET is below 3. The server additionally compares that field to
// the page id it is applying to; that comparison is the caller's.
// When kCorrupt is returned, the page is unchanged, except where the server
// itself would have crashed or read outside its frame half-way (a directory
// slot split or balance walking a broken record list): then the page may be
// partially modified and must be treated as corrupted.
Status ApplyExtendedRecord(uint8_t* page, size_t page_size, const uint8_t* body, size_t body_len);

// Structural check of a B-tree/R-tree index page of either row format
// (ROW_FORMAT=REDUNDANT or COMPACT/DYNAMIC, uncompressed): the record list
// runs from infimum to supremum within the heap, heap numbers are below
// PAGE_N_HEAP and unique, the records on the list plus the PAGE_FREE list
// account for every heap number, n_owned and the directory slots agree (slot
// 0 owns only the infimum, inner slots 4..8 records, the last slot 1..8 and
// points to the supremum), and PAGE_N_RECS matches. kCorrupt names the first
// violation. Never reads outside [page, page + page_size).
Status CheckIndexPage(const uint8_t* page, size_t page_size);

}  // namespace xbak::innodb
