// The relay logs of a point-in-time restore, written from an archive in the
// posix store that binlog-push filled with a MariaDB 10.11 server's binlogs
// (tests/unit/binlog/testdata/crc32: three files, 60 transactions in domain
// 3 of server 7, one in domain 5; the last file copied while open).
#include "xbak/pitr/relay_logs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "util/temp_dir.h"
#include "xbak/cloud/binlog_archive.h"
#include "xbak/storage/posix_store.h"
#include "xbak/util/file.h"

namespace xbak::pitr {
namespace {

std::string Testdata(const std::string& rel) {
  std::string dir(XBAK_TESTDATA);
  std::ifstream in(dir.substr(0, dir.rfind("/pitr/")) + "/binlog/testdata/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<binlog::Transaction> Transactions(const std::string& bytes) {
  binlog::Scanner s("f");
  std::vector<binlog::Transaction> out;
  s.set_on_transaction([&](const binlog::Transaction& t) { out.push_back(t); });
  EXPECT_TRUE(s.Feed(bytes).ok());
  EXPECT_TRUE(s.Finish(false).ok());
  return out;
}

class RelayLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(util::MakeDirs(dir_.path() + "/binlogs").ok());
    store_ = storage::MakePosixStore(loop_, dir_.path() + "/store");
  }
  // binlog-push of these server files (name -> bytes).
  void Archive(const std::vector<std::pair<std::string, std::string>>& files, bool expect_ok = true,
               uint32_t server_id = 7) {
    std::string index;
    for (const auto& [name, bytes] : files) {
      ASSERT_TRUE(util::WriteFileAtomic(dir_.path() + "/binlogs/" + name, bytes).ok());
      index += "./" + name + "\n";
    }
    ASSERT_TRUE(util::WriteFileAtomic(dir_.path() + "/binlogs/mysql-bin.index", index).ok());
    auto source = cloud::LocalBinlogs(dir_.path() + "/binlogs/mysql-bin.index");
    ASSERT_TRUE(source.ok());
    cloud::BinlogPushOptions o;
    o.prefix = "host1";
    o.server_id = server_id;
    o.segment_bytes = 4096;
    auto r = cloud::PushBinlogs(loop_, *store_, **source, o);
    EXPECT_EQ(r.ok(), expect_ok) << (r.ok() ? "" : r.status().message());
  }
  Result<RelayLogs> Relay(const ReplayStart& start, Target t, const std::string& sub = "relay") {
    RelayOptions o;
    o.prefix = "host1";
    o.dir = dir_.path() + "/" + sub;
    o.target = t;
    o.progress_interval = std::chrono::milliseconds(0);
    return WriteRelayLogs(loop_, *store_, o, start);
  }
  std::string RelayFile(const std::string& name, const std::string& sub = "relay") {
    auto r = util::ReadSmallFile(dir_.path() + "/" + sub + "/" + name, 64 << 20);
    return r.ok() ? *r : "";
  }
  // The start after transaction k (1-based) of mysql-bin.000001, and its GTID position.
  ReplayStart After(size_t k) {
    const auto txs = Transactions(f1_);
    ReplayStart s{"mysql-bin.000001", txs[k - 1].end, {}};
    // The file's start state (GTID list) is empty: the position is the GTID of tx k per domain.
    for (size_t i = 0; i < k; i++) binlog::Advance(&s.gtid, txs[i].gtid);
    return s;
  }

  xbak::testing::TempDir dir_;
  storage::EventLoop loop_;
  std::unique_ptr<storage::ObjectStore> store_;
  const std::string f1_ = Testdata("crc32/mysql-bin.000001"), f2_ = Testdata("crc32/mysql-bin.000002"),
                    f3_ = Testdata("crc32/mysql-bin.000003");
};

Target Latest() { return Target{}; }
Target ToGtid(const binlog::Gtid& g) {
  Target t;
  t.kind = Target::Kind::kGtid;
  t.gtid = g;
  return t;
}

TEST_F(RelayLogsTest, LatestIsEveryFileFromTheBackupsOffsetOn) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  const ReplayStart start = After(5);
  auto r = Relay(start, Latest());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->names, (std::vector<std::string>{"relay-bin.000001", "relay-bin.000002", "relay-bin.000003"}));
  EXPECT_EQ(r->files, (std::vector<std::string>{"mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000003"}));
  EXPECT_EQ(r->server_id, 7u);
  EXPECT_EQ(r->first_position, start.position);
  EXPECT_EQ(RelayFile("relay-bin.000001"), f1_);
  EXPECT_EQ(RelayFile("relay-bin.000002"), f2_);
  const size_t all = Transactions(f1_).size() + Transactions(f2_).size() + Transactions(f3_).size();
  EXPECT_EQ(r->transactions, all - 5);
  ASSERT_TRUE(r->last.has_value());
  EXPECT_EQ(r->last->gtid, Transactions(f3_).back().gtid);
  EXPECT_EQ(RelayFile("relay-bin.index"), dir_.path() + "/relay/relay-bin.000001\n" + dir_.path() +
                                              "/relay/relay-bin.000002\n" + dir_.path() +
                                              "/relay/relay-bin.000003\n");
}

