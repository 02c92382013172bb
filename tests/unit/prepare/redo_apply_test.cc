#include "xbak/prepare/redo_apply.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "testing/redo_test_util.h"
#include "util/temp_dir.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/page_compression.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/prepare/doublewrite.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {

using testing::redo::Flags;
using testing::redo::kFlags;
using testing::redo::kPs;
using testing::redo::kSpace;
using testing::redo::kStartLsn;
using testing::redo::LogBuilder;
using testing::redo::MakePage;

class RedoApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    dir_ = tmp_->path();
    ASSERT_FALSE(dir_.empty());
    ASSERT_TRUE(util::MakeDirs(dir_ + "/db").ok());
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/backup-my.cnf", "[mysqld]\ninnodb_page_size=4096\n").ok());
    std::string ts;
    for (uint32_t no = 0; no < 8; no++) {
      auto p = MakePage(no, no == 5 ? 90000 : 15000);  // page 5 is newer than the whole log
      ts.append(p.begin(), p.end());
    }
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/db/t.ibd", ts).ok());
  }
  void TearDown() override { tmp_.reset(); }

  std::vector<uint8_t> Page(uint32_t no) {
    auto f = util::File::OpenRead(dir_ + "/db/t.ibd");
    std::vector<uint8_t> p(kPs);
    EXPECT_TRUE(f.ok() && f->PRead(p.data(), kPs, uint64_t{no} * kPs).ok());
    return p;
  }
  // The apply of dir_'s log up to `end`, quietly; callers set the rest.
  RedoApplyOptions Options(uint64_t end) const {
    RedoApplyOptions o;
    o.dir = dir_;
    o.required_lsn = end;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  Result<RedoApplyStats> Apply(const LogBuilder& b, uint64_t end, int parallel = 2,
                               bool doublewrite = false) {
    EXPECT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
    RedoApplyOptions o = Options(end);
    o.parallel = parallel;
    o.doublewrite = doublewrite;
    return ApplyRedoLog(o);
  }
  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string dir_;
};

TEST_F(RedoApplyTest, AppliesWriteMemsetMemmoveAndStampsLsnAndChecksum) {
  LogBuilder b;
  // WRITE "hi!" at 100, then same-page MEMSET 4 x 0xAB right after it (offset 103),
  // then same-page MEMMOVE of 3 bytes from 100 to 107: source code (107-100-1)*2+1 = 13.
  b.Rec(0x30, 3, {100, 'h', 'i', '!'}).Rec(0x40, 3, {0, 4, 0xAB}, true).Rec(0x50, 3, {0, 3, 13}, true);
  const uint64_t end1 = b.End();
  b.Rec(0x30, 4, {50, 0x77});
  b.Rec(0x30, 5, {50, 0x66});  // page 5 is already newer: skipped
  const uint64_t end2 = b.End();
  auto st = Apply(b, end2);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->pages_written, 2u);
  EXPECT_EQ(st->end_lsn, end2);
  auto p3 = Page(3);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(p3.data()) + 100, 3), "hi!");
  for (int i = 103; i < 107; i++) EXPECT_EQ(p3[i], 0xAB) << i;
  EXPECT_EQ(std::string(reinterpret_cast<char*>(p3.data()) + 107, 3), "hi!");
  EXPECT_EQ(util::LoadBE64(p3.data() + innodb::kFilPageLsn), end1);
  EXPECT_EQ(innodb::CheckPage(p3.data(), Flags(), 3).verdict, innodb::PageVerdict::kOk);
  auto p4 = Page(4);
  EXPECT_EQ(p4[50], 0x77);
  EXPECT_EQ(util::LoadBE64(p4.data() + innodb::kFilPageLsn), end2);
  EXPECT_EQ(Page(5), MakePage(5, 90000));

  // Idempotent: a second run skips everything by page LSN.
  auto again = Apply(b, end2);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pages_written, 0u);
  EXPECT_EQ(Page(3), p3);
}

