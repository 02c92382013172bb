// binlog-push's passes over a binlog directory (the MariaDB server's files in
// tests/unit/binlog/testdata, copied into a directory as the server would
// have them, growing and rotating) into the posix store.
#include "xbak/cloud/binlog_archive.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "util/temp_dir.h"
#include "xbak/cloud/sync.h"
#include "xbak/storage/posix_store.h"
#include "xbak/util/file.h"

namespace xbak::cloud {
namespace {

std::string Testdata(const std::string& rel) {
  // This layer's testdata is tests/unit/cloud/testdata; the binlogs live with the binlog layer's.
  std::string dir(XBAK_TESTDATA);
  std::ifstream in(dir.substr(0, dir.rfind("/cloud/")) + "/binlog/testdata/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class BinlogArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(util::MakeDirs(dir_.path() + "/binlogs").ok());
    ASSERT_TRUE(util::MakeDirs(dir_.path() + "/store").ok());
    store_ = storage::MakePosixStore(loop_, dir_.path() + "/store");
  }
  // The server's directory: FILES (name -> bytes), listed in the index in order.
  void Server(const std::vector<std::pair<std::string, std::string>>& files) {
    std::string index;
    for (const auto& [name, bytes] : files) {
      ASSERT_TRUE(util::WriteFileAtomic(dir_.path() + "/binlogs/" + name, bytes).ok());
      index += "./" + name + "\n";
    }
    ASSERT_TRUE(util::WriteFileAtomic(dir_.path() + "/binlogs/mysql-bin.index", index).ok());
  }
  Result<BinlogPushReport> Push(uint64_t segment_bytes = 4096) {
    auto source = LocalBinlogs(dir_.path() + "/binlogs/mysql-bin.index");
    if (!source.ok()) return source.status();
    BinlogPushOptions o;
    o.prefix = "host1";
    o.server_id = 7;
    o.segment_bytes = segment_bytes;
    return PushBinlogs(loop_, *store_, **source, o);
  }
  Result<ArchivedBinlog> State(const std::string& file) {
    const std::string key = BinlogStateKey("host1", 7, file);
    XBAK_ASSIGN_OR_RETURN(std::string text, GetSync(loop_, *store_, key));
    return ParseBinlogState(text, key);
  }
  // The file as the archive holds it: its segments concatenated.
  std::string Archived(const std::string& file) {
    auto st = State(file);
    EXPECT_TRUE(st.ok()) << st.status().message();
    std::string out;
    for (const auto& seg : st->segments) {
      auto bytes = GetSync(loop_, *store_, BinlogSegmentKey("host1", 7, file, seg.offset));
      EXPECT_TRUE(bytes.ok());
      EXPECT_EQ(storage::Md5(*bytes), seg.md5);
      out += *bytes;
    }
    return out;
  }

  xbak::testing::TempDir dir_;
  storage::EventLoop loop_;
  std::unique_ptr<storage::ObjectStore> store_;
  const std::string f1_ = Testdata("crc32/mysql-bin.000001"), f2_ = Testdata("crc32/mysql-bin.000002"),
                    f3_ = Testdata("crc32/mysql-bin.000003");
};

TEST_F(BinlogArchiveTest, ClosedFilesWholeTheOpenOneToItsLastTransactionThenNothingTwice) {
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  auto r = Push();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->completed, (std::vector<std::string>{"mysql-bin.000001", "mysql-bin.000002"}));
  EXPECT_EQ(Archived("mysql-bin.000001"), f1_);
  EXPECT_EQ(Archived("mysql-bin.000002"), f2_);
  auto s1 = State("mysql-bin.000001");
  ASSERT_TRUE(s1.ok());
  EXPECT_TRUE(s1->complete);
  EXPECT_GT(s1->segments.size(), 1u);  // 4 KiB segments, each whole transactions
  EXPECT_EQ(binlog::FormatGtid(*s1->summary.last_gtid), "3-7-37");
  auto s3 = State("mysql-bin.000003");
  ASSERT_TRUE(s3.ok());
  EXPECT_FALSE(s3->complete);
  // The open file's part as the server will leave it: its in-use flag clear.
  std::string closed = f3_.substr(0, s3->summary.transaction_end);
  closed[21] = static_cast<char>(closed[21] & ~1);
  EXPECT_NE(closed, f3_.substr(0, closed.size()));
  EXPECT_EQ(Archived("mysql-bin.000003"), closed);
  EXPECT_EQ(binlog::FormatGtidPosition(s3->summary.start_state), "3-7-63,5-7-1");
  // A second pass: nothing new, nothing stored.
  auto again = Push();
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->segments, 0u);
  EXPECT_TRUE(again->completed.empty());
}

