// The page records inside one mini-transaction of the MariaDB 10.8+ redo log,
// decoded into a self-contained form: every record carries its page id and,
// for WRITE/MEMSET/MEMMOVE, the absolute byte offsets it touches. The server's
// encoding makes offsets relative to the previous record of the same page in
// the same mtr ("last_offset"); resolving them here, once, lets the applier
// store records per page and replay them in any batch without that context.
//
// Pure functions over bytes, fed by untrusted input (a backup's ib_logfile0):
// every length and offset is checked against the record and the page size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "xbak/innodb/extended_redo.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

// mrec_type_t: bits 6..4 of a page record's first byte.
enum class RecordType : uint8_t {
  kFreePage = 0,  // the page was freed; no read needed
  kInitPage = 1,  // the page was (re)initialised: zero frame + page id fields
  kExtended = 2,  // a logical-physical operation (ExtendedType in extended_redo.h)
  kWrite = 3,     // copy bytes to an offset
  kMemset = 4,    // fill a range with a repeated pattern
  kMemmove = 5,   // move a range within the page
  kReserved = 6,  // never written; ignored like the server does
  kOption = 7,    // debug-build checksums and the like; ignored
};

struct PageRecord {
  RecordType type = RecordType::kWrite;
  uint32_t space_id = 0;
  uint32_t page_no = 0;
  uint32_t offset = 0;  // WRITE/MEMSET/MEMMOVE: absolute destination offset in the frame
  uint32_t length = 0;  // WRITE/MEMSET/MEMMOVE: bytes written
  uint32_t source = 0;  // MEMMOVE: absolute source offset
  // WRITE: the bytes; MEMSET: the pattern (1..length bytes, repeated);
  // EXTENDED: the subtype byte and its arguments. Points into the mtr.
  const uint8_t* data = nullptr;
  uint32_t data_len = 0;
};

// An EXTENDED TRIM_PAGES record: innodb_undo_log_truncate shrank an undo
// tablespace to page_no pages (a file-level operation, not a page change).
inline bool IsTrimPages(const PageRecord& r) {
  return r.type == RecordType::kExtended && r.data_len == 1 &&
         r.data[0] == static_cast<uint8_t>(ExtendedType::kTrimPages);
}

// Walks the records [mtr, mtr + records_len) of one mtr whose framing and CRC
// were already checked (ParseMtr), skipping its FILE_* records and the
// ignorable OPTION/RESERVED ones, and calls `fn` for each page record in
// order. `page_size` is innodb_page_size (the bound the server checks offsets
// against). Malformed records are kCorrupt with the mtr offset in the message;
// an error from `fn` stops the walk and is returned.
Status ForEachPageRecord(const uint8_t* mtr, size_t records_len, uint32_t page_size,
                         const std::function<Status(const PageRecord&)>& fn);

// Applies a FREE_PAGE, INIT_PAGE, WRITE, MEMSET or MEMMOVE record to a page
// frame of `frame_size` bytes (the physical size: ROW_FORMAT=COMPRESSED pages
// are logged against their compressed frame). EXTENDED records go to
// ApplyExtendedRecord (extended_redo.h). kCorrupt when the record does not fit
// the frame.
Status ApplySimpleRecord(uint8_t* frame, size_t frame_size, const PageRecord& r);

const char* RecordTypeName(RecordType t);

}  // namespace xbak::innodb