TEST_F(RedoApplyTest, InitPageIgnoresOldContentAndFreedPagesAreNotWritten) {
  LogBuilder b;
  b.Rec(0x10, 6, {}).Rec(0x30, 6, {90, 1, 2, 3}, true);  // INIT_PAGE + WRITE
  b.End();
  b.Rec(0x30, 2, {60, 9});
  b.End();
  b.Rec(0x00, 2, {});  // FREE_PAGE: page 2 is freed at the end of the log
  const uint64_t end = b.End();
  auto st = Apply(b, end, 1);
  ASSERT_TRUE(st.ok()) << st.status().message();
  auto p6 = Page(6);
  EXPECT_EQ(p6[24 + 90], 1);  // same-page offsets count from FIL_PAGE_TYPE after INIT_PAGE
  EXPECT_EQ(p6[200], 0);      // the old bytes are gone
  EXPECT_EQ(util::LoadBE32(p6.data() + innodb::kFilPagePrev), innodb::kFilNull);
  EXPECT_EQ(innodb::CheckPage(p6.data(), Flags(), 6).verdict, innodb::PageVerdict::kOk);
  EXPECT_EQ(Page(2), MakePage(2, 15000));  // freed: never written
}

// A run killed after it wrote page 0 (a larger FSP_SIZE) but before the
// files were grown, then run again: the page is skipped by its LSN, and the
// file must still get the size page 0 says, as in a run never interrupted
// (the server grows files from the sizes the log writes, whatever it applies).
TEST_F(RedoApplyTest, AFileGrowsToItsPageZeroSizeWhenARunResumesAfterPageZeroWasWritten) {
  LogBuilder b;
  b.Rec(0x30, 0, {static_cast<uint8_t>(innodb::kFspSize), 0, 0, 0, 12});  // FSP_SIZE 8 -> 12
  const uint64_t end = b.End();
  const std::string base = dir_ + "/db/t.ibd.base";
  std::filesystem::copy_file(dir_ + "/db/t.ibd", base);
  ASSERT_TRUE(Apply(b, end).ok());
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/db/t.ibd"), 12u * kPs);
  const auto page0 = Page(0);
  EXPECT_EQ(util::LoadBE32(page0.data() + innodb::kFspSize), 12u);

  // The killed run's state: page 0 written, the file not grown yet.
  std::filesystem::copy_file(base, dir_ + "/db/t.ibd", std::filesystem::copy_options::overwrite_existing);
  {
    auto f = util::File::OpenWrite(dir_ + "/db/t.ibd");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->PWrite(page0.data(), kPs, 0).ok());
  }
  auto again = Apply(b, end);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->pages_written, 0u);
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/db/t.ibd"), 12u * kPs);
}

// A run killed in the middle of a page write leaves the page torn: its first
// bytes (with the new LSN) written, the rest old. Run again, the apply would
// skip the page by that LSN; with the doublewrite file the killed run left,
// the page goes back whole first and the files are those of one run.
TEST_F(RedoApplyTest, ATornPageOfAKilledRunIsWrittenBackWholeFromTheDoublewriteFile) {
  LogBuilder b;
  b.Rec(0x30, 3, {100, 'h', 'i', '!'}).Rec(0x30, 4, {50, 0x77});
  b.End();
  b.Rec(0x30, 3, {120, 'y', 'o'});
  const uint64_t end = b.End();
  const std::string t = dir_ + "/db/t.ibd", base = dir_ + "/t.ibd.base";
  std::filesystem::copy_file(t, base);
  auto st = Apply(b, end, 2, true);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->pages_written, 2u);
  EXPECT_FALSE(util::PathExists(dir_ + "/" + kDoublewriteFile)) << "removed once the pages are in place";
  const std::string done = util::ReadSmallFile(t).value();
  const auto p3 = Page(3);

  auto tear = [&] {  // the killed run: page 3's first 1 KiB written, the rest old
    std::filesystem::copy_file(base, t, std::filesystem::copy_options::overwrite_existing);
    auto f = util::File::OpenWrite(t);
    ASSERT_TRUE(f.ok() && f->PWrite(p3.data(), 1024, 3 * kPs).ok());
  };
  // Without the doublewrite file (what it is for): the torn page stays torn.
  tear();
  ASSERT_TRUE(Apply(b, end, 2, true).ok());
  EXPECT_NE(Page(3), p3);

  // The killed run's doublewrite file, page 3 whole in it.
  tear();
  const DoublewriteTag tag{st->checkpoint_lsn, st->end_lsn};
  {
    auto d = Doublewrite::Create(dir_, tag, 2, 4, kPs);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE((*d)->Write(1, std::vector<PageImage>{{"db/t.ibd", "db/t.ibd", kSpace, 3 * kPs, p3}}).ok());
  }
  auto again = Apply(b, end, 2, true);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(Page(3), p3);
  EXPECT_EQ(util::ReadSmallFile(t).value(), done);
  EXPECT_FALSE(util::PathExists(dir_ + "/" + kDoublewriteFile));
}

