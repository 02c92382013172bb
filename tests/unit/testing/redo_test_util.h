// A small synthetic tablespace (4 KiB full_crc32 pages of space 7) and a
// builder of backup redo logs writing to it: shared by the redo apply and
// prepare tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "testing/page_format.h"
#include "testing/redo_records.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"

namespace xbak::testing::redo {

using xbak::testing::kFlags;
using xbak::testing::kPs;
constexpr uint32_t kSpace = 7;
constexpr uint64_t kStartLsn = 20000;

inline innodb::SpaceFlags Flags() { return innodb::DecodeSpaceFlags(kFlags).value(); }

inline std::vector<uint8_t> MakePage(uint32_t no, uint64_t lsn, uint32_t fsp_size = 8) {
  std::vector<uint8_t> p(kPs, 0);
  util::StoreBE32(p.data() + innodb::kFilPageOffset, no);
  util::StoreBE32(p.data() + innodb::kFilPageSpaceId, kSpace);
  util::StoreBE64(p.data() + innodb::kFilPageLsn, lsn);
  for (size_t i = 200; i < 400; i++) p[i] = static_cast<uint8_t>(i);
  if (no == 0) {
    std::fill(p.begin() + innodb::kFspHeaderOffset, p.begin() + innodb::kFspHeaderEnd, 0);
    util::StoreBE32(p.data() + innodb::kFspSpaceId, kSpace);
    util::StoreBE32(p.data() + innodb::kFspSize, fsp_size);
    util::StoreBE32(p.data() + innodb::kFspSpaceFlags, kFlags);
  }
  innodb::StampPageChecksum(p.data(), Flags());
  return p;
}

// Builds mtrs: page records, then terminator 1 and CRC-32C.
class LogBuilder {
 public:
  // A record with a page id: type nibble, space, page, payload.
  LogBuilder& Rec(uint8_t type, uint32_t page_no, const std::vector<uint8_t>& payload,
                  bool same_page = false) {
    std::vector<uint8_t> body;
    uint8_t v[5];
    if (!same_page) {
      body.insert(body.end(), v, v + innodb::EncodeVarint(kSpace, v));
      body.insert(body.end(), v, v + innodb::EncodeVarint(page_no, v));
    }
    body.insert(body.end(), payload.begin(), payload.end());
    EXPECT_LT(body.size(), 16u);
    mtr_.push_back(static_cast<uint8_t>((same_page ? 0x80 : 0) | type | body.size()));
    mtr_.insert(mtr_.end(), body.begin(), body.end());
    return *this;
  }
  // A FILE_ record (type: innodb::kFileCreate...) of space `space`: for a
  // rename, `name` is "OLD\0NEW". Short names only (at most a one-byte
  // length varint).
  LogBuilder& FileRec(uint8_t type, uint32_t space, const std::string& name) {
    redo_records::Append(mtr_, redo_records::FileRecord(type, space, name));
    return *this;
  }
  // Closes the current mtr; returns its end LSN.
  uint64_t End() {
    uint8_t crc[4];
    util::StoreBE32(crc, util::crc32c::Value(mtr_.data(), mtr_.size()));
    mtr_.push_back(1);
    mtr_.insert(mtr_.end(), crc, crc + 4);
    log_.insert(log_.end(), mtr_.begin(), mtr_.end());
    mtr_.clear();
    return kStartLsn + log_.size();
  }
  std::string File(uint64_t end_lsn) const {
    auto h = innodb::MakeBackupLogHeader(innodb::kRedoFormat10_8, kStartLsn, kStartLsn, "Backup test");
    std::string out(h.begin(), h.end());
    out.append(log_.begin(), log_.end());
    (void)end_lsn;
    return out;
  }
  std::vector<uint8_t>& bytes() { return log_; }

 private:
  std::vector<uint8_t> mtr_, log_;
};

}  // namespace xbak::testing::redo
