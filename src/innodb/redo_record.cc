#include "xbak/innodb/redo_record.h"

#include <cstring>

#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

Status Bad(size_t pos, const std::string& what) {
  return Error(ErrorCode::kCorrupt,
               "malformed redo record at mtr offset " + std::to_string(pos) + ": " + what);
}

// Decodes a varint of at most `max_len` bytes inside [p, end).
bool Varint(const uint8_t*& p, const uint8_t* end, uint32_t* v, size_t max_len = 5) {
  size_t len = 0;
  if (p >= end || DecodeVarint(p, static_cast<size_t>(end - p), v, &len) != DecodeResult::kOk ||
      len > max_len) {
    return false;
  }
  p += len;
  return true;
}

// The "last_offset" after a FREE_PAGE: no same-page WRITE/MEMSET/MEMMOVE may
// follow (the server uses the same impossible offset 1 as a sentinel).
constexpr uint32_t kAfterFree = 1;

}  // namespace

const char* RecordTypeName(RecordType t) {
  switch (t) {
    case RecordType::kFreePage:
      return "FREE_PAGE";
    case RecordType::kInitPage:
      return "INIT_PAGE";
    case RecordType::kExtended:
      return "EXTENDED";
    case RecordType::kWrite:
      return "WRITE";
    case RecordType::kMemset:
      return "MEMSET";
    case RecordType::kMemmove:
      return "MEMMOVE";
    case RecordType::kReserved:
      return "RESERVED";
    case RecordType::kOption:
      return "OPTION";
  }
  return "?";
}

// Long on purpose: one pass over the record encoding (type byte, same-page
// flag, length varints, space and page ids) in the order the bytes come,
// each refusal naming what was malformed.
Status ForEachPageRecord(const uint8_t* mtr, size_t records_len, uint32_t page_size,
                         const std::function<Status(const PageRecord&)>& fn) {
  bool have_page = false;
  uint32_t space_id = 0, page_no = 0, last_offset = 0;
  for (size_t pos = 0; pos < records_len;) {
    const uint8_t b = mtr[pos];
    if (b <= 1) return Bad(pos, "terminator byte inside the records");
    RecordFrame f;
    if (DecodeRecordLength(mtr + pos, records_len - pos, &f) != DecodeResult::kOk ||
        f.total() > records_len - pos) {
      return Bad(pos, "record length runs past the mtr");
    }
    const uint8_t* p = mtr + pos + f.header_length;
    const uint8_t* const end = p + f.payload_length;
    const size_t at = pos;
    pos += f.total();
    if (b & 0x80) {
      if (!have_page) continue;  // a FILE_* record (ParseMtr decoded those)
    } else {
      if (!Varint(p, end, &space_id) || !Varint(p, end, &page_no)) return Bad(at, "bad page id");
      have_page = true;
      last_offset = 0;
    }
    PageRecord r;
    r.type = static_cast<RecordType>((b >> 4) & 7);
    r.space_id = space_id;
    r.page_no = page_no;
    const size_t rlen = static_cast<size_t>(end - p);
    switch (r.type) {
      case RecordType::kFreePage:
      case RecordType::kInitPage:
        if (rlen != 0) return Bad(at, std::string(RecordTypeName(r.type)) + " with a payload");
        last_offset = r.type == RecordType::kFreePage ? kAfterFree : kFilPageType;
        break;
      case RecordType::kExtended:
        if (rlen == 0) return Bad(at, "EXTENDED record without a subtype");
        r.data = p;
        r.data_len = static_cast<uint32_t>(rlen);
        last_offset = kFilPageType;
        break;
      case RecordType::kReserved:
      case RecordType::kOption:
        continue;  // the server skips them too
      case RecordType::kWrite:
      case RecordType::kMemset:
      case RecordType::kMemmove: {
        if (rlen == 0 || last_offset == kAfterFree)
          return Bad(at, std::string(RecordTypeName(r.type)) + " without a page to write");
        uint32_t rel = 0;
        // Offsets and lengths take at most 3 bytes, and must leave payload.
        if (!Varint(p, end, &rel, 3) || p == end || rel >= page_size) return Bad(at, "bad offset");
        last_offset += rel;
        if (last_offset < 8 || last_offset >= page_size)
          return Bad(at, "offset " + std::to_string(last_offset) + " outside the page");
        r.offset = last_offset;
        if (r.type == RecordType::kWrite) {
          const size_t n = static_cast<size_t>(end - p);
          if (n + last_offset > page_size) return Bad(at, "WRITE past the end of the page");
          r.data = p;
          r.data_len = r.length = static_cast<uint32_t>(n);
          last_offset += r.length;
          break;
        }
        uint32_t len = 0;
        if (!Varint(p, end, &len, 3) || len == 0 || size_t{last_offset} + len > page_size)
          return Bad(at, "bad length");
        r.length = len;
        if (r.type == RecordType::kMemset) {
          const size_t n = static_cast<size_t>(end - p);
          if (n == 0 || n > len) return Bad(at, "MEMSET pattern longer than its range");
          r.data = p;
          r.data_len = static_cast<uint32_t>(n);
        } else {
          uint32_t s = 0;
          if (!Varint(p, end, &s, 3) || p != end) return Bad(at, "bad MEMMOVE source");
          // Even codes point after the destination, odd ones before it.
          int64_t src = (s & 1) ? int64_t{last_offset} - (s >> 1) - 1 : int64_t{last_offset} + (s >> 1) + 1;
          if (src < 8 || src + len > page_size) return Bad(at, "MEMMOVE source outside the page");
          r.source = static_cast<uint32_t>(src);
        }
        last_offset += len;
        break;
      }
    }
    XBAK_RETURN_IF_ERROR(fn(r));
  }
  return Status::Ok();
}