// innodb_undo_log_truncate during the backup: an undo record appended to
// page 6, then the tablespace cut to 4 pages (TRIM_PAGES) and page 0 given
// that size. The older record of page 6 is void, as in the server
// (recv_sys_t::trim): a second run, over a file already cut (a run killed
// after it), must not apply it to the zeros past the end of the file.
TEST_F(RedoApplyTest, RecordsOfPagesAnUndoTruncationCutsOffAreVoidEvenWhenRunAgain) {
  std::filesystem::remove(dir_ + "/db/t.ibd");
  std::string ts;
  for (uint32_t no = 0; no < 8; no++) {
    auto p = MakePage(no, 15000);
    util::StoreBE16(p.data() + 42, 300);  // TRX_UNDO_PAGE_FREE: room for an undo record
    innodb::StampPageChecksum(p.data(), Flags());
    ts.append(p.begin(), p.end());
  }
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/undo001", ts).ok());
  LogBuilder b;
  b.Rec(0x20, 6, {3, 'a', 'b', 'c'});  // UNDO_APPEND
  b.End();
  b.Rec(0x20, 4, {10});  // TRIM_PAGES: 4 pages
  b.Rec(0x30, 0, {static_cast<uint8_t>(innodb::kFspSize), 0, 0, 0, 4});
  const uint64_t end = b.End();
  for (int run = 1; run <= 2; run++) {
    auto st = Apply(b, end);
    ASSERT_TRUE(st.ok()) << "run " << run << ": " << st.status().message();
    EXPECT_EQ(std::filesystem::file_size(dir_ + "/undo001"), 4u * kPs) << "run " << run;
  }
}

// `xbak --restore` writes the next incremental's deltas of a table before
// this log only when the log does nothing to its tablespace beyond pages
// (restore/direct_delta.h): what the log creates, renames or drops is named.
TEST_F(RedoApplyTest, TheLogsDdlIsToldToSuperseded) {
  LogBuilder b;
  b.FileRec(innodb::kFileModify, kSpace, "./db/t.ibd").Rec(0x30, 3, {50, 0x33});
  b.End();
  b.FileRec(innodb::kFileCreate, kSpace + 10, "./d/n.ibd");
  b.End();
  b.FileRec(innodb::kFileRename, kSpace + 11, std::string("./d/a.ibd\0./d/b.ibd", 19));
  b.End();
  b.FileRec(innodb::kFileDelete, kSpace + 12, "./d/x.ibd");
  const uint64_t end = b.End();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  RedoApplyOptions o = Options(end);
  std::optional<LogDdl> told;
  o.superseded = [&](const LogDdl& ddl) -> Result<PageSetPtr> {
    told = ddl;
    return PageSetPtr(std::make_shared<PageSet>());
  };
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(told->spaces, (std::set<uint32_t>{kSpace + 10, kSpace + 11,
                                              kSpace + 12}));  // not kSpace: FILE_MODIFY and pages only
  EXPECT_EQ(told->names, (std::set<std::string>{"d/n.ibd", "d/a.ibd", "d/b.ibd", "d/x.ibd"}));
  EXPECT_EQ(Page(3)[50], 0x33);
}

TEST_F(RedoApplyTest, SupersededPagesAreLeftAloneAndPageZeroNeverIs) {
  LogBuilder b;
  b.Rec(0x30, 0, {60, 0x11});
  b.Rec(0x30, 3, {50, 0x33});
  b.Rec(0x30, 4, {50, 0x44});
  const uint64_t end = b.End();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  auto skip = std::make_shared<PageSet>();
  skip->Add(kSpace, 0);  // page 0 is applied all the same
  skip->Add(kSpace, 3);
  skip->Add(kSpace + 1, 4);  // another tablespace's page 4: not this one's
  RedoApplyOptions o = Options(end);
  o.parallel = 2;
  o.superseded = [skip](const LogDdl& ddl) -> Result<PageSetPtr> {
    EXPECT_TRUE(ddl.spaces.empty());  // page writes alone
    return PageSetPtr(skip);
  };
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->superseded_records, 1u);
  EXPECT_EQ(st->pages_written, 2u);
  EXPECT_EQ(Page(0)[60], 0x11);
  EXPECT_EQ(Page(3), MakePage(3, 15000));  // untouched: the next incremental writes it whole
  EXPECT_EQ(Page(4)[50], 0x44);
}