TEST_F(RelayLogsTest, AGtidTargetCutsItsFileJustAfterIt) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  const auto txs2 = Transactions(f2_);
  const binlog::Transaction target = txs2[txs2.size() / 2];
  auto r = Relay(After(3), ToGtid(target.gtid));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->names.size(), 2u);
  EXPECT_EQ(RelayFile("relay-bin.000002"), f2_.substr(0, target.end));
  EXPECT_EQ(r->last->gtid, target.gtid);
  EXPECT_EQ(r->transactions, Transactions(f1_).size() - 3 + txs2.size() / 2 + 1);
  // The position at the target: domain 3 at the target, domain 5 as it was.
  binlog::GtidPosition want = After(3).gtid;
  for (const auto& t : Transactions(f1_)) binlog::Advance(&want, t.gtid);
  for (size_t i = 0; i <= txs2.size() / 2; i++) binlog::Advance(&want, txs2[i].gtid);
  EXPECT_EQ(binlog::FormatGtidPosition(r->end_state), binlog::FormatGtidPosition(want));
}

TEST_F(RelayLogsTest, AnOffsetAfterABinlogCheckpointEventIsBetweenTransactions) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  const auto t2 = Transactions(f2_);
  ASSERT_GT(t2[1].begin, t2[0].end);  // a binlog checkpoint event between the first two
  binlog::Scanner s("f");
  ASSERT_TRUE(s.Feed(f2_).ok());
  binlog::GtidPosition at = s.summary().start_state;
  binlog::Advance(&at, t2[0].gtid);
  for (uint64_t offset : {t2[0].end, t2[1].begin}) {
    auto r = Relay({"mysql-bin.000002", offset, at}, Latest(), "o" + std::to_string(offset));
    ASSERT_TRUE(r.ok()) << offset << ": " << r.status().message();
    EXPECT_EQ(r->transactions, t2.size() - 1 + Transactions(f3_).size());
  }
}

TEST_F(RelayLogsTest, TheBackupAtTheTargetReplaysNothing) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}});
  const auto txs = Transactions(f1_);
  auto r = Relay(After(4), ToGtid(txs[3].gtid));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->transactions, 0u);
  // A target the backup is already past: an older backup is needed.
  auto past = Relay(After(4), ToGtid(txs[1].gtid), "past");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("older backup"), std::string::npos) << past.status().message();
}

TEST_F(RelayLogsTest, RefusesWhatItCannotReachExactly) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  // An offset inside a transaction.
  ReplayStart inside = After(5);
  inside.position -= 10;
  auto r = Relay(inside, Latest(), "a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not between two transactions"), std::string::npos)
      << r.status().message();
  // A GTID position that is not this archive's at that offset.
  ReplayStart other = After(5);
  other.gtid.front().seq += 100;
  r = Relay(other, Latest(), "b");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not the binary logs of the backed-up server"), std::string::npos)
      << r.status().message();
  // A GTID the archive does not hold.
  r = Relay(After(5), ToGtid({3, 7, 999999}), "c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("is not in the archive"), std::string::npos) << r.status().message();
  // A file the archive does not have.
  r = Relay({"mysql-bin.000009", 4, {}}, Latest(), "d");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has no mysql-bin.000009"), std::string::npos) << r.status().message();
  // A time after the last archived transaction, with no pass after it.
  Target late;
  late.kind = Target::Kind::kTime;
  late.time = Transactions(f3_).back().time + 1000000;
  r = Relay(After(5), late, "e");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot reach"), std::string::npos) << r.status().message();
}

TEST_F(RelayLogsTest, TheTargetIsCheckedAgainstTheArchiveBeforeAnythingIsWritten) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}});
  const auto t3 = Transactions(f3_);
  EXPECT_TRUE(CheckTargetArchived(loop_, *store_, "host1", ToGtid(t3.back().gtid)).ok());
  EXPECT_TRUE(CheckTargetArchived(loop_, *store_, "host1", Latest()).ok());
  Status st = CheckTargetArchived(loop_, *store_, "host1", ToGtid({3, 7, t3.back().gtid.seq + 1}));
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  EXPECT_NE(st.message().find("is not in the archive"), std::string::npos) << st.message();
  Target late;
  late.kind = Target::Kind::kTime;
  late.time = static_cast<int64_t>(t3.back().time) + 1000000;
  st = CheckTargetArchived(loop_, *store_, "host1", late);
  EXPECT_NE(st.message().find("cannot reach"), std::string::npos) << st.message();
  late.time = t3.back().time;
  EXPECT_TRUE(CheckTargetArchived(loop_, *store_, "host1", late).ok());
  st = CheckTargetArchived(loop_, *store_, "elsewhere", Latest());
  EXPECT_NE(st.message().find("no binary logs are archived under elsewhere/binlogs/"), std::string::npos)
      << st.message();
}

