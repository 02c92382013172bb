// RunIncrementalPrepare on small synthetic backups: a delta big enough to be
// cut into pieces applied by several threads, a table created by the
// incremental, and corrupt input refused before FULL is touched.
#include "xbak/backup/incremental_prepare.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "xbak/backup/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak {
namespace {

constexpr uint32_t kPs = 4096;
constexpr uint32_t kFlags = 0x13;  // full_crc32, 4 KiB pages

std::vector<uint8_t> MakePage(uint32_t space, uint32_t no, uint8_t fill, uint32_t fsp_size = 0) {
  std::vector<uint8_t> p(kPs, 0);
  std::fill(p.begin() + innodb::kFilPageData, p.end() - 8, fill);
  StoreBE32(p.data() + innodb::kFilPageOffset, no);
  StoreBE32(p.data() + innodb::kFilPageSpaceId, space);
  StoreBE64(p.data() + innodb::kFilPageLsn, 1500);
  if (no == 0) {
    std::fill(p.begin() + innodb::kFspHeaderOffset, p.begin() + innodb::kFspHeaderEnd, 0);
    StoreBE32(p.data() + innodb::kFspSpaceId, space);
    StoreBE32(p.data() + innodb::kFspSize, fsp_size);
    StoreBE32(p.data() + innodb::kFspSpaceFlags, kFlags);
  }
  auto flags = innodb::DecodeSpaceFlags(kFlags);
  EXPECT_TRUE(flags.ok());
  innodb::StampPageChecksum(p.data(), *flags);
  return p;
}

class IncrementalPrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xbak-incprep-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    full_ = root_ + "/full";
    inc_ = root_ + "/inc";
    for (const auto& d : {full_ + "/db", inc_ + "/db"}) ASSERT_TRUE(MakeDirs(d).ok());
    for (const auto& d : {full_, inc_}) {
      ASSERT_TRUE(WriteFileAtomic(d + "/" + kBackupCnfFile, "[mysqld]\ninnodb_page_size=4096\n").ok());
    }
    ASSERT_TRUE(WriteFileAtomic(full_ + "/" + kCheckpointsFile,
                                FormatCheckpoints({"log-applied", 0, 13000, 13010, false}))
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(inc_ + "/" + kCheckpointsFile,
                                FormatCheckpoints({"incremental", 13000, 20000, 20016, false}))
                    .ok());
    // INC's redo log: a clean log ending at 20016 (nothing to apply).
    const auto log = innodb::MakePreparedLogFile(20000, "Backup test");
    ASSERT_TRUE(WriteFileAtomic(inc_ + "/ib_logfile0", std::string(log.begin(), log.end())).ok());
    // FULL: db/t.ibd, space 5, 4 pages.
    std::string base;
    for (uint32_t no = 0; no < 4; no++) {
      auto p = MakePage(5, no, 0x11, 4);
      base.append(p.begin(), p.end());
    }
    ASSERT_TRUE(WriteFileAtomic(full_ + "/db/t.ibd", base).ok());
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // INC/db/NAME.ibd.delta with pages [0, n) (page 0 says FSP_SIZE n) of `space`.
  void WriteDelta(const std::string& name, uint32_t space, uint32_t n, uint8_t fill) {
    std::string out;
    innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
      out.append(reinterpret_cast<const char*>(d), len);
      return Status::Ok();
    });
    for (uint32_t no = 0; no < n; no++) ASSERT_TRUE(w.AddPage(no, MakePage(space, no, fill, n).data()).ok());
    ASSERT_TRUE(w.Finish().ok());
    ASSERT_TRUE(WriteFileAtomic(inc_ + "/db/" + name + ".ibd.delta", out).ok());
    ASSERT_TRUE(
        WriteFileAtomic(inc_ + "/db/" + name + ".ibd.meta", innodb::FormatDeltaMeta({kPs, 0, space})).ok());
  }

  void ExpectTable(const std::string& name, uint32_t space, uint32_t n, uint8_t fill) {
    auto text = ReadSmallFile(full_ + "/db/" + name + ".ibd", 64 << 20);
    ASSERT_TRUE(text.ok()) << text.status().message();
    ASSERT_EQ(text->size(), size_t{n} * kPs);
    for (uint32_t no = 0; no < n; no++) {
      auto want = MakePage(space, no, fill, n);
      ASSERT_EQ(0, std::memcmp(text->data() + size_t{no} * kPs, want.data(), kPs)) << name << " page " << no;
    }
  }

  std::string root_, full_, inc_;
};

