// The pieces of an incremental apply, one at a time, on the synthetic chain
// (tests/unit/testing/synthetic_chain.h): what a scan finds, what validation
// learns and refuses, and what a piece, a target and a small-file copy write.
#include "xbak/prepare/delta_apply.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "testing/synthetic_chain.h"
#include "xbak/util/progress.h"

namespace xbak::prepare {
namespace {

using testing::kPs;
using testing::MakePage;

class DeltaApplyTest : public testing::SyntheticChainTest {
 protected:
  void Write(const std::string& path, const std::string& text) {
    ASSERT_TRUE(util::WriteFileAtomic(path, text).ok()) << path;
  }
  // The scanned and validated job of INC/db/NAME.ibd.delta over FULL/db/NAME.ibd.
  DeltaJob Validated(const std::string& name) {
    auto scan = ScanIncremental(inc_, 2);
    EXPECT_TRUE(scan.ok()) << scan.status().message();
    DeltaJob j;
    for (auto& d : scan->deltas) {
      if (d.rel == "db/" + name + ".ibd") j = d;
    }
    const std::string base = full_ + "/" + j.rel;
    Status st = ValidateDelta(j, base, std::filesystem::exists(base), nullptr);
    EXPECT_TRUE(st.ok()) << st.message();
    return j;
  }
  util::Progress progress_{"test", std::chrono::milliseconds(0)};
};

TEST_F(DeltaApplyTest, OtherEnginesFilesAreKnownByTheirExtension) {
  for (const char* n :
       {"db/t.frm", "db/t.MYD", "db/t.MYI", "db/t.MAD", "db/t.MAI", "db/t.CSV", "db/t.CSM", "db/db.opt",
        "db/t.par", "db/t.TRG", "db/t.TRN", "db/t.ARZ", "db/t.ARM", "db/t.MRG"}) {
    EXPECT_TRUE(IsOtherTableFile(n)) << n;
  }
  for (const char* n : {"db/t.ibd", "db/t.ibd.delta", "db/t.isl", "db/t.frm.bak", "ibdata1"}) {
    EXPECT_FALSE(IsOtherTableFile(n)) << n;
  }
}

TEST_F(DeltaApplyTest, AScanSortsWhatAnIncrementalHoldsByKind) {
  WriteDelta("t", 5, 3, 0x22);
  Write(inc_ + "/db/born.new", "");
  Write(inc_ + "/db/gone.del", "");
  Write(inc_ + "/db/old.ren", "db/renamed");
  Write(inc_ + "/db/t.frm", "frm");
  Write(inc_ + "/aria_log.00000001", "aria");
  Write(inc_ + "/db/ignored.txt", "?");
  auto s = ScanIncremental(inc_, 3);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->deltas.size(), 1u);
  EXPECT_EQ(s->deltas[0].rel, "db/t.ibd");
  EXPECT_EQ(s->deltas[0].delta, inc_ + "/db/t.ibd.delta");
  EXPECT_EQ(s->deltas[0].meta.space_id, 5u);
  EXPECT_EQ(s->deltas[0].meta.page_size, kPs);
  EXPECT_EQ(s->deltas[0].size, std::filesystem::file_size(inc_ + "/db/t.ibd.delta"));
  EXPECT_EQ(s->news, std::vector<std::string>{"db/born"});
  EXPECT_EQ(s->dels, std::vector<std::string>{"db/gone"});
  ASSERT_EQ(s->rens.size(), 1u);
  EXPECT_EQ(s->rens[0], std::make_pair(std::string("db/old"), std::string("db/renamed")));
  auto others = s->others;
  std::sort(others.begin(), others.end());
  EXPECT_EQ(others, (std::vector<std::string>{"aria_log.00000001", "db/t.frm"}));
}

TEST_F(DeltaApplyTest, ARenameToAPathOutsideTheBackupIsRefused) {
  Write(inc_ + "/db/old.ren", "../../etc/passwd");
  auto s = ScanIncremental(inc_, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("db/old.ren: rename target '../../etc/passwd' is not a db/table name"),
            std::string::npos)
      << s.status().message();
}

TEST_F(DeltaApplyTest, ADeltaWithoutItsMetaIsNamed) {
  WriteDelta("t", 5, 2, 0x22);
  ASSERT_EQ(::unlink((inc_ + "/db/t.ibd.meta").c_str()), 0);
  auto s = ScanIncremental(inc_, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("delta " + inc_ + "/db/t.ibd.delta has no readable .meta"),
            std::string::npos)
      << s.status().message();
}

TEST_F(DeltaApplyTest, ValidationFindsEveryBlockAndTheSizeFromPageZero) {
  WriteDelta("t", 5, 2600, 0x22);  // blocks of up to 1023 pages: 3 blocks
  DeltaJob j = Validated("t");
  ASSERT_EQ(j.blocks.size(), 3u);
  EXPECT_EQ(j.blocks[0], 0u);
  EXPECT_EQ(j.blocks[1], uint64_t{kPs} * 1024);  // a header page, then 1023 pages
  EXPECT_EQ(j.blocks[2], uint64_t{kPs} * 2048);
  EXPECT_TRUE(j.has_page0);
  EXPECT_EQ(j.want_size, uint64_t{2600} * kPs);
  EXPECT_FALSE(j.replace);
  EXPECT_FALSE(j.crypt.has_value());
}

TEST_F(DeltaApplyTest, ATableDroppedAndCreatedAgainReplacesItsBase) {
  WriteDelta("t", 7, 2, 0x44);  // db/t.ibd is space 5 in FULL: a new table of the same name
  DeltaJob j = Validated("t");
  EXPECT_TRUE(j.replace);
  ASSERT_TRUE(PrepareTarget(j, full_ + "/db/t.ibd").ok());
  // Emptied, then sized to the delta's FSP_SIZE; the old pages are gone.
  EXPECT_EQ(std::filesystem::file_size(full_ + "/db/t.ibd"), uint64_t{2} * kPs);
}

TEST_F(DeltaApplyTest, AnotherSpacesDeltaWithoutPageZeroIsRefused) {
  WriteDelta("t", 7, 2, 0x44);
  // Keep pages 1.. only: rewrite the delta without page 0.
  std::string out;
  innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
    out.append(reinterpret_cast<const char*>(d), len);
    return Status::Ok();
  });
  ASSERT_TRUE(w.AddPage(1, MakePage(7, 1, 0x44, 2).data()).ok());
  ASSERT_TRUE(w.Finish().ok());
  Write(inc_ + "/db/t.ibd.delta", out);
  auto scan = ScanIncremental(inc_, 1);
  ASSERT_TRUE(scan.ok());
  DeltaJob j = scan->deltas[0];
  Status st = ValidateDelta(j, full_ + "/db/t.ibd", true, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("its .meta says space id 7 but " + full_ + "/db/t.ibd is space 5"),
            std::string::npos)
      << st.message();
}

