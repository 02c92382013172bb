// VerifyBackup on small synthetic backups (4 KiB pages): a sound backup and a
// sound chain pass; every kind of damage is one line naming file and page.
#include "xbak/verify/verify.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "testing/meta_files.h"
#include "testing/synthetic_chain.h"
#include "util/temp_dir.h"
#include "verify_test_util.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::verify {
namespace {

using test::BackupLog;
using test::kCkpt;
using test::kLogEnd;
using test::Read;
using test::Tablespace;
using test::Write;
using testing::kFlags;
using testing::kPs;
using testing::MakePage;

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    root_ = tmp_->path();
    ASSERT_FALSE(root_.empty());
    full_ = root_ + "/full";
    MakeBackup(full_, "full-backuped", 0, kCkpt, kLogEnd);
    Write(full_ + "/ibdata1", Tablespace(0, 8));
    Write(full_ + "/db/a.ibd", Tablespace(5, 6));
    Write(full_ + "/db/a.frm", std::string("frm"));
  }
  void TearDown() override { tmp_.reset(); }

  void MakeBackup(const std::string& dir, const std::string& type, uint64_t from, uint64_t to,
                  uint64_t last) {
    backupdir::Checkpoints c{type, from, to, last, false};
    Write(dir + "/" + meta_files::kCheckpoints, backupdir::FormatCheckpoints(c));
    backupdir::ServerSettings s;
    s.checksum_algorithm = "full_crc32";
    s.data_file_path = "ibdata1:12M:autoextend";
    s.page_size = kPs;
    Write(dir + "/" + backupdir::kBackupCnfFile, backupdir::FormatBackupCnf(s));
    Write(dir + "/" + meta_files::kInfo, std::string("uuid = x\nbinlog_pos = \n"));
    Write(dir + "/ib_logfile0", BackupLog());
  }

  // An incremental on top of full_: deltas of ibdata1 and db/a.ibd.
  std::string MakeIncremental(uint64_t from) {
    std::string inc = root_ + "/inc";
    MakeBackup(inc, "incremental", from, kCkpt, kLogEnd);
    for (auto [rel, space] : {std::pair<std::string, uint32_t>{"ibdata1", 0}, {"db/a.ibd", 5}}) {
      Write(inc + "/" + rel + ".meta", innodb::FormatDeltaMeta({kPs, 0, space}));
      std::vector<uint8_t> out;
      innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t n) {
        out.insert(out.end(), d, d + n);
        return Status::Ok();
      });
      EXPECT_TRUE(w.AddPage(0, MakePage(space, 0, 9, 8).data()).ok());
      EXPECT_TRUE(w.AddPage(3, MakePage(space, 3, 9).data()).ok());
      EXPECT_TRUE(w.Finish().ok());
      Write(inc + "/" + rel + ".delta", out);
    }
    return inc;
  }

  VerifyResult Verify(std::vector<std::string> incs = {}, size_t max_per_file = 20) {
    VerifyOptions o;
    o.target_dir = full_;
    o.incremental_dirs = std::move(incs);
    o.parallel = 3;
    o.max_problems_per_file = max_per_file;
    auto r = VerifyBackup(o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r.value() : VerifyResult{};
  }

  static std::string All(const VerifyResult& r) { return test::All(r); }

  void Flip(const std::string& path, size_t off) {
    auto b = Read(path);
    ASSERT_LT(off, b.size());
    b[off] ^= 0xFF;
    Write(path, b);
  }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string root_, full_;
};

TEST_F(VerifyTest, SoundBackupPasses) {
  VerifyResult r = Verify();
  EXPECT_TRUE(r.sound()) << All(r);
  EXPECT_EQ(r.pages, 14u);
  EXPECT_EQ(r.Summary(), "verify: " + std::to_string(r.files) + " files, 14 pages, 0 problems");
}