TEST_F(RelayLogsTest, AGapOrADamagedSegmentIsRefusedByName) {
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_.substr(0, 400)}});
  // mysql-bin.000002 purged before it was archived whole: a gap.
  Archive({{"mysql-bin.000003", f3_}}, false);
  auto r = Relay(After(2), Latest());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds mysql-bin.000002 only up to byte"), std::string::npos)
      << r.status().message();
  // Up to a GTID before the gap is fine.
  r = Relay(After(2), ToGtid(Transactions(f1_).back().gtid), "g");
  ASSERT_TRUE(r.ok()) << r.status().message();

  // A segment changed in the store.
  auto st = cloud::ReadBinlogState(loop_, *store_, "host1", 7, "mysql-bin.000001");
  ASSERT_TRUE(st.ok() && st->has_value());
  const std::string seg = dir_.path() + "/store/" +
                          cloud::BinlogSegmentKey("host1", 7, "mysql-bin.000001", (*st)->segments[1].offset);
  auto bytes = util::ReadSmallFile(seg, 1 << 20);
  ASSERT_TRUE(bytes.ok());
  std::string bad = *bytes;
  bad[100] ^= 1;
  ASSERT_TRUE(util::WriteFileAtomic(seg, bad).ok());
  r = Relay(After(1), Latest(), "h");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("is damaged"), std::string::npos) << r.status().message();
}

TEST_F(RelayLogsTest, AfterASwitchoverTheNewPrimarysArchiveGoesOn) {
  // Server 7 archived two files and went away; server 8, its replica with
  // log_slave_updates, holds the same transactions and goes on (file 3).
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}});
  Archive({{"mysql-bin.000001", f1_}, {"mysql-bin.000002", f2_}, {"mysql-bin.000003", f3_}}, true, 8);
  const auto t1 = Transactions(f1_), t2 = Transactions(f2_), t3 = Transactions(f3_);
  auto r = Relay(After(2), Latest());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->server_id, 7u);
  EXPECT_EQ(r->files, (std::vector<std::string>{"mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000002",
                                                "mysql-bin.000003"}));
  // Every transaction once: none of server 8's copy of what server 7 archived.
  EXPECT_EQ(r->transactions, t1.size() - 2 + t2.size() + t3.size());
  EXPECT_EQ(r->last->gtid, t3.back().gtid);
  // Server 8's mysql-bin.000002 as a relay log: its first events, and what follows the transaction
  // joined at (its rotate event).
  EXPECT_EQ(RelayFile("relay-bin.000003"), f2_.substr(0, t2.front().begin) + f2_.substr(t2.back().end));
  // A GTID on the new primary's side of the switch: cut there.
  auto g = Relay(After(2), ToGtid(t3.front().gtid), "g");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->last->gtid, t3.front().gtid);
  std::string closed = f3_.substr(0, t3.front().end);  // (stored with its in-use flag clear)
  closed[21] = static_cast<char>(closed[21] & ~1);
  EXPECT_EQ(RelayFile("relay-bin.000004", "g"), closed);
}

TEST(TargetTest, LocalTimesAndTheRule) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  auto t = ParseLocalTime("2026-11-27 14:31:59", "--to-time");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 1795789919);
  EXPECT_EQ(FormatLocalTime(*t), "2026-11-27 14:31:59");
  for (const char* bad :
       {"2026-11-27", "2026-11-27 14:31", "2026-02-30 00:00:00", "x", "2026-11-27 14:31:59 "}) {
    auto r = ParseLocalTime(bad, "--to-time");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--to-time"), std::string::npos);
  }
  // The hour repeated when Berlin's clocks go back (2026-10-25 03:00 -> 02:00), and the one skipped.
  if (util::PathExists("/usr/share/zoneinfo/Europe/Berlin")) {  // (tzdata)
    ::setenv("TZ", "Europe/Berlin", 1);
    ::tzset();
    auto twice = ParseLocalTime("2026-10-25 02:30:00", "--to-time");
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find("ambiguous"), std::string::npos) << twice.status().message();
    EXPECT_FALSE(ParseLocalTime("2026-03-29 02:30:00", "--to-time").ok());
    EXPECT_TRUE(ParseLocalTime("2026-10-25 04:30:00", "--to-time").ok());
  }
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  Target at;
  at.kind = Target::Kind::kTime;
  at.time = *t;
  EXPECT_EQ(Judge(at, {{0, 1, 5}, static_cast<uint32_t>(*t), 0, 1}),
            Verdict::kInclude);  // during that second
  EXPECT_EQ(Judge(at, {{0, 1, 6}, static_cast<uint32_t>(*t + 1), 0, 1}), Verdict::kStop);
  Target g = ToGtid({0, 1, 6});
  EXPECT_EQ(Judge(g, {{0, 1, 5}, 0, 0, 1}), Verdict::kInclude);
  EXPECT_EQ(Judge(g, {{0, 1, 6}, 0, 0, 1}), Verdict::kIncludeLast);
  EXPECT_EQ(Judge(Latest(), {{0, 1, 6}, 0, 0, 1}), Verdict::kInclude);
}

}  // namespace
}  // namespace xbak::pitr