TEST_F(RedoApplyTest, ALogCheckedBeforehandIsNotCheckedAgainAndAnotherLogsCheckIsIgnored) {
  LogBuilder b;
  b.Rec(0x30, 3, {50, 0x33});
  const uint64_t end = b.End();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  CheckedLogPtr checked;
  ASSERT_TRUE(CheckRedoApplicable(dir_, dir_, end, {}, 1, {}, nullptr, &checked).ok());
  ASSERT_NE(checked, nullptr);
  // The log grows by one mtr after the check: the apply that takes the check
  // stops where the check ended (its first pass was not made again).
  b.Rec(0x30, 4, {50, 0x44});
  const uint64_t end2 = b.End();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end2)).ok());
  RedoApplyOptions o = Options(end);
  o.checked = checked;
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->end_lsn, end);
  EXPECT_EQ(Page(3)[50], 0x33);
  EXPECT_EQ(Page(4), MakePage(4, 15000));
  // Checked for another required LSN: not taken; the log is checked again,
  // to its new end.
  o.required_lsn = end2;
  auto again = ApplyRedoLog(o);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->end_lsn, end2);
  EXPECT_EQ(Page(4)[50], 0x44);
}

TEST_F(RedoApplyTest, SmallMemoryGivesTheSameBytesInManyBatches) {
  LogBuilder b;
  for (int i = 0; i < 20000; i++) {
    b.Rec(0x30, 1 + i % 7 == 5 ? 6 : 1 + i % 7, {static_cast<uint8_t>(40 + i % 50), static_cast<uint8_t>(i)});
    b.End();
  }
  const uint64_t end = kStartLsn + b.bytes().size();
  auto one = Apply(b, end);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->batches, 1u);
  std::vector<std::vector<uint8_t>> want;
  for (uint32_t no = 0; no < 8; no++) want.push_back(Page(no));
  SetUp();  // fresh files
  RedoApplyOptions o = Options(end);
  o.use_memory = 64 << 10;  // far below the log: many batches
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  auto many = ApplyRedoLog(o);
  ASSERT_TRUE(many.ok()) << many.status().message();
  EXPECT_GT(many->batches, 5u);
  for (uint32_t no = 0; no < 8; no++) EXPECT_EQ(Page(no), want[no]) << "page " << no;
}

TEST_F(RedoApplyTest, RecordsBeforeALaterInitAreNeverAppliedWhateverTheBatches) {
  // Page 7 is all zero in the backup (its content was never flushed); its log
  // starts with an UNDO_APPEND, which cannot be applied to a zero page, and it
  // is freed and re-initialised later. In any batch, the early records must be
  // skipped, as the server's recovery does.
  auto f = util::File::OpenWrite(dir_ + "/db/t.ibd");
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> zero(kPs, 0);
  ASSERT_TRUE(f->PWrite(zero.data(), kPs, 7 * kPs).ok());
  LogBuilder b;
  b.Rec(0x20, 7, {3, 'u', 'n', 'd', 'o'});  // EXTENDED UNDO_APPEND
  b.End();
  for (int i = 0; i < 3000; i++) {  // enough log for several batches at 64 KiB
    b.Rec(0x30, 1, {40, static_cast<uint8_t>(i)});
    b.End();
  }
  b.Rec(0x00, 7, {});
  b.End();
  b.Rec(0x10, 7, {}).Rec(0x30, 7, {50, 0x5A}, true);
  const uint64_t end = b.End();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  RedoApplyOptions o = Options(end);
  o.use_memory = 64 << 10;
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_GT(st->batches, 1u);
  auto p7 = Page(7);
  EXPECT_EQ(p7[24 + 50], 0x5A);
  EXPECT_EQ(util::LoadBE32(p7.data() + innodb::kFilPageOffset), 7u);
}

