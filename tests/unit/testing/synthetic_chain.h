// A synthetic chain for the tests of incremental apply and restore: FULL
// (prepared, db/t.ibd: space 5, 4 pages of 4 KiB) and INC (its incremental,
// with a clean redo log and deltas the test writes).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "testing/meta_files.h"
#include "testing/page_format.h"
#include "util/temp_dir.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::testing {

inline std::vector<uint8_t> MakePage(uint32_t space, uint32_t no, uint8_t fill, uint32_t fsp_size = 0) {
  std::vector<uint8_t> p(kPs, 0);
  std::fill(p.begin() + innodb::kFilPageData, p.end() - 8, fill);
  util::StoreBE32(p.data() + innodb::kFilPageOffset, no);
  util::StoreBE32(p.data() + innodb::kFilPageSpaceId, space);
  util::StoreBE64(p.data() + innodb::kFilPageLsn, 1500);
  if (no == 0) {
    std::fill(p.begin() + innodb::kFspHeaderOffset, p.begin() + innodb::kFspHeaderEnd, 0);
    util::StoreBE32(p.data() + innodb::kFspSpaceId, space);
    util::StoreBE32(p.data() + innodb::kFspSize, fsp_size);
    util::StoreBE32(p.data() + innodb::kFspSpaceFlags, kFlags);
  }
  auto flags = innodb::DecodeSpaceFlags(kFlags);
  EXPECT_TRUE(flags.ok());
  innodb::StampPageChecksum(p.data(), *flags);
  return p;
}

class SyntheticChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    root_ = tmp_->path();
    ASSERT_FALSE(root_.empty());
    full_ = root_ + "/full";
    inc_ = root_ + "/inc";
    for (const auto& d : {full_ + "/db", inc_ + "/db"}) ASSERT_TRUE(util::MakeDirs(d).ok());
    for (const auto& d : {full_, inc_}) {
      ASSERT_TRUE(
          util::WriteFileAtomic(d + "/" + backupdir::kBackupCnfFile, "[mysqld]\ninnodb_page_size=4096\n")
              .ok());
    }
    ASSERT_TRUE(util::WriteFileAtomic(full_ + "/" + meta_files::kCheckpoints,
                                      backupdir::FormatCheckpoints({"log-applied", 0, 13000, 13010, false}))
                    .ok());
    ASSERT_TRUE(
        util::WriteFileAtomic(inc_ + "/" + meta_files::kCheckpoints,
                              backupdir::FormatCheckpoints({"incremental", 13000, 20000, 20016, false}))
            .ok());
    // INC's redo log: a clean log ending at 20016 (nothing to apply).
    const auto log = innodb::MakePreparedLogFile(20000, "Backup test");
    ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/ib_logfile0", std::string(log.begin(), log.end())).ok());
    // FULL: db/t.ibd, space 5, 4 pages.
    std::string base;
    for (uint32_t no = 0; no < 4; no++) {
      auto p = MakePage(5, no, 0x11, 4);
      base.append(p.begin(), p.end());
    }
    ASSERT_TRUE(util::WriteFileAtomic(full_ + "/db/t.ibd", base).ok());
  }
  void TearDown() override { tmp_.reset(); }

  // INC/db/NAME.ibd.delta with pages [0, n) (page 0 says FSP_SIZE n) of `space`.
  void WriteDelta(const std::string& name, uint32_t space, uint32_t n, uint8_t fill) {
    std::vector<uint32_t> pages(n);
    for (uint32_t no = 0; no < n; no++) pages[no] = no;
    WriteDeltaPages(name, space, pages, fill, n);
  }

  // INC/db/NAME.ibd.delta with `pages` of `space` (page 0, if there, says FSP_SIZE fsp_size).
  void WriteDeltaPages(const std::string& name, uint32_t space, const std::vector<uint32_t>& pages,
                       uint8_t fill, uint32_t fsp_size = 0) {
    std::string out;
    innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
      out.append(reinterpret_cast<const char*>(d), len);
      return Status::Ok();
    });
    for (uint32_t no : pages) ASSERT_TRUE(w.AddPage(no, MakePage(space, no, fill, fsp_size).data()).ok());
    ASSERT_TRUE(w.Finish().ok());
    ASSERT_TRUE(util::WriteFileAtomic(inc_ + "/db/" + name + ".ibd.delta", out).ok());
    ASSERT_TRUE(
        util::WriteFileAtomic(inc_ + "/db/" + name + ".ibd.meta", innodb::FormatDeltaMeta({kPs, 0, space}))
            .ok());
  }

  // DIR/db/NAME.ibd (DIR: FULL by default) holds pages [0, n) of `space` filled with `fill`.
  void ExpectTable(const std::string& name, uint32_t space, uint32_t n, uint8_t fill, std::string dir = "") {
    if (dir.empty()) dir = full_;
    auto text = util::ReadSmallFile(dir + "/db/" + name + ".ibd", 64 << 20);
    ASSERT_TRUE(text.ok()) << text.status().message();
    ASSERT_EQ(text->size(), size_t{n} * kPs);
    for (uint32_t no = 0; no < n; no++) {
      auto want = MakePage(space, no, fill, n);
      ASSERT_EQ(0, std::memcmp(text->data() + size_t{no} * kPs, want.data(), kPs)) << name << " page " << no;
    }
  }
  // As ExpectTable, but page `changed` is a delta's (filled with `changed_fill`).
  void ExpectTableWithPage(const std::string& name, uint32_t space, uint32_t n, uint8_t fill,
                           uint32_t changed, uint8_t changed_fill) {
    auto text = util::ReadSmallFile(full_ + "/db/" + name + ".ibd", 64 << 20);
    ASSERT_TRUE(text.ok()) << text.status().message();
    ASSERT_EQ(text->size(), size_t{n} * kPs);
    for (uint32_t no = 0; no < n; no++) {
      auto want = no == changed ? MakePage(space, no, changed_fill) : MakePage(space, no, fill, n);
      EXPECT_EQ(0, std::memcmp(text->data() + size_t{no} * kPs, want.data(), kPs)) << name << " page " << no;
    }
  }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string root_, full_, inc_;
};

}  // namespace xbak::testing
