// LogScanner over synthetic backup logs: every mtr from the checkpoint in
// order with its LSNs, the end of the log found and said, a second scan
// after Rewind, damage and files that are no log named.
#include "xbak/prepare/log_scanner.h"

#include <gtest/gtest.h>

#include <vector>

#include "testing/redo_test_util.h"
#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {

using testing::redo::kStartLsn;
using testing::redo::LogBuilder;

class LogScannerTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& bytes) {
    std::string path = dir_.path() + "/ib_logfile0";
    EXPECT_TRUE(util::WriteFileAtomic(path, bytes).ok());
    return path;
  }
  // Three mtrs: two page writes, then two records in one.
  std::string ThreeMtrs(std::vector<uint64_t>* ends) {
    LogBuilder b;
    b.Rec(0x30, 3, {100, 0x42});
    ends->push_back(b.End());
    b.Rec(0x30, 4, {10, 0x01, 0x02});
    ends->push_back(b.End());
    b.Rec(0x30, 5, {20, 0x07}).Rec(0x30, 5, {30, 0x08}, /*same_page=*/true);
    ends->push_back(b.End());
    return b.File(ends->back());
  }
  struct Seen {
    uint64_t start, end;
  };
  Status ScanAll(LogScanner& s, std::vector<Seen>* seen, uint64_t* end_lsn, std::string* why) {
    return s.Scan(
        [&](const MtrView& m) {
          seen->push_back({m.start_lsn, m.end_lsn});
          return Status::Ok();
        },
        end_lsn, why);
  }
  xbak::testing::TempDir dir_;
};

TEST_F(LogScannerTest, HandsOutEveryMtrInOrderAndSaysWhereTheLogEnds) {
  std::vector<uint64_t> ends;
  auto scanner = LogScanner::Open(Write(ThreeMtrs(&ends)), nullptr);
  ASSERT_TRUE(scanner.ok()) << scanner.status().message();
  EXPECT_FALSE((*scanner)->encrypted());
  EXPECT_EQ((*scanner)->checkpoint().checkpoint_lsn, kStartLsn);
  std::vector<Seen> seen;
  uint64_t end = 0;
  std::string why;
  ASSERT_TRUE(ScanAll(**scanner, &seen, &end, &why).ok());
  ASSERT_EQ(seen.size(), 3u);
  uint64_t start = kStartLsn;
  for (size_t i = 0; i < seen.size(); i++) {
    EXPECT_EQ(seen[i].start, start) << i;
    EXPECT_EQ(seen[i].end, ends[i]) << i;
    start = ends[i];
  }
  EXPECT_EQ(end, ends.back());
  EXPECT_FALSE(why.empty());  // what stopped it: the end of the written log

  // A second pass (prepare's apply after its catalog pass) sees the same.
  (*scanner)->Rewind();
  std::vector<Seen> again;
  ASSERT_TRUE(ScanAll(**scanner, &again, &end, &why).ok());
  EXPECT_EQ(again.size(), 3u);
}

TEST_F(LogScannerTest, AnErrorFromTheCallerStopsTheScan) {
  std::vector<uint64_t> ends;
  auto scanner = LogScanner::Open(Write(ThreeMtrs(&ends)), nullptr);
  ASSERT_TRUE(scanner.ok());
  int calls = 0;
  uint64_t end = 0;
  std::string why;
  Status s = (*scanner)->Scan(
      [&](const MtrView&) { return ++calls == 2 ? Error(ErrorCode::kIo, "disk gone") : Status::Ok(); }, &end,
      &why);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_EQ(calls, 2);
}

TEST_F(LogScannerTest, ADamagedMtrEndsTheLogBeforeIt) {
  std::vector<uint64_t> ends;
  std::string file = ThreeMtrs(&ends);
  // A byte of the second mtr flipped: its CRC-32C fails, so the log ends
  // where it starts (as after a crash, what follows is not the log).
  file[file.size() - (ends[2] - ends[0]) + 2] ^= 0x10;
  auto scanner = LogScanner::Open(Write(file), nullptr);
  ASSERT_TRUE(scanner.ok());
  std::vector<Seen> seen;
  uint64_t end = 0;
  std::string why;
  ASSERT_TRUE(ScanAll(**scanner, &seen, &end, &why).ok());
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(end, ends[0]);
  EXPECT_FALSE(why.empty());
}

TEST_F(LogScannerTest, AFileThatIsNoRedoLogIsRefusedByName) {
  std::string path = Write(std::string(20000, 'x'));
  auto scanner = LogScanner::Open(path, nullptr);
  ASSERT_FALSE(scanner.ok());
  EXPECT_NE(scanner.status().message().find(path), std::string::npos) << scanner.status().message();
  auto missing = LogScanner::Open(dir_.path() + "/nope", nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace xbak::prepare