Status ApplySimpleRecord(uint8_t* frame, size_t frame_size, const PageRecord& r) {
  auto fits = [&](uint32_t off, uint32_t len) { return size_t{off} + len <= frame_size; };
  switch (r.type) {
    case RecordType::kInitPage:
      // buf_block_t::initialise + the INIT_PAGE case of log_phys_t::apply:
      // a zero frame that knows its own id and has no siblings.
      std::memset(frame, 0, frame_size);
      util::StoreBE32(frame + kFilPageOffset, r.page_no);
      util::StoreBE32(frame + kFilPagePrev, kFilNull);
      util::StoreBE32(frame + kFilPageNext, kFilNull);
      util::StoreBE32(frame + kFilPageSpaceId, r.space_id);
      return Status::Ok();
    case RecordType::kFreePage:
      return Status::Ok();  // the caller stops writing the page
    case RecordType::kWrite:
      if (!fits(r.offset, r.length)) break;
      std::memcpy(frame + r.offset, r.data, r.length);
      return Status::Ok();
    case RecordType::kMemset:
      if (!fits(r.offset, r.length) || r.data_len == 0) break;
      if (r.data_len == 1) {
        std::memset(frame + r.offset, r.data[0], r.length);
      } else {
        for (uint32_t i = 0; i < r.length; i++) frame[r.offset + i] = r.data[i % r.data_len];
      }
      return Status::Ok();
    case RecordType::kMemmove:
      if (!fits(r.offset, r.length) || !fits(r.source, r.length)) break;
      std::memmove(frame + r.offset, frame + r.source, r.length);
      return Status::Ok();
    default:
      return Error(ErrorCode::kInternal, std::string("ApplySimpleRecord given ") + RecordTypeName(r.type));
  }
  return Error(ErrorCode::kCorrupt, std::string(RecordTypeName(r.type)) + " at offset " +
                                        std::to_string(r.offset) + " does not fit a page of " +
                                        std::to_string(frame_size) + " bytes");
}

}  // namespace xbak::innodb