TEST_F(RedoApplyTest, CorruptOrShortLogIsRefusedBeforeAnythingIsWritten) {
  LogBuilder b;
  b.Rec(0x30, 3, {100, 1});
  const uint64_t mid = b.End();
  b.Rec(0x30, 4, {100, 2});
  const uint64_t end = b.End();
  b.bytes()[mid - kStartLsn + 3] ^= 1;  // a payload byte of the second mtr
  auto st = Apply(b, end);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("corrupt at LSN " + std::to_string(mid)), std::string::npos)
      << st.status().message();
  EXPECT_EQ(Page(3), MakePage(3, 15000));  // the first mtr is sound, but nothing is written

  LogBuilder c;
  c.Rec(0x30, 3, {100, 1});
  const uint64_t short_end = c.End();
  auto st2 = Apply(c, short_end + 100);
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.status().message().find("truncated"), std::string::npos) << st2.status().message();
}

TEST_F(RedoApplyTest, RecordsOfUnknownTablespacesAreCountedNotApplied) {
  LogBuilder b;
  b.Rec(0x30, 3, {100, 5});
  const uint64_t end = b.End();
  // An mtr for tablespace 99, which has no file: WRITE (4 bytes: space, page, offset, data).
  std::vector<uint8_t> m = {0x34, 99, 3, 100, 6};
  uint8_t crc[4];
  util::StoreBE32(crc, util::crc32c::Value(m.data(), m.size()));
  m.push_back(1);
  m.insert(m.end(), crc, crc + 4);
  b.bytes().insert(b.bytes().end(), m.begin(), m.end());
  auto st = Apply(b, end + m.size());
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->ignored_records, 1u);
  EXPECT_EQ(st->ignored_spaces.count(99), 1u);
  EXPECT_EQ(Page(3)[100], 5);
}

// --innodb-force-recovery=1: a page the log cannot be applied to is left as it was and counted; the
// others are applied. Without it the same log fails the apply.
TEST_F(RedoApplyTest, ForcedRecoveryLeavesAPageTheLogCannotApplyToAsItWas) {
  LogBuilder b;
  b.Rec(0x30, 3, {100, 5});
  b.Rec(0x20, 1, {0x01});  // EXTENDED (INIT_ROW_FORMAT_DYNAMIC) on page 1, which is no index page
  const uint64_t end = b.End();
  auto refused = Apply(b, end, /*parallel=*/1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kCorrupt) << refused.status().message();
  EXPECT_EQ(Page(1), MakePage(1, 15000));

  RedoApplyOptions o = Options(end);
  o.ignore_corrupt_pages = true;
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->corrupt_pages_left, 1u);
  EXPECT_EQ(Page(1), MakePage(1, 15000));
  EXPECT_EQ(Page(3)[100], 5);
}

// A page left as it was in one batch is not written by a later batch's records either (they would
// go onto its old bytes and stamp them valid); it is counted once.
TEST_F(RedoApplyTest, ForcedRecoveryKeepsASkippedPageOutOfLaterBatches) {
  LogBuilder b;
  b.Rec(0x20, 1, {0x01});  // the damage: EXTENDED on page 1
  b.End();
  for (int i = 0; i < 4000; i++) {
    b.Rec(0x30, i % 2 ? 1 : 3, {static_cast<uint8_t>(40 + i % 50), static_cast<uint8_t>(i)});
    b.End();
  }
  const uint64_t end = kStartLsn + b.bytes().size();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  RedoApplyOptions o = Options(end);
  o.ignore_corrupt_pages = true;
  o.use_memory = 16 << 10;  // far below the log: many batches
  o.parallel = 2;
  auto st = ApplyRedoLog(o);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_GT(st->batches, 3u);
  EXPECT_EQ(st->corrupt_pages_left, 1u);
  EXPECT_EQ(Page(1), MakePage(1, 15000));
  EXPECT_NE(Page(3), MakePage(3, 15000));
}

