#include "xbak/prepare/redo_batch.h"

#include "xbak/innodb/extended_redo.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"

namespace xbak::prepare {

using innodb::PageRecord;
using innodb::RecordType;

uint32_t Batch::AddMtr(uint64_t start, uint64_t end) {
  mtrs.push_back({start, end});
  bytes_ += sizeof(mtrs[0]);
  return static_cast<uint32_t>(mtrs.size() - 1);
}

void Batch::Add(const innodb::PageRecord& r, uint32_t mtr) {
  const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
  auto [it, fresh] = pages.try_emplace(key);
  if (fresh) bytes_ += kPageOverhead;
  PageLog& pl = it->second;
  const uint32_t idx = static_cast<uint32_t>(recs.size());
  recs.push_back(StoredRec{r.data, r.data_len, mtr, r.offset, r.length, r.source, kNoRec, r.type});
  bytes_ += sizeof(StoredRec);
  if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage || pl.head == kNoRec) {
    // Nothing before a (re)initialisation matters (recv_sys_t::add); the
    // records left behind stay in the arena until the batch ends.
    if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage) pl.skip_read = true;
    pl.head = pl.tail = idx;
  } else {
    recs[pl.tail].next = idx;
    pl.tail = idx;
  }
}

void Batch::Clear() {
  pages.clear();
  recs.clear();
  mtrs.clear();
  bytes_ = 0;
}

Result<bool> ReplayPage(const Space& s, uint32_t page_no, const PageLog& pl, const Batch& batch,
                        uint8_t* frame, size_t frame_size, uint64_t* end_lsn) {
  const uint64_t page_lsn = pl.skip_read ? 0 : util::LoadBE64(frame + innodb::kFilPageLsn);
  uint64_t start = 0, end = 0;
  for (uint32_t i = pl.head; i != kNoRec;) {
    const uint32_t mtr = batch.recs[i].mtr;
    const auto [mtr_start, mtr_end] = batch.mtrs[mtr];
    end = mtr_end;
    if (mtr_start < page_lsn) {  // already in the page
      while (i != kNoRec && batch.recs[i].mtr == mtr) i = batch.recs[i].next;
      continue;
    }
    bool applied = false;
    for (; i != kNoRec && batch.recs[i].mtr == mtr; i = batch.recs[i].next) {
      const StoredRec& r = batch.recs[i];
      if (r.type == RecordType::kFreePage) continue;
      Status st;
      if (r.type == RecordType::kExtended) {
        if (page_no < 3 || s.flags.zip()) {
          st = Error(ErrorCode::kCorrupt, "EXTENDED record on a page that cannot take one");
        } else {
          st = innodb::ApplyExtendedRecord(frame, frame_size, r.data, r.data_len);
        }
      } else {
        PageRecord pr;
        pr.type = r.type;
        pr.space_id = s.id;
        pr.page_no = page_no;
        pr.offset = r.offset;
        pr.length = r.length;
        pr.source = r.source;
        pr.data = r.data;
        pr.data_len = r.data_len;
        st = innodb::ApplySimpleRecord(frame, frame_size, pr);
      }
      if (!st.ok()) {
        return st.With("redo of the mini-transaction at LSN " + std::to_string(mtr_start) + " on " +
                       PageName(s, page_no));
      }
      applied = true;
    }
    if (!applied) {
      start = 0;  // the page was freed: it is not written (its old content stays)
    } else if (start == 0) {
      start = mtr_start;
    }
  }
  *end_lsn = end;
  return start != 0;
}

}  // namespace xbak::prepare
