// EXTENDED redo records, applied as MariaDB 10.11 recovery applies them.
//
// The authority is the server's apply code: log0recv.cc log_phys_t::apply
// (argument decoding and its limits), log_phys_t::undo_append,
// page0page.cc page_create_low, trx0undo.cc trx_undo_page_init and
// page0cur.cc page_apply_insert_redundant / _dynamic, page_apply_delete_*,
// page_mem_free, page_dir_split_slot and page_dir_balance_slot. The checks
// are done in the server's order where that decides which message is given,
// and the page is modified in the server's order, so that even overlapping
// copies of odd (but accepted) records produce the same bytes.
//
// All positions are byte offsets into the frame held in size_t/int64_t, never
// pointers, so that a hostile offset can be compared instead of forming an
// out-of-range pointer. Where the server would read outside its frame (it
// relies on the buffer pool around it) we refuse the record instead.
#include "xbak/innodb/extended_redo.h"

#include <cstring>
#include <string>

#include "index_page.h"

namespace xbak::innodb {
namespace {

using namespace index_page;  // the layout and the record operations, shared with page_insert.cc etc.

// ---- Argument decoding (log_phys_t::apply) -----------------------------------
// mlog_decode_varint_length: the number of leading 1 bits of the first byte + 1.
size_t VarintLength(uint8_t first) {
  size_t len = 1;
  for (; first & 0x80; len++) first = static_cast<uint8_t>(first << 1);
  return len;
}

// mlog_decode_varint for the lengths apply() allows (1..3 bytes).
uint32_t DecodeShortVarint(const uint8_t* p) {
  const uint32_t i = p[0];
  if (i < 0x80) return i;
  if (i < 0xc0) return 0x80 + ((i & 0x3f) << 8 | p[1]);
  return 0x4080 + ((i & 0x1f) << 16 | uint32_t{p[1]} << 8 | p[2]);
}

// A cursor over the arguments, `left` bytes remaining.
struct ArgReader {
  const uint8_t* p;
  size_t left;

