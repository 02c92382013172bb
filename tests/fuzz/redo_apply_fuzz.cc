// libFuzzer entry point for the redo applier's page-level code: the record
// walker (offsets resolved against the page size) and every record applied
// to a page frame, EXTENDED index/undo records included. The input is the
// backup's redo log, i.e. untrusted: whatever the bytes, nothing may be read
// or written outside the record or the page.
//
// Input layout: byte 0 picks the page (0: a fresh COMPACT index page built
// by the applier itself, 1: a fresh REDUNDANT one, else: the next 16 KiB of
// input as a page), the rest is a sequence of page records (no mtr trailer).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "xbak/innodb/extended_redo.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/innodb/redo_record.h"
#include "xbak/util/endian.h"

using namespace xbak;
using namespace xbak::innodb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kPage = 16384;
  if (size < 1) return 0;
  std::vector<uint8_t> page(kPage, 0);
  size_t pos = 1;
  util::StoreBE32(page.data() + kFilPageOffset, 5);
  if (data[0] <= 1) {
    const uint8_t init = data[0] == 0 ? 1 : 0;  // INIT_ROW_FORMAT_DYNAMIC / _REDUNDANT
    (void)ApplyExtendedRecord(page.data(), page.size(), &init, 1);
  } else {
    const size_t n = std::min(kPage, size - pos);
    std::memcpy(page.data(), data + pos, n);
    pos += n;
  }
  // An exact-size copy of the records, so that ASan sees any overread.
  std::vector<uint8_t> recs(data + pos, data + size);
  // The walker stops at a byte <= 1 (it is given only the records of an mtr).
  size_t len = 0;
  while (len < recs.size() && recs[len] > 1) {
    RecordFrame f;
    if (DecodeRecordLength(recs.data() + len, recs.size() - len, &f) != DecodeResult::kOk ||
        f.total() > recs.size() - len)
      break;
    len += f.total();
  }
  (void)ForEachPageRecord(recs.data(), len, kPage, [&](const PageRecord& r) {
    if (r.type == RecordType::kExtended) {
      (void)ApplyExtendedRecord(page.data(), page.size(), r.data, r.data_len);
    } else {
      (void)ApplySimpleRecord(page.data(), page.size(), r);
    }
    return Status::Ok();
  });
  return 0;
}