TEST_F(BinlogArchiveTest, AServiceKeepsCompleteFilesStatesBetweenPasses) {
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_.substr(0, 400)}});
  auto source = LocalBinlogs(dir_.path() + "/binlogs/mysql-bin.index");
  ASSERT_TRUE(source.ok());
  std::map<std::string, ArchivedBinlog> complete;
  BinlogPushOptions o;
  o.prefix = "host1";
  o.server_id = 7;
  o.segment_bytes = 4096;
  o.complete = &complete;
  ASSERT_TRUE(PushBinlogs(loop_, *store_, **source, o).ok());
  EXPECT_EQ(complete.size(), 2u);  // 000001 and 000002; 000003 is open
  // A complete file's state is not read again: gone from the store, it is not noticed (nor stored again).
  const std::string key = BinlogStateKey("host1", 7, "mysql-bin.000001");
  ASSERT_TRUE(util::RemoveTree(dir_.path() + "/store/" + key).ok());
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  auto r = PushBinlogs(loop_, *store_, **source, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(GetSync(loop_, *store_, key).ok());
  EXPECT_EQ(
      Archived("mysql-bin.000003"),
      f3_.substr(0, State("mysql-bin.000003")->end()).replace(21, 1, 1, static_cast<char>(f3_[21] & ~1)));
  // Purged from the server: forgotten.
  Server({{"mysql-bin.000003", f3_}});
  ASSERT_TRUE(PushBinlogs(loop_, *store_, **source, o).ok());
  EXPECT_EQ(complete.size(), 0u);
}

TEST_F(BinlogArchiveTest, AGrowingFileGoesOnWhereItStoppedAndIsCompletedWhenRotated) {
  // The server wrote half of mysql-bin.000001, then the rest, then rotated.
  Server({{"mysql-bin.000001", f1_.substr(0, f1_.size() / 2)}});
  auto r = Push();
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto half = State("mysql-bin.000001");
  ASSERT_TRUE(half.ok());
  EXPECT_FALSE(half->complete);
  EXPECT_LE(half->end(), f1_.size() / 2);
  // All of it, ending with the server's rotate event: closed, though the
  // next file is not listed yet.
  Server({{"mysql-bin.000001", f1_}});
  auto r2 = Push();
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(r2->completed, std::vector<std::string>{"mysql-bin.000001"});
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_.substr(0, 300)}});
  auto r3 = Push();
  ASSERT_TRUE(r3.ok()) << r3.status().message();
  EXPECT_TRUE(r3->completed.empty());
  auto whole = State("mysql-bin.000001");
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->complete);
  EXPECT_EQ(Archived("mysql-bin.000001"), f1_);  // no gap, no byte twice
  EXPECT_EQ(whole->summary.transactions, 37u);
  EXPECT_EQ(binlog::FormatGtid(*whole->summary.first_gtid), "3-7-1");
}

TEST_F(BinlogArchiveTest, APurgedFileIsAGapRecordedAndReportedAfterTheRest) {
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_.substr(0, 400)}});
  ASSERT_TRUE(Push().ok());
  // mysql-bin.000002 is purged (the server keeps 000003 and a new 000004).
  Server({{"mysql-bin.000003", f3_}, {"mysql-bin.000004", f3_}});
  auto r = Push();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("mysql-bin.000002 to mysql-bin.000002"), std::string::npos)
      << r.status().message();
  auto listed = ListAllSync(loop_, *store_, BinlogDir("host1", 7) + "gap-");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE(State("mysql-bin.000003")->complete);  // what was there was archived all the same
  // The next pass: the gap is known, a warning, not an error every time.
  auto next = Push();
  ASSERT_TRUE(next.ok()) << next.status().message();
  ASSERT_EQ(next->warnings.size(), 1u);
  EXPECT_NE(next->warnings[0].find("gap recorded earlier"), std::string::npos);
}