  // Reads one varint of at most max_len bytes. apply() demands that some
  // bytes remain after most arguments (ll >= rlen is corrupt) but lets the
  // last one end the record (ll > rlen); `must_leave_some` picks the rule.
  bool Read(size_t max_len, bool must_leave_some, size_t* out) {
    if (left == 0) return false;
    const size_t ll = VarintLength(*p);
    if (ll > max_len || (must_leave_some ? ll >= left : ll > left)) return false;
    *out = DecodeShortVarint(p);
    p += ll;
    left -= ll;
    return true;
  }
};

// ---- page_create_low ------------------------------------------------------------
void CreateIndexPage(uint8_t* page, size_t page_size, bool comp) {
  Put16(page, kFilPageType, kPageTypeIndex);
  std::memset(page + kPageHeader, 0, kPageHeaderPrivEnd);
  page[kPageNDirSlots + 1] = 2;
  page[kPageInstant] = 0;
  page[kPageDirectionB] = kDirNone;
  const size_t sup_end = comp ? kNewSupremumEnd : kOldSupremumEnd;
  if (comp) {
    page[kPageNHeap] = 0x80;
    std::memcpy(page + kPageData, kInfSupCompact.data(), kInfSupCompact.size());
  } else {
    std::memcpy(page + kPageData, kInfSupRedundant.data(), kInfSupRedundant.size());
  }
  page[kPageNHeap + 1] = kHeapNoUserLow;
  page[kPageHeapTop + 1] = static_cast<uint8_t>(sup_end);
  std::memset(page + sup_end, 0, page_size - kPageDir - sup_end);
  // Slot 1 points to the supremum, slot 0 to the infimum; the high bytes
  // were cleared above.
  page[page_size - kPageDir - 2 * kSlotSize + 1] = static_cast<uint8_t>(comp ? kNewSupremum : kOldSupremum);
  page[page_size - kPageDir - kSlotSize + 1] = static_cast<uint8_t>(comp ? kNewInfimum : kOldInfimum);
}

// ---- trx_undo_page_init -----------------------------------------------------------
void InitUndoPage(uint8_t* page, size_t page_size) {
  Put16(page, kFilPageType, kPageTypeUndoLog);
  Put16(page, kUndoPageType, 0);
  Put16(page, kUndoPageStart, kUndoPageHdr + kUndoPageHdrSize);
  Put16(page, kUndoPageFree, kUndoPageHdr + kUndoPageHdrSize);
  // flst_zero_both() on the page list node: prev and next = FIL_NULL, byte 0.
  std::memset(page + kUndoPageNode, 0xff, 4);
  std::memset(page + kUndoPageNode + 4, 0, 2);
  std::memset(page + kUndoPageNode + 6, 0xff, 4);
  std::memset(page + kUndoPageNode + 10, 0, 2);
  // The segment header survives (it is only meaningful on the first page).
  const size_t start = kUndoSegHdr + kUndoSegHdrSize;
  std::memset(page + start, 0, page_size - start - kPageDir);
}

// ---- log_phys_t::undo_append --------------------------------------------------------
Status UndoAppend(uint8_t* page, size_t page_size, const uint8_t* data, size_t len) {
  const size_t free = Get16(page, kUndoPageFree);
  if (free < kUndoPageHdr + kUndoPageHdrSize || free + len + 6 >= page_size - kPageDir) {
    return Corrupt("UNDO_APPEND", "TRX_UNDO_PAGE_FREE " + std::to_string(free) + " cannot take a " +
                                      std::to_string(len) + "-byte undo record");
  }
  // Each record is framed by the offset of the next one and its own start.
  Put16(page, kUndoPageFree, free + 4 + len);
  std::memcpy(page + free, page + kUndoPageFree, 2);
  std::memcpy(page + free + 2, data, len);
  Put16(page, free + 2 + len, free);
  return Status::Ok();
}

// ---- Decoding of each subtype's arguments (log_phys_t::apply) -------------------------
Status DecodeInsert(uint8_t* page, size_t page_size, uint8_t subtype, const uint8_t* args, size_t left) {
  const bool dynamic = subtype & 2;
  const char* what = dynamic ? ((subtype & 1) ? "INSERT_REUSE_DYNAMIC" : "INSERT_HEAP_DYNAMIC")
                             : ((subtype & 1) ? "INSERT_REUSE_REDUNDANT" : "INSERT_HEAP_REDUNDANT");
  InsertArgs a;
  a.reuse = subtype & 1;
  ArgReader r{args, left};
  bool ok = r.Read(3, true, &a.prev);
  if (dynamic) {
    if (ok && a.reuse) ok = r.Read(3, true, &a.shift);
    ok = ok && r.Read(3, true, &a.enc_hdr) && r.Read(2, true, &a.hdr_c) && r.Read(3, false, &a.data_c);
  } else {
    ok = ok && r.Read(2, true, &a.enc_hdr) && r.Read(2, true, &a.hdr_c) && r.Read(2, false, &a.data_c);
  }
  if (!ok) return Corrupt(what, "malformed or truncated arguments");
  a.lit = r.p;
  a.lit_len = r.left;
  return dynamic ? InsertDynamic(page, page_size, a) : InsertRedundant(page, page_size, a);
}

Status DecodeDeleteDynamic(uint8_t* page, size_t page_size, const uint8_t* args, size_t left) {
  ArgReader r{args, left};
  size_t prev = 0, hdr_size = 0, data_size = 0;
  // The last varint must end the record exactly.
  if (!r.Read(3, true, &prev) || !r.Read(2, true, &hdr_size) || left == 0 || r.left == 0 ||
      VarintLength(*r.p) > 3 || VarintLength(*r.p) != r.left) {
    return Corrupt("DELETE_ROW_FORMAT_DYNAMIC", "malformed or truncated arguments");
  }
  data_size = DecodeShortVarint(r.p);
  return DeleteDynamic(page, page_size, prev, hdr_size, data_size);
}

}  // namespace

Status ApplyExtendedRecord(uint8_t* page, size_t page_size, const uint8_t* body, size_t body_len) {
  if (!ValidPageSize(page_size)) {
    return Error(ErrorCode::kInvalidArgument, "EXTENDED record: page size " + std::to_string(page_size));
  }
  if (body_len == 0) return Error(ErrorCode::kCorrupt, "EXTENDED record without a subtype byte");
  const uint8_t subtype = body[0];
  if (subtype >= static_cast<uint8_t>(ExtendedType::kTrimPages)) {
    return Error(ErrorCode::kUnsupported,
                 subtype == static_cast<uint8_t>(ExtendedType::kTrimPages)
                     ? std::string("TRIM_PAGES is a file operation, not applied to a page")
                     : "EXTENDED record of unknown subtype " + std::to_string(subtype));
  }
  const uint32_t page_no = PageNo(page);
  if (page_no < 3) {
    return Error(ErrorCode::kCorrupt, "EXTENDED record for page " + std::to_string(page_no) +
                                          " (the server never logs them below page 3)");
  }
  const uint8_t* args = body + 1;
  const size_t left = body_len - 1;
  switch (static_cast<ExtendedType>(subtype)) {
    case ExtendedType::kInitRowFormatRedundant:
    case ExtendedType::kInitRowFormatDynamic:
      if (left != 0) return Error(ErrorCode::kCorrupt, "INIT_ROW_FORMAT record with arguments");
      CreateIndexPage(page, page_size, subtype == static_cast<uint8_t>(ExtendedType::kInitRowFormatDynamic));
      return Status::Ok();
    case ExtendedType::kUndoInit:
      if (left != 0) return Error(ErrorCode::kCorrupt, "UNDO_INIT record with arguments");
      InitUndoPage(page, page_size);
      return Status::Ok();
    case ExtendedType::kUndoAppend:
      if (left < 3) return Error(ErrorCode::kCorrupt, "UNDO_APPEND record shorter than 3 bytes");
      return UndoAppend(page, page_size, args, left);
    case ExtendedType::kInsertHeapRedundant:
    case ExtendedType::kInsertReuseRedundant:
    case ExtendedType::kInsertHeapDynamic:
    case ExtendedType::kInsertReuseDynamic:
      return DecodeInsert(page, page_size, subtype, args, left);
    case ExtendedType::kDeleteRowFormatRedundant: {
      // Exactly one varint of 1..3 bytes.
      if (left < 1 || left > 3 || VarintLength(args[0]) != left) {
        return Error(ErrorCode::kCorrupt, "DELETE_ROW_FORMAT_REDUNDANT: malformed arguments");
      }
      return DeleteRedundant(page, page_size, DecodeShortVarint(args));
    }
    case ExtendedType::kDeleteRowFormatDynamic:
      return DecodeDeleteDynamic(page, page_size, args, left);
    case ExtendedType::kTrimPages:
      break;
  }
  return Error(ErrorCode::kUnsupported, "EXTENDED record of unknown subtype " + std::to_string(subtype));
}

}  // namespace xbak::innodb