TEST_F(DeltaApplyTest, APageZeroThatContradictsItsMetaIsRefused) {
  WriteDelta("t", 5, 2, 0x22);
  Write(inc_ + "/db/t.ibd.meta", innodb::FormatDeltaMeta({kPs, 0, 6}));
  auto scan = ScanIncremental(inc_, 1);
  ASSERT_TRUE(scan.ok());
  DeltaJob j = scan->deltas[0];
  Status st = ValidateDelta(j, full_ + "/db/t.ibd", true, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("page 0 says space id 5 but the .meta says 6"), std::string::npos)
      << st.message();
}

// Page 0 of the delta says 16 KiB pages, the .meta 4 KiB: refused, not
// checked past the page's end (found by delta_fuzz).
TEST_F(DeltaApplyTest, APageZeroOfAnotherPageSizeIsRefused) {
  std::string out;
  innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
    out.append(reinterpret_cast<const char*>(d), len);
    return Status::Ok();
  });
  auto p0 = MakePage(5, 0, 0x22, 2);
  util::StoreBE32(p0.data() + innodb::kFspSpaceFlags, 0x15);  // full_crc32, 16 KiB
  ASSERT_TRUE(w.AddPage(0, p0.data()).ok());
  ASSERT_TRUE(w.Finish().ok());
  Write(inc_ + "/db/t.ibd.delta", out);
  Write(inc_ + "/db/t.ibd.meta", innodb::FormatDeltaMeta({kPs, 0, 5}));
  auto scan = ScanIncremental(inc_, 1);
  ASSERT_TRUE(scan.ok());
  DeltaJob j = scan->deltas[0];
  Status st = ValidateDelta(j, full_ + "/db/t.ibd", true, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("page 0 says 16384-byte pages but the .meta says page_size 4096"),
            std::string::npos)
      << st.message();
}