TEST_F(BinlogArchiveTest, AFileACrashLeftTornIsCompleteUpToItsLastWholeTransaction) {
  // The server crashed with mysql-bin.000001 open (its in-use flag set), the
  // last write torn, and started again with mysql-bin.000002.
  const std::string xa = Testdata("xa/mysql-bin.000001");
  const std::string torn = xa.substr(0, xa.size() - 10);
  Server({{"mysql-bin.000001", torn}, {"mysql-bin.000002", f3_}});
  auto r = Push();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("crashed"), std::string::npos) << r->warnings[0];
  auto st = State("mysql-bin.000001");
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->complete);
  EXPECT_TRUE(st->truncated);
  EXPECT_LT(st->end(), torn.size());
  std::string whole_part = torn.substr(0, st->end());
  whole_part[21] = static_cast<char>(whole_part[21] & ~1);
  EXPECT_EQ(Archived("mysql-bin.000001"), whole_part);
}

TEST_F(BinlogArchiveTest, TheLastFileIsLeftOpenUnlessItSaysItEnds) {
  // Crashed (in-use flag set, no rotate, no stop event) and the last file:
  // the server may still write it (it has not restarted), so it stays open.
  Server({{"mysql-bin.000001", Testdata("xa/mysql-bin.000001")}});
  auto r = Push();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->completed.empty());
  EXPECT_FALSE(State("mysql-bin.000001")->complete);
}

TEST_F(BinlogArchiveTest, DamageStopsThePassAtTheLastGoodTransaction) {
  std::string bad = f1_;
  bad[bad.size() / 2] ^= 0x20;
  Server({{"mysql-bin.000001", bad}, {"mysql-bin.000002", f2_}});
  auto r = Push(1024);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("mysql-bin.000001 at byte"), std::string::npos) << r.status().message();
  auto st = State("mysql-bin.000001");
  ASSERT_TRUE(st.ok()) << st.status().message();  // 1 KiB segments: the good part was stored
  EXPECT_FALSE(st->complete);
  EXPECT_GT(st->end(), 0u);
  EXPECT_LE(st->end(), bad.size() / 2);
  EXPECT_EQ(Archived("mysql-bin.000001"), f1_.substr(0, st->end()));
  EXPECT_FALSE(GetSync(loop_, *store_, BinlogStateKey("host1", 7, "mysql-bin.000002")).ok());
}

TEST_F(BinlogArchiveTest, AFileOfTheSameNameWrittenAnewIsRefused) {
  // Complete in the archive (closed by a later file), then RESET MASTER.
  Server({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_.substr(0, 300)}});
  ASSERT_TRUE(Push().ok());
  ASSERT_TRUE(State("mysql-bin.000001")->complete);
  // RESET MASTER: mysql-bin.000001 again, other bytes.
  Server({{"mysql-bin.000001", Testdata("none/mysql-bin.000001")}});
  auto r = Push();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("RESET MASTER"), std::string::npos) << r.status().message();
}

TEST(BinlogStateTest, RoundTripAndDamage) {
  ArchivedBinlog a;
  a.file = "mysql-bin.000009";
  a.server_id = 7;
  a.segments = {{0, 100, storage::Md5("a")}, {100, 50, storage::Md5("b")}};
  a.summary.transaction_end = 150;
  a.summary.first_gtid = binlog::Gtid{0, 7, 5};
  a.summary.start_state = {{0, 7, 4}};
  a.head_bytes = 100;
  auto back = ParseBinlogState(EncodeBinlogState(a), "s");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->end(), 150u);
  EXPECT_EQ(back->summary.first_gtid, a.summary.first_gtid);
  EXPECT_FALSE(back->summary.last_gtid.has_value());
  std::string text = EncodeBinlogState(a);
  text.replace(text.find("\"offset\": 100"), 13, "\"offset\": 101");
  EXPECT_NE(ParseBinlogState(text, "s").status().message().find("not contiguous"), std::string::npos);
  EXPECT_EQ(ParseBinlogState("{", "s").status().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace xbak::cloud