// A ROW_FORMAT=COMPRESSED table (1 KiB pages on 4 KiB) copied before its
// page 0 reached the disk: its format cannot be read from page 0, and the
// pages on disk are checked as whole compressed pages (they were once taken
// two at a time for one 4 KiB page and reported torn).
TEST_F(VerifyTest, CompressedTableWithoutPage0) {
  constexpr uint32_t kZip = 1024;
  const uint32_t zip_flags = 1 | (1u << 1) | (1u << 5) | (3u << 6);  // ZIP_SSIZE 1, PAGE_SSIZE 3 (4k)
  auto flags = innodb::DecodeSpaceFlags(zip_flags);
  ASSERT_TRUE(flags.ok());
  ASSERT_EQ(flags->physical_size, kZip);
  std::vector<uint8_t> file(kZip, 0);  // page 0: not flushed yet
  for (uint32_t no = 1; no < 8; no++) {
    std::vector<uint8_t> p(kZip, static_cast<uint8_t>(no));
    std::fill(p.begin(), p.begin() + innodb::kFilPageData, 0);
    util::StoreBE32(p.data() + innodb::kFilPageOffset, no);
    util::StoreBE32(p.data() + innodb::kFilPageSpaceId, 9);
    util::StoreBE64(p.data() + innodb::kFilPageLsn, 1500 + no);
    innodb::StampPageChecksum(p.data(), *flags);
    file.insert(file.end(), p.begin(), p.end());
  }
  Write(full_ + "/db/z.ibd", file);
  VerifyResult r = Verify();
  EXPECT_TRUE(r.sound()) << All(r);
  Flip(full_ + "/db/z.ibd", 5 * kZip + 300);  // compressed page 5: in the second 4 KiB
  r = Verify();
  ASSERT_EQ(r.problem_count, 1u) << All(r);
  EXPECT_NE(r.problems[0].find("db/z.ibd: page 1 (byte offset 4096): "), std::string::npos) << r.problems[0];
}

// A delta of a ROW_FORMAT=COMPRESSED table whose KEY_BLOCK_SIZE equals the
// page size (here 4k pages, KEY_BLOCK_SIZE=4), without page 0: its .meta's
// zip_size says the pages are compressed ones, although they are as large as
// the logical page. A guess from the page size alone took them for
// uncompressed pages and reported every one as corrupt.
TEST_F(VerifyTest, DeltaOfACompressedTableAsLargeAsThePage) {
  const auto zf = innodb::PossibleSpaceFlags(kPs, kPs);
  ASSERT_EQ(zf.size(), 1u);
  ASSERT_TRUE(zf[0].zip());
  std::string inc = MakeIncremental(kCkpt);
  Write(inc + "/db/z.ibd.meta", innodb::FormatDeltaMeta({kPs, kPs, 9}));
  std::vector<uint8_t> out;
  innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t n) {
    out.insert(out.end(), d, d + n);
    return Status::Ok();
  });
  for (uint32_t no : {2u, 5u}) {
    std::vector<uint8_t> p(kPs, static_cast<uint8_t>(no));
    std::fill(p.begin(), p.begin() + innodb::kFilPageData, 0);
    util::StoreBE32(p.data() + innodb::kFilPageOffset, no);
    util::StoreBE32(p.data() + innodb::kFilPageSpaceId, 9);
    util::StoreBE64(p.data() + innodb::kFilPageLsn, 1500 + no);
    innodb::StampPageChecksum(p.data(), zf[0]);
    ASSERT_TRUE(w.AddPage(no, p.data()).ok());
  }
  ASSERT_TRUE(w.Finish().ok());
  Write(inc + "/db/z.ibd.delta", out);
  VerifyResult r = Verify({inc});
  EXPECT_TRUE(r.sound()) << All(r);
  Flip(inc + "/db/z.ibd.delta", 2 * kPs + 300);  // the second page in the delta: page 5
  r = Verify({inc});
  ASSERT_EQ(r.problem_count, 1u) << All(r);
  EXPECT_NE(r.problems[0].find("db/z.ibd.delta: page 5"), std::string::npos) << r.problems[0];
}

TEST_F(VerifyTest, FlippedByteNamesFileAndPage) {
  Flip(full_ + "/db/a.ibd", 2 * kPs + 100);
  VerifyResult r = Verify();
  ASSERT_EQ(r.problem_count, 1u) << All(r);
  EXPECT_NE(r.problems[0].find("db/a.ibd: page 2 (byte offset 8192): "), std::string::npos) << r.problems[0];
}