TEST_F(DeltaApplyTest, ATargetGrowsToTheDeltasSizeButNeverShrinks) {
  WriteDelta("t", 5, 6, 0x22);
  DeltaJob grow = Validated("t");
  ASSERT_TRUE(PrepareTarget(grow, full_ + "/db/t.ibd").ok());
  EXPECT_EQ(std::filesystem::file_size(full_ + "/db/t.ibd"), uint64_t{6} * kPs);
  WriteDelta("t", 5, 2, 0x22);  // FSP_SIZE 2: the file keeps its 6 pages
  DeltaJob shrink = Validated("t");
  ASSERT_TRUE(PrepareTarget(shrink, full_ + "/db/t.ibd").ok());
  EXPECT_EQ(std::filesystem::file_size(full_ + "/db/t.ibd"), uint64_t{6} * kPs);
  // A file the base did not have is created, with its directory.
  WriteDelta("fresh", 9, 3, 0x55);
  DeltaJob fresh = Validated("fresh");
  ASSERT_TRUE(PrepareTarget(fresh, full_ + "/newdb/fresh.ibd").ok());
  EXPECT_EQ(std::filesystem::file_size(full_ + "/newdb/fresh.ibd"), uint64_t{3} * kPs);
}

TEST_F(DeltaApplyTest, APieceWritesItsBlocksAndNothingElse) {
  WriteDelta("t", 5, 2600, 0x22);
  DeltaJob j = Validated("t");
  ASSERT_TRUE(PrepareTarget(j, full_ + "/db/t.ibd").ok());
  Piece middle{&j, 1, 2, j.blocks[2] - j.blocks[1], false};  // pages 1023..2045
  ASSERT_TRUE(ApplyPiece(middle, full_ + "/db/t.ibd", progress_).ok());
  auto bytes = util::ReadSmallFile(full_ + "/db/t.ibd", 64 << 20);
  ASSERT_TRUE(bytes.ok());
  auto page_fill = [&](uint32_t no) { return static_cast<uint8_t>((*bytes)[size_t{no} * kPs + kPs / 2]); };
  EXPECT_EQ(page_fill(0), 0x11);     // the base's, untouched
  EXPECT_EQ(page_fill(1022), 0x00);  // grown, not written yet
  EXPECT_EQ(page_fill(1023), 0x22);
  EXPECT_EQ(page_fill(2045), 0x22);
  EXPECT_EQ(page_fill(2046), 0x00);
  EXPECT_EQ(0, std::memcmp(bytes->data() + size_t{1500} * kPs, MakePage(5, 1500, 0x22, 2600).data(), kPs));
}

TEST_F(DeltaApplyTest, CopyReplaceLeavesAnIdenticalFileAloneAndReplacesADifferentOne) {
  Write(inc_ + "/db/t.frm", "definition v2");
  Write(full_ + "/db/t.frm", "definition v2");
  struct stat before {};
  ASSERT_EQ(::stat((full_ + "/db/t.frm").c_str(), &before), 0);
  ASSERT_TRUE(CopyReplace(inc_ + "/db/t.frm", full_ + "/db/t.frm").ok());
  struct stat after {};
  ASSERT_EQ(::stat((full_ + "/db/t.frm").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rewritten

  Write(inc_ + "/db/t.frm", "definition v3");
  ASSERT_TRUE(CopyReplace(inc_ + "/db/t.frm", full_ + "/db/t.frm").ok());
  EXPECT_EQ(*util::ReadSmallFile(full_ + "/db/t.frm"), "definition v3");
  ASSERT_TRUE(CopyReplace(inc_ + "/db/t.frm", full_ + "/other/t.frm").ok());
  EXPECT_EQ(*util::ReadSmallFile(full_ + "/other/t.frm"), "definition v3");
}

}  // namespace
}  // namespace xbak::prepare
