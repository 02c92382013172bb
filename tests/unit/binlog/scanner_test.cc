// The scanner on binary logs a MariaDB 10.11 server wrote (testdata/: three
// files each with binlog_checksum CRC32 and NONE, and with encrypt_binlog;
// max_binlog_size 8 KiB, 60 transactions in domain 3 of server 7, one in
// domain 5, a FLUSH BINARY LOGS, the last file copied while open). What
// each file holds was read with mariadb-binlog, the server's own reader.
#include "xbak/binlog/scanner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace xbak::binlog {
namespace {

std::string Read(const std::string& rel) {
  std::ifstream in(std::string(XBAK_TESTDATA) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<FileSummary> Scan(const std::string& bytes, bool whole, size_t piece = 0) {
  Scanner s("f");
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
    XBAK_RETURN_IF_ERROR(s.Feed(std::string_view(bytes).substr(at, n)));
    at += n;
  }
  XBAK_RETURN_IF_ERROR(s.Finish(whole));
  return s.summary();
}

TEST(ScannerTest, WhatMariadbBinlogSeesInEachFile) {
  // variant, last GTID of file 1 (events are smaller without checksums, so
  // more fit before the 8 KiB rotation), transactions in file 2.
  struct Variant {
    const char* name;
    const char* file1_last;
    uint64_t file2_transactions;
  };
  for (const auto& [variant, file1_last, file2_transactions] :
       {Variant{"crc32", "3-7-37", 27}, Variant{"none", "3-7-39", 25}}) {
    SCOPED_TRACE(variant);
    auto f1 = Scan(Read(std::string(variant) + "/mysql-bin.000001"), true);
    ASSERT_TRUE(f1.ok()) << f1.status().message();
    EXPECT_EQ(f1->checksum, std::string(variant) == "crc32" ? Checksum::kCrc32 : Checksum::kNone);
    EXPECT_EQ(f1->server_version, "10.11.19-MariaDB-0+deb12u1-log");
    EXPECT_FALSE(f1->in_use);
    EXPECT_TRUE(f1->start_state.empty());
    EXPECT_EQ(FormatGtid(*f1->first_gtid), "3-7-1");
    EXPECT_EQ(FormatGtid(*f1->last_gtid), file1_last);
    EXPECT_EQ(f1->transactions, ParseGtid(file1_last)->seq);
    EXPECT_EQ(f1->rotate_to, "mysql-bin.000002");
    EXPECT_EQ(f1->server_ids, std::vector<uint32_t>{7});
    EXPECT_EQ(f1->complete_bytes, Read(std::string(variant) + "/mysql-bin.000001").size());
    EXPECT_EQ(f1->transaction_end, f1->complete_bytes);
    EXPECT_GT(f1->first_time, 1795000000u);
    EXPECT_LE(f1->first_time, f1->last_time);

    auto f2 = Scan(Read(std::string(variant) + "/mysql-bin.000002"), true);
    ASSERT_TRUE(f2.ok()) << f2.status().message();
    EXPECT_EQ(FormatGtidPosition(f2->start_state), file1_last);
    EXPECT_EQ(f2->first_gtid->seq, ParseGtid(file1_last)->seq + 1);
    EXPECT_EQ(f2->transactions, file2_transactions);
    EXPECT_EQ(FormatGtid(*f2->last_gtid), "5-7-1");  // the last transaction, in the other domain
    EXPECT_EQ(f2->rotate_to, "mysql-bin.000003");

    auto f3 = Scan(Read(std::string(variant) + "/mysql-bin.000003"), false);
    ASSERT_TRUE(f3.ok()) << f3.status().message() << " (" << variant << ")";
    EXPECT_TRUE(f3->in_use);
    EXPECT_EQ(FormatGtidPosition(f3->start_state), "3-7-63,5-7-1");
    EXPECT_EQ(FormatGtid(*f3->first_gtid), "3-7-64");
    EXPECT_EQ(f3->rotate_to, "");
  }
}

TEST(ScannerTest, PiecesCutAnywhereGiveTheSameSummary) {
  const std::string bytes = Read("crc32/mysql-bin.000002");
  auto whole = Scan(bytes, true);
  ASSERT_TRUE(whole.ok());
  for (size_t piece : {1, 7, 19, 4096}) {
    auto cut = Scan(bytes, true, piece);
    ASSERT_TRUE(cut.ok()) << piece << ": " << cut.status().message();
    EXPECT_EQ(cut->events, whole->events);
    EXPECT_EQ(cut->last_gtid, whole->last_gtid);
    EXPECT_EQ(cut->complete_bytes, whole->complete_bytes);
    EXPECT_EQ(cut->transaction_end, whole->transaction_end);
    EXPECT_EQ(cut->transactions, whole->transactions);
  }
}

TEST(ScannerTest, AFileCutShortIsWholeOnlyUpToItsLastTransaction) {
  const std::string bytes = Read("crc32/mysql-bin.000001");
  auto full = Scan(bytes, true);
  ASSERT_TRUE(full.ok());
  const std::string cut = bytes.substr(0, bytes.size() * 2 / 3);
  auto open = Scan(cut, false);
  ASSERT_TRUE(open.ok()) << open.status().message();
  EXPECT_LT(open->transactions, full->transactions);
  EXPECT_LE(open->transaction_end, open->complete_bytes);
  EXPECT_LE(open->complete_bytes, cut.size());
  // Up to transaction_end, the file is whole transactions.
  auto prefix = Scan(cut.substr(0, open->transaction_end), true);
  ASSERT_TRUE(prefix.ok()) << prefix.status().message();
  EXPECT_EQ(prefix->transactions, open->transactions);
  EXPECT_EQ(prefix->last_gtid, open->last_gtid);
  if (open->complete_bytes < cut.size()) {
    auto closed = Scan(cut, true);
    EXPECT_NE(closed.status().message().find("ends inside an event"), std::string::npos)
        << closed.status().message();
  }
}

TEST(ScannerTest, AResumedScanEqualsOneFromTheStart) {
  const std::string bytes = Read("crc32/mysql-bin.000002");
  auto whole = Scan(bytes, true);
  ASSERT_TRUE(whole.ok());
  Scanner first("f");
  ASSERT_TRUE(first.Feed(std::string_view(bytes).substr(0, bytes.size() / 2)).ok());
  const FileSummary half = first.summary();
  ASSERT_GT(half.transactions, 0u);
  Scanner rest = Scanner::Resume("f", half);
  ASSERT_TRUE(rest.Feed(std::string_view(bytes).substr(half.transaction_end)).ok());
  ASSERT_TRUE(rest.Finish(true).ok());
  EXPECT_EQ(rest.summary().events, whole->events);
  EXPECT_EQ(rest.summary().transactions, whole->transactions);
  EXPECT_EQ(rest.summary().first_gtid, whole->first_gtid);
  EXPECT_EQ(rest.summary().last_gtid, whole->last_gtid);
  EXPECT_EQ(rest.summary().complete_bytes, bytes.size());
  EXPECT_EQ(rest.summary().rotate_to, "mysql-bin.000003");
}

TEST(ScannerTest, DamageIsNamedWithItsOffset) {
  std::string bytes = Read("crc32/mysql-bin.000001");
  bytes[1000] ^= 0x40;
  auto r = Scan(bytes, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("f at byte "), std::string::npos) << r.status().message();
  // Without checksums, a damaged length still cannot pass: the next position disagrees.
  std::string none = Read("none/mysql-bin.000001");
  none[4 + 252 + 9] ^= 0x01;  // the length of the event after the format description
  EXPECT_EQ(Scan(none, true).status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(Scan("GIF89a", true).status().message().find("not a binary log"), std::string::npos);
  EXPECT_NE(Scan("", true).status().message().find("magic"), std::string::npos);
}

// testdata/xa: XA transactions (XA PREPARE events, XA COMMIT and ROLLBACK
// queries), log_bin_compress=ON (compressed queries and rows events),
// binlog_format=ROW, and the server killed with -9: the file is left with
// its in-use flag set. mariadb-binlog reads 26 GTIDs, 0-9-1 to 0-9-26.
TEST(ScannerTest, XaCompressedEventsAndACrashedServersFile) {
  const std::string bytes = Read("xa/mysql-bin.000001");
  auto s = Scan(bytes, true);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->in_use);
  EXPECT_EQ(s->transactions, 26u);
  EXPECT_EQ(FormatGtid(*s->first_gtid), "0-9-1");
  EXPECT_EQ(FormatGtid(*s->last_gtid), "0-9-26");
  EXPECT_EQ(s->transaction_end, bytes.size());
  // Still being written: every transaction but the last is known complete
  // once the next GTID begins, or at its own end event.
  auto open = Scan(bytes, false);
  ASSERT_TRUE(open.ok());
  EXPECT_GE(open->transactions, 25u);
  // Torn in its last event (the crash cut a write short): closed, it is refused, naming the byte.
  auto torn = Scan(bytes.substr(0, bytes.size() - 10), true);
  ASSERT_FALSE(torn.ok());
  EXPECT_NE(torn.status().message().find("ends inside an event"), std::string::npos);
  auto torn_open = Scan(bytes.substr(0, bytes.size() - 10), false);
  ASSERT_TRUE(torn_open.ok());
  EXPECT_LT(torn_open->transaction_end, bytes.size() - 10);
}

TEST(ScannerTest, EachTransactionIsReportedWithWhereItBeginsAndEnds) {
  for (const char* f :
       {"crc32/mysql-bin.000001", "crc32/mysql-bin.000002", "none/mysql-bin.000001", "xa/mysql-bin.000001"}) {
    const std::string bytes = Read(f);
    for (size_t piece : {size_t{0}, size_t{97}}) {
      Scanner s(f);
      std::vector<Transaction> txs;
      s.set_on_transaction([&](const Transaction& t) { txs.push_back(t); });
      for (size_t at = 0; at < bytes.size();) {
        const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
        ASSERT_TRUE(s.Feed(std::string_view(bytes).substr(at, n)).ok());
        at += n;
      }
      ASSERT_TRUE(s.Finish(true).ok()) << f;
      const FileSummary& sum = s.summary();
      ASSERT_EQ(txs.size(), sum.transactions) << f;
      GtidPosition end = sum.start_state;
      for (const auto& t : txs) Advance(&end, t.gtid);
      EXPECT_EQ(FormatGtidPosition(sum.end_state), FormatGtidPosition(end)) << f;
      ASSERT_FALSE(txs.empty());
      EXPECT_EQ(txs.front().gtid, *sum.first_gtid) << f;
      EXPECT_EQ(txs.back().gtid, *sum.last_gtid) << f;
      EXPECT_EQ(txs.back().time, sum.last_time) << f;
      // (Events after the last transaction, a rotate, count as whole too.)
      EXPECT_LE(txs.back().end, sum.transaction_end) << f;
      EXPECT_GT(txs.back().end + 100, sum.transaction_end) << f;
      for (size_t i = 0; i < txs.size(); i++) {
        EXPECT_LT(txs[i].begin, txs[i].end) << f << " #" << i;
        // A transaction begins with its GTID event, at or after the end of the one before (a binlog
        // checkpoint event may be between).
        if (i > 0) {
          EXPECT_GE(txs[i].begin, txs[i - 1].end) << f << " #" << i;
          EXPECT_LT(txs[i].begin, txs[i - 1].end + 100) << f << " #" << i;
        }
        EXPECT_EQ(static_cast<unsigned char>(bytes[txs[i].begin + 4]), 162u) << f << " #" << i;  // GTID event
      }
    }
  }
}

TEST(ScannerTest, AFileJustCreatedIsNoErrorWhileOpen) {
  EXPECT_TRUE(Scan("", false).ok());
  EXPECT_TRUE(Scan(std::string(kMagic), false).ok());
  auto s = Scan(std::string(kMagic), false);
  EXPECT_EQ(s->transaction_end, 0u);  // nothing to store yet: not even the magic alone
  EXPECT_FALSE(Scan(std::string(kMagic), true).ok());
}

TEST(ScannerTest, AnEncryptedBinlogIsRefusedByName) {
  auto r = Scan(Read("enc/mysql-bin.000002"), true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("encrypt_binlog=ON"), std::string::npos) << r.status().message();
}

TEST(GtidTest, ParseAndFormat) {
  EXPECT_EQ(FormatGtid(*ParseGtid("0-1-42")), "0-1-42");
  EXPECT_FALSE(ParseGtid("0-1").ok());
  EXPECT_FALSE(ParseGtid("0-1-x").ok());
  EXPECT_FALSE(ParseGtid("-1-1-1").ok());
  EXPECT_FALSE(ParseGtid("0-4294967296-1").ok());
  auto p = ParseGtidPosition(" 5-7-1, 0-1-42 ");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(FormatGtidPosition(*p), "0-1-42,5-7-1");
  Advance(&*p, {0, 2, 43});
  Advance(&*p, {3, 7, 1});
  EXPECT_EQ(FormatGtidPosition(*p), "0-2-43,3-7-1,5-7-1");
  EXPECT_NE(ParseGtidPosition("0-1-1,0-2-2").status().message().find("twice"), std::string::npos);
  EXPECT_TRUE(ParseGtidPosition("")->empty());
}

}  // namespace
}  // namespace xbak::binlog