TEST_F(VerifyTest, PageOfAnotherSpaceOrPlaceIsFound) {
  auto b = Read(full_ + "/db/a.ibd");
  auto other = MakePage(7, 3, 1);  // right checksum, wrong space id
  std::copy(other.begin(), other.end(), b.begin() + 3 * kPs);
  auto moved = MakePage(5, 1, 1);  // right space, but page 1 stored at page 4's place
  std::copy(moved.begin(), moved.end(), b.begin() + 4 * kPs);
  Write(full_ + "/db/a.ibd", b);
  std::string all = All(Verify());
  EXPECT_NE(all.find("db/a.ibd: page 3 (byte offset 12288): carries space id 7"), std::string::npos) << all;
  EXPECT_NE(all.find("db/a.ibd: page 4 (byte offset 16384)"), std::string::npos) << all;
}

TEST_F(VerifyTest, TruncatedAndEmptyFiles) {
  std::filesystem::resize_file(full_ + "/db/a.ibd", 5 * kPs + 10);
  Write(full_ + "/db/empty.ibd", std::string());
  std::string all = All(Verify());
  EXPECT_NE(all.find("db/a.ibd: size is not a whole number of 4096-byte pages: 10 bytes of a partial page 5 "
                     "at byte offset "
                     "20480"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("db/empty.ibd: empty file"), std::string::npos) << all;
}

TEST_F(VerifyTest, MissingPromisedFilesAndCheckpoints) {
  std::filesystem::remove(full_ + "/ibdata1");
  std::filesystem::remove(full_ + "/" + meta_files::kCheckpoints);
  Write(full_ + "/" + meta_files::kInfo,
        std::string("uuid = x\nbinlog_pos = filename 'b.000001', position '4'\n"));
  std::string all = All(Verify());
  EXPECT_NE(all.find("/ibdata1: missing (promised by innodb_data_file_path"), std::string::npos) << all;
  EXPECT_NE(all.find("xtrabackup_checkpoints: missing"), std::string::npos) << all;
  EXPECT_NE(all.find("xtrabackup_binlog_info: missing"), std::string::npos) << all;
}

TEST_F(VerifyTest, RedoLogDamage) {
  std::string log = full_ + "/ib_logfile0";
  Flip(log, innodb::kLogStartOffset + 3);  // inside the mtr: its CRC no longer matches
  std::string all = All(Verify());
  EXPECT_NE(all.find("ib_logfile0: mtr chain broken at byte offset 12288 (LSN 20000)"), std::string::npos)
      << all;
  Write(log, BackupLog());
  std::filesystem::resize_file(log, innodb::kLogStartOffset + 7);
  all = All(Verify());
  EXPECT_NE(all.find("ib_logfile0: ends inside a mini-transaction at byte offset 12288"), std::string::npos)
      << all;
  std::filesystem::resize_file(log, 100);
  all = All(Verify());
  EXPECT_NE(all.find("ib_logfile0: only 100 bytes"), std::string::npos) << all;
  // A log shorter than last_lsn promises (the copy stopped early).
  Write(log, BackupLog());
  Write(full_ + "/" + meta_files::kCheckpoints,
        backupdir::FormatCheckpoints({"full-backuped", 0, kCkpt, kLogEnd + 100, false}));
  all = All(Verify());
  EXPECT_NE(all.find("end at LSN 20016, before last_lsn 20116"), std::string::npos) << all;
}

TEST_F(VerifyTest, ZeroPaddingAfterTheLogIsFine) {
  auto log = BackupLog();
  log.resize(log.size() + 512, 0);
  Write(full_ + "/ib_logfile0", log);
  VerifyResult r = Verify();
  EXPECT_TRUE(r.sound()) << All(r);
}

TEST_F(VerifyTest, ChainPassesAndBrokenChainIsNamed) {
  std::string inc = MakeIncremental(kCkpt);
  VerifyResult r = Verify({inc});
  EXPECT_TRUE(r.sound()) << All(r);
  EXPECT_EQ(r.pages, 14u + 4u);
  Write(inc + "/" + meta_files::kCheckpoints,
        backupdir::FormatCheckpoints({"incremental", kCkpt - 1, kCkpt, kLogEnd, false}));
  std::string all = All(Verify({inc}));
  EXPECT_NE(all.find("inc/xtrabackup_checkpoints: from_lsn 19999 does not continue"), std::string::npos)
      << all;
}

TEST_F(VerifyTest, DeltaDamage) {
  std::string inc = MakeIncremental(kCkpt);
  Flip(inc + "/db/a.ibd.delta", 2 * kPs + 77);  // the second page image (page 3)
  std::string all = All(Verify({inc}));
  EXPECT_NE(all.find("db/a.ibd.delta: page 3 (byte offset 8192)"), std::string::npos) << all;

  inc = MakeIncremental(kCkpt);
  std::filesystem::resize_file(inc + "/db/a.ibd.delta", 2 * kPs);
  all = All(Verify({inc}));
  EXPECT_NE(all.find("db/a.ibd.delta: truncated at byte offset 8192"), std::string::npos) << all;

  inc = MakeIncremental(kCkpt);
  Flip(inc + "/db/a.ibd.delta", 0);
  all = All(Verify({inc}));
  EXPECT_NE(all.find("db/a.ibd.delta: block at byte offset 0: not a delta block"), std::string::npos) << all;

  inc = MakeIncremental(kCkpt);
  std::filesystem::remove(inc + "/ibdata1.meta");
  Write(inc + "/db/a.ibd.meta", std::string("page_size = 1000\n"));
  all = All(Verify({inc}));
  EXPECT_NE(all.find("ibdata1.delta: its .meta is missing"), std::string::npos) << all;
  EXPECT_NE(all.find("ibdata1.meta: missing (promised"), std::string::npos) << all;
  EXPECT_NE(all.find("db/a.ibd.delta: bad .meta"), std::string::npos) << all;
}

// Page 0 of a delta says 16 KiB pages, its .meta 4 KiB: named, and the pages
// are not checked past their end (found by delta_fuzz).
TEST_F(VerifyTest, DeltaPageZeroOfAnotherPageSizeIsNamed) {
  std::string inc = MakeIncremental(kCkpt);
  std::vector<uint8_t> out;
  innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t n) {
    out.insert(out.end(), d, d + n);
    return Status::Ok();
  });
  auto p0 = MakePage(5, 0, 9, 8);
  util::StoreBE32(p0.data() + innodb::kFspSpaceFlags, 0x15);  // full_crc32, 16 KiB
  ASSERT_TRUE(w.AddPage(0, p0.data()).ok());
  ASSERT_TRUE(w.Finish().ok());
  Write(inc + "/db/a.ibd.delta", out);
  std::string all = All(Verify({inc}));
  EXPECT_NE(all.find("db/a.ibd.delta: page 0 (byte offset 4096): its flags say 16384-byte pages, the .meta "
                     "says page_size 4096"),
            std::string::npos)
      << all;
}