TEST_F(IncrementalPrepareTest, BigDeltaIsSplitAcrossThreadsAndNewTableCreated) {
  WriteDelta("t", 5, 2600, 0x22);  // 3 blocks of up to 1023 pages: 3 pieces
  WriteDelta("new", 9, 7, 0x33);   // not in FULL: created from its page 0
  IncrementalPrepareOptions o;
  o.target_dir = full_;
  o.incremental_dir = inc_;
  o.parallel = 4;
  o.piece_bytes = 1;
  o.progress_interval = std::chrono::milliseconds(0);
  Status s = RunIncrementalPrepare(o);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectTable("t", 5, 2600, 0x22);
  ExpectTable("new", 9, 7, 0x33);
  auto cp = ReadSmallFile(full_ + "/" + kCheckpointsFile);
  ASSERT_TRUE(cp.ok());
  auto parsed = ParseCheckpoints(*cp, "cp");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->backup_type, "log-applied");  // the deltas, then INC's redo log
  EXPECT_EQ(parsed->to_lsn, 20000u);
  EXPECT_FALSE(std::filesystem::exists(full_ + "/xbak_incremental_in_progress"));
  // Applied once: the chain check refuses it a second time.
  EXPECT_FALSE(RunIncrementalPrepare(o).ok());
}

TEST_F(IncrementalPrepareTest, CorruptPageIsRefusedBeforeAnythingIsWritten) {
  WriteDelta("t", 5, 1500, 0x22);
  std::string path = inc_ + "/db/t.ibd.delta";
  auto bytes = ReadSmallFile(path, 64 << 20);
  ASSERT_TRUE(bytes.ok());
  std::string b = *bytes;
  b[kPs * (1 + 1024) + 100] ^= 1;  // second block, its first page (page 1023)
  ASSERT_TRUE(WriteFileAtomic(path, b).ok());
  IncrementalPrepareOptions o;
  o.target_dir = full_;
  o.incremental_dir = inc_;
  o.parallel = 2;
  o.progress_interval = std::chrono::milliseconds(0);
  Status s = RunIncrementalPrepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("t.ibd.delta: page 1023"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("block at byte " + std::to_string(kPs * 1024)), std::string::npos)
      << s.message();
  ExpectTable("t", 5, 4, 0x11);
  EXPECT_TRUE(std::filesystem::exists(full_ + "/" + kCheckpointsFile));
}

TEST_F(IncrementalPrepareTest, DeltaOfAnotherSpaceWithoutPageZeroIsRefused) {
  // The .meta says space 6, FULL's db/t.ibd is space 5, and the delta does
  // not recreate it: mixing two tablespaces is refused.
  WriteDelta("t", 6, 3, 0x44);
  std::string path = inc_ + "/db/t.ibd.delta";
  std::string out;
  innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t len) {
    out.append(reinterpret_cast<const char*>(d), len);
    return Status::Ok();
  });
  ASSERT_TRUE(w.AddPage(2, MakePage(6, 2, 0x44).data()).ok());
  ASSERT_TRUE(w.Finish().ok());
  ASSERT_TRUE(WriteFileAtomic(path, out).ok());
  IncrementalPrepareOptions o;
  o.target_dir = full_;
  o.incremental_dir = inc_;
  o.progress_interval = std::chrono::milliseconds(0);
  Status s = RunIncrementalPrepare(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("refusing to mix two tablespaces"), std::string::npos) << s.message();
  ExpectTable("t", 5, 4, 0x11);
}

}  // namespace
}  // namespace xbak