// Every algorithm the build has a library for is applied (t_layouts.sh
// compares them with mariabackup); one it lacks is refused by name.
TEST_F(RedoApplyTest, PageCompressedWithAnAlgorithmXbakLacksIsRefusedBeforeAnythingIsWritten) {
  uint32_t algo = 0;
  for (uint32_t a : {innodb::kCompressionLzo, innodb::kCompressionLzma, innodb::kCompressionBzip2,
                     innodb::kCompressionSnappy}) {
    if (algo == 0 && !innodb::CompressionSupported(a)) algo = a;
  }
  if (algo == 0) GTEST_SKIP() << "this build has every page compression algorithm";
  auto p0 = MakePage(0, 15000);
  util::StoreBE32(p0.data() + innodb::kFilPageSpaceId, 8);
  util::StoreBE32(p0.data() + innodb::kFspSpaceId, 8);
  util::StoreBE32(p0.data() + innodb::kFspSpaceFlags, kFlags | (algo << 5));  // page_compressed
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/db/pc.new", std::string(p0.begin(), p0.end())).ok());
  LogBuilder b;
  b.Rec(0x30, 3, {100, 1});
  const uint64_t end = b.End();
  bool hook_ran = false;
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
  RedoApplyOptions o = Options(end);
  o.before_write = [&] {
    hook_ran = true;
    return Status::Ok();
  };
  auto st = ApplyRedoLog(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.status().message().find("db/pc.new"), std::string::npos) << st.status().message();
  EXPECT_NE(st.status().message().find(innodb::CompressionName(algo)), std::string::npos)
      << st.status().message();
  EXPECT_FALSE(hook_ran);  // the DDL markers would have run there
  EXPECT_EQ(Page(3), MakePage(3, 15000));
}

TEST(PreparedLogFile, IsACleanLogWhoseCheckpointIsItsStart) {
  const uint64_t lsn = 123456789;
  auto f = innodb::MakePreparedLogFile(lsn, "Backup 10.11.19");
  ASSERT_EQ(f.size(), innodb::kPreparedLogFileSize);
  auto h = innodb::ParseLogHeader(f.data(), f.size());
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->first_lsn, lsn);
  EXPECT_EQ(h->creator, "Backup 10.11.19");
  auto c = innodb::PickCheckpoint(f.data(), f.size(), lsn);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->checkpoint_lsn, lsn);
  EXPECT_EQ(c->end_lsn, lsn);
  innodb::MtrInfo info;
  std::string why;
  ASSERT_EQ(innodb::ParseMtr(f.data() + innodb::kLogStartOffset, 16, true, &info, &why),
            innodb::MtrStatus::kComplete)
      << why;
  EXPECT_TRUE(info.has_checkpoint);
  EXPECT_EQ(info.checkpoint_lsn, lsn);
  EXPECT_EQ(info.length, 16u);
}

// The DDL markers run between the checks and the first write (before_write)
// and move files; the log must go to the files where they are then. A
// tablespace that exists only as db/t.new (mariabackup streams a table
// created during the backup so, often all zero until the log rebuilds it):
// its records go to the db/t.ibd the marker installs, not counted as a
// dropped table's.
TEST_F(RedoApplyTest, LogGoesToTheFilesTheDdlMarkersInstall) {
  for (const std::string marker : {"new", "ren"}) {
    SCOPED_TRACE(marker);
    TearDown();  // a fresh directory for each marker
    SetUp();
    const std::string from = dir_ + (marker == "new" ? "/db/t.new" : "/db/t.ibd");
    const std::string to = dir_ + (marker == "new" ? "/db/t.ibd" : "/db/u.ibd");
    if (marker == "new") {
      ASSERT_EQ(::rename((dir_ + "/db/t.ibd").c_str(), from.c_str()), 0);
    }
    LogBuilder b;
    b.Rec(0x30, 3, {100, 0x42});
    const uint64_t end = b.End();
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/ib_logfile0", b.File(end)).ok());
    if (marker == "ren") {
      ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/db/t.ren", "db/u").ok());
    }
    RedoApplyOptions o = Options(end);
    o.before_write = [&] {  // what prepare's ApplyDdlMarkers does to these two
      if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename", from, errno);
      if (marker == "ren") ::unlink((dir_ + "/db/t.ren").c_str());
      return Status::Ok();
    };
    auto st = ApplyRedoLog(o);
    ASSERT_TRUE(st.ok()) << st.status().message();
    EXPECT_EQ(st->ignored_records, 0u);
    EXPECT_EQ(st->pages_written, 1u);
    EXPECT_FALSE(util::PathExists(from));
    auto f = util::File::OpenRead(to);
    ASSERT_TRUE(f.ok());
    std::vector<uint8_t> p(kPs);
    ASSERT_TRUE(f->PRead(p.data(), kPs, 3 * kPs).ok());
    EXPECT_EQ(p[100], 0x42);
    EXPECT_EQ(util::LoadBE64(p.data() + innodb::kFilPageLsn), end);
  }
}

}  // namespace
}  // namespace xbak::prepare