TEST_F(VerifyTest, ManyBadPagesAreSummarized) {
  std::vector<uint8_t> junk(40 * kPs, 0x5A);
  Write(full_ + "/db/junk.ibd", junk);
  VerifyResult r = Verify({}, 5);
  size_t lines = 0;
  for (const auto& l : r.problems) lines += l.find("db/junk.ibd") != std::string::npos;
  EXPECT_EQ(lines, 6u) << All(r);   // 5 problems, one "more" line
  EXPECT_EQ(r.problem_count, 41u);  // 40 bad pages and page 0's header
}

TEST_F(VerifyTest, LeftoversOfAnInterruptedExtraction) {
  Write(full_ + "/db/b.ibd.xbpartial", std::string("x"));
  std::filesystem::create_symlink("/etc/passwd", full_ + "/db/link.ibd");
  std::string all = All(Verify());
  EXPECT_NE(all.find("db/b.ibd.xbpartial: an unfinished file"), std::string::npos) << all;
  EXPECT_NE(all.find("db/link.ibd: a symbolic link"), std::string::npos) << all;
}

TEST_F(VerifyTest, NotADirectory) {
  VerifyOptions o;
  o.target_dir = root_ + "/nope";
  auto r = VerifyBackup(o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->sound());
  EXPECT_TRUE(VerifyBackup(VerifyOptions{}).status().code() == ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace xbak::verify
