#include "xbak/innodb/redo_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "xbak/innodb/log_copier.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

extern char** environ;

namespace xbak::innodb {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

// ---------------------------------------------------------------------------
// Builders for synthetic redo: records, mtrs, and a circular ib_logfile0.

void Append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

Bytes Varint(uint32_t v) {
  uint8_t b[5];
  size_t n = EncodeVarint(v, b);
  return Bytes(b, b + n);
}

// A record with the server's length framing around `payload`.
Bytes Record(uint8_t type, const Bytes& payload) {
  Bytes r;
  if (!payload.empty() && payload.size() <= 15) {
    r.push_back(static_cast<uint8_t>(type | payload.size()));
  } else {
    // V = bytes after the first byte, varint included, minus 15; the varint's
    // own length depends on V, so try each length.
    r.push_back(type);
    for (size_t vlen = 1; vlen <= 5; vlen++) {
      uint32_t v = static_cast<uint32_t>(payload.size() + vlen - 15);
      Bytes enc = Varint(v);
      if (enc.size() == vlen) {
        Append(r, enc);
        break;
      }
    }
  }
  Append(r, payload);
  return r;
}

Bytes FileRecord(uint8_t type, uint32_t space, const std::string& name) {
  Bytes p = Varint(space);
  p.push_back(0);  // page 0
  p.insert(p.end(), name.begin(), name.end());
  return Record(type, p);
}

Bytes CheckpointRecord(uint64_t lsn) {
  Bytes p{0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  StoreBE64(p.data() + 2, lsn);
  return Record(kFileCheckpoint, p);
}

// A WRITE record of n data bytes to (space, page), data filled from `seed`.
Bytes PageWrite(uint32_t space, uint32_t page, size_t n, uint32_t seed) {
  Bytes p = Varint(space);
  Append(p, Varint(page));
  Append(p, Varint(38));
  for (size_t i = 0; i < n; i++) p.push_back(static_cast<uint8_t>((seed + i * 7) & 0xFF));
  return Record(0x30, p);
}

Bytes Mtr(const Bytes& records, bool seq_bit) {
  Bytes m = records;
  m.push_back(seq_bit ? 1 : 0);
  uint8_t crc[4];
  StoreBE32(crc, crc32c::Value(records.data(), records.size()));
  m.insert(m.end(), crc, crc + 4);
  return m;
}

Bytes ServerHeader(uint32_t format, uint64_t first_lsn, const std::string& creator) {
  Bytes h(kLogHeaderSize, 0);
  StoreBE32(h.data(), format);
  StoreBE64(h.data() + kLogHeaderFirstLsn, first_lsn);
  std::copy(creator.begin(), creator.end(), h.begin() + kLogHeaderCreator);
  StoreBE32(h.data() + kLogHeaderCrc, crc32c::Value(h.data(), kLogHeaderCrc));
  return h;
}

Bytes CheckpointBlock(uint64_t cp, uint64_t end) {
  Bytes b(kCheckpointBlockSize, 0);
  StoreBE64(b.data(), cp);
  StoreBE64(b.data() + 8, end);
  StoreBE32(b.data() + kCheckpointCrc, crc32c::Value(b.data(), kCheckpointCrc));
  return b;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/xbak-redo-test-XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    path_ = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A server-like circular ib_logfile0 written with pwrite, as a live server
// would: mtrs land at LsnToOffset(), wrap round, carry the sequence bit of the
// pass their terminator is on. `linear()` is what a correct backup log holds.
class SynthLog {
 public:
  SynthLog(std::string path, uint64_t capacity, uint64_t first_lsn)
      : path_(std::move(path)), capacity_(capacity), first_lsn_(first_lsn), lsn_(first_lsn) {
    auto f = File::CreateNew(path_);
    EXPECT_TRUE(f.ok()) << f.status().message();
    file_.emplace(std::move(f).value());
    EXPECT_TRUE(file_->Truncate(kLogStartOffset + capacity).ok());
    Bytes h = ServerHeader(kRedoFormat10_8, first_lsn, "MariaDB 10.11.19");
    EXPECT_TRUE(file_->PWrite(h.data(), h.size(), 0).ok());
    SetCheckpoint(first_lsn, first_lsn);
  }
  // Writes the checkpoint block the server would write next (alternating).
  void SetCheckpoint(uint64_t cp, uint64_t end) {
    Bytes b = CheckpointBlock(cp, end);
    size_t off = (checkpoint_no_++ % 2) ? kLogCheckpoint2 : kLogCheckpoint1;
    EXPECT_TRUE(file_->PWrite(b.data(), b.size(), off).ok());
    checkpoint_lsn_ = cp;
  }
  // Writes one mtr of `records` at the current LSN; returns its start LSN.
  uint64_t Write(const Bytes& records) {
    uint64_t start = lsn_;
    uint64_t term = start + records.size();
    Bytes m = Mtr(records, SequenceBit(term, first_lsn_, capacity_));
    size_t done = 0;
    while (done < m.size()) {  // split at the end of the circular area
      uint64_t off = LsnToOffset(start + done, first_lsn_, capacity_);
      size_t n = static_cast<size_t>(std::min<uint64_t>(m.size() - done, kLogStartOffset + capacity_ - off));
      EXPECT_TRUE(file_->PWrite(m.data() + done, n, off).ok());
      done += n;
    }
    m[records.size()] = 1;
    Append(linear_, m);
    lsn_ += m.size();
    return start;
  }
  // A checkpoint as the server writes it: FILE_MODIFY + FILE_CHECKPOINT mtr at
  // end_lsn, then the checkpoint block.
  void Checkpoint(uint64_t cp) {
    Bytes r = FileRecord(kFileModify, 5, "./db/t1.ibd");
    Append(r, CheckpointRecord(cp));
    uint64_t end = Write(r);
    SetCheckpoint(cp, end);
  }
  uint64_t lsn() const { return lsn_; }
  uint64_t checkpoint_lsn() const { return checkpoint_lsn_; }
  uint64_t capacity() const { return capacity_; }
  const Bytes& linear() const { return linear_; }  // mtrs from first_lsn, terminators = 1
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<File> file_;
  uint64_t capacity_, first_lsn_, lsn_;
  uint64_t checkpoint_lsn_ = 0;
  uint64_t checkpoint_no_ = 0;
  Bytes linear_;
};

// Parses a linear backup log (header + mtrs) end to end. Returns the number
// of mtrs, or -1 with a gtest failure.
struct LinearScan {
  size_t mtrs = 0;
  uint64_t end_lsn = 0;
  std::vector<std::pair<FileOp, uint64_t>> ops;
  std::vector<uint64_t> checkpoints;          // FILE_CHECKPOINT LSNs
  std::vector<uint64_t> checkpoint_mtr_lsns;  // where they start
};
::testing::AssertionResult ScanLinear(const Bytes& log, LinearScan* s) {
  if (log.size() < kLogStartOffset) return ::testing::AssertionFailure() << "short backup log";
  auto h = ParseLogHeader(log.data(), log.size());
  if (!h.ok()) return ::testing::AssertionFailure() << h.status().message();
  auto cp = PickCheckpoint(log.data(), log.size(), h->first_lsn);
  if (!cp.ok()) return ::testing::AssertionFailure() << cp.status().message();
  if (cp->checkpoint_lsn != h->first_lsn) return ::testing::AssertionFailure() << "checkpoint != first_lsn";
  size_t pos = kLogStartOffset;
  MtrInfo info;
  std::string why;
  while (pos < log.size()) {
    MtrStatus st = ParseMtr(log.data() + pos, log.size() - pos, true, &info, &why);
    if (st != MtrStatus::kComplete) {
      return ::testing::AssertionFailure()
             << "mtr #" << s->mtrs << " at LSN " << h->first_lsn + pos - kLogStartOffset << " status "
             << static_cast<int>(st) << ": " << why;
    }
    uint64_t lsn = h->first_lsn + pos - kLogStartOffset;
    for (auto& op : info.file_ops) s->ops.emplace_back(op, lsn + info.length);
    if (info.has_checkpoint) {
      s->checkpoints.push_back(info.checkpoint_lsn);
      s->checkpoint_mtr_lsns.push_back(lsn);
    }
    pos += info.length;
    s->mtrs++;
  }
  s->end_lsn = h->first_lsn + pos - kLogStartOffset;
  return ::testing::AssertionSuccess();
}

Result<Bytes> ReadAll(const std::string& path) {
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  Bytes b(size);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(b.data(), b.size(), 0));
  b.resize(n);
  return b;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------
// Encoding

TEST(RedoVarint, RoundTripAtEveryBoundary) {
  for (uint32_t v : {0u, 1u, 127u, 128u, 129u, 16511u, 16512u, 16513u, 2113663u, 2113664u, 270549119u,
                     270549120u, 270549121u, 0xFFFFFFFFu}) {
    uint8_t b[5];
    size_t n = EncodeVarint(v, b);
    uint32_t back = 0;
    size_t len = 0;
    ASSERT_EQ(DecodeVarint(b, n, &back, &len), DecodeResult::kOk) << v;
    EXPECT_EQ(back, v);
    EXPECT_EQ(len, n);
    EXPECT_EQ(DecodeVarint(b, n - 1, &back, &len), DecodeResult::kNeedMore) << v;
  }
  uint8_t b[5];
  EXPECT_EQ(EncodeVarint(127, b), 1u);
  EXPECT_EQ(EncodeVarint(128, b), 2u);
  EXPECT_EQ(EncodeVarint(16512, b), 3u);
  EXPECT_EQ(EncodeVarint(2113664, b), 4u);
  EXPECT_EQ(EncodeVarint(270549120, b), 5u);
  uint32_t v;
  size_t len;
  for (uint8_t bad = 0xF1; bad != 0; bad++) {
    uint8_t in[5] = {bad, 0, 0, 0, 0};
    EXPECT_EQ(DecodeVarint(in, 5, &v, &len), DecodeResult::kInvalid);
  }
  uint8_t overflow[5] = {0xF0, 0xFF, 0xFF, 0xFF, 0xFF};  // 270549120 + 2^32-1 > 2^32-1
  EXPECT_EQ(DecodeVarint(overflow, 5, &v, &len), DecodeResult::kInvalid);
}

TEST(RedoRecordLength, ShortAndLongForms) {
  for (size_t n : {1u, 15u, 16u, 17u, 140u, 200u, 20000u, 3000000u}) {
    Bytes r = Record(0x30, Bytes(n, 7));
    RecordFrame f;
    ASSERT_EQ(DecodeRecordLength(r.data(), r.size(), &f), DecodeResult::kOk) << n;
    EXPECT_EQ(f.total(), r.size()) << n;
    EXPECT_EQ(f.payload_length, n);
  }
  // The real FILE_CHECKPOINT record: 0xFA = same_page | FILE_CHECKPOINT | 10 bytes.
  uint8_t fa = 0xFA;
  RecordFrame f;
  ASSERT_EQ(DecodeRecordLength(&fa, 1, &f), DecodeResult::kOk);
  EXPECT_EQ(f.total(), 11u);
  uint8_t longform = 0x30;
  EXPECT_EQ(DecodeRecordLength(&longform, 1, &f), DecodeResult::kNeedMore);
}

// ---------------------------------------------------------------------------
// Header and checkpoint

TEST(RedoHeader, ParsesServerHeader) {
  Bytes h = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  auto r = ParseLogHeader(h.data(), h.size());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, kRedoFormat10_8);
  EXPECT_EQ(r->first_lsn, 44404u);
  EXPECT_EQ(r->creator, "MariaDB 10.11.19");
  EXPECT_FALSE(r->encrypted);
  // A 32-character creator has no NUL; it must not run into the next field.
  Bytes full = ServerHeader(kRedoFormat10_8, 44404, std::string(32, 'c'));
  ASSERT_TRUE(ParseLogHeader(full.data(), full.size()).ok());
  EXPECT_EQ(ParseLogHeader(full.data(), full.size())->creator.size(), 32u);
}

TEST(RedoHeader, RejectsOldFormatsEncryptionAndDamage) {
  for (uint32_t old : {kRedoFormat10_5, kRedoFormat10_5 | kRedoFormatEncryptedFlag, 104u, 103u, 1u,
                       104u | kRedoFormatEncryptedFlag}) {
    Bytes h = ServerHeader(old, 44404, "MariaDB 10.5.2");
    auto r = ParseLogHeader(h.data(), h.size());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(Contains(r.status().message(), "is from MariaDB < 10.8; not supported"))
        << r.status().message();
  }
  Bytes enc11 = ServerHeader(kRedoFormatEnc11, 44404, "MariaDB 10.11.14");
  EXPECT_EQ(ParseLogHeader(enc11.data(), enc11.size()).status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(ParseLogHeader(enc11.data(), enc11.size()).status().message(), "encrypted"));

  Bytes enc108 = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  StoreBE32(enc108.data() + kLogHeaderCryptKey, 1);  // key id
  StoreBE32(enc108.data() + kLogHeaderCrc, crc32c::Value(enc108.data(), kLogHeaderCrc));
  auto e = ParseLogHeader(enc108.data(), enc108.size());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(e.status().message(), "encrypted"));

  Bytes bad_crc = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  bad_crc[20] ^= 1;
  EXPECT_EQ(ParseLogHeader(bad_crc.data(), bad_crc.size()).status().code(), ErrorCode::kCorrupt);

  Bytes low = ServerHeader(kRedoFormat10_8, 100, "MariaDB 10.11.19");
  EXPECT_EQ(ParseLogHeader(low.data(), low.size()).status().code(), ErrorCode::kCorrupt);

  Bytes sub = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  sub[7] = 1;
  StoreBE32(sub.data() + kLogHeaderCrc, crc32c::Value(sub.data(), kLogHeaderCrc));
  EXPECT_EQ(ParseLogHeader(sub.data(), sub.size()).status().code(), ErrorCode::kCorrupt);

  Bytes unknown = ServerHeader(0x12345678, 44404, "x");
  EXPECT_EQ(ParseLogHeader(unknown.data(), unknown.size()).status().code(), ErrorCode::kCorrupt);
  Bytes zero(kLogHeaderSize, 0);
  EXPECT_EQ(ParseLogHeader(zero.data(), zero.size()).status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(ParseLogHeader(unknown.data(), 100).ok());
}

Bytes FileStart(uint64_t first_lsn, std::optional<std::pair<uint64_t, uint64_t>> cp1,
                std::optional<std::pair<uint64_t, uint64_t>> cp2) {
  Bytes f(kLogStartOffset, 0);
  Bytes h = ServerHeader(kRedoFormat10_8, first_lsn, "MariaDB 10.11.19");
  std::copy(h.begin(), h.end(), f.begin());
  if (cp1) {
    Bytes b = CheckpointBlock(cp1->first, cp1->second);
    std::copy(b.begin(), b.end(), f.begin() + kLogCheckpoint1);
  }
  if (cp2) {
    Bytes b = CheckpointBlock(cp2->first, cp2->second);
    std::copy(b.begin(), b.end(), f.begin() + kLogCheckpoint2);
  }
  return f;
}

TEST(RedoCheckpoint, PicksLargestValidAndTieGoesTo8192) {
  Bytes f = FileStart(20000, {{30000, 30100}}, {{25000, 25000}});
  auto c = PickCheckpoint(f.data(), f.size(), 20000);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->checkpoint_lsn, 30000u);
  EXPECT_EQ(c->end_lsn, 30100u);

  f = FileStart(20000, {{25000, 25000}}, {{30000, 30200}});
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->end_lsn, 30200u);

  f = FileStart(20000, {{30000, 30100}}, {{30000, 30200}});
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->end_lsn, 30200u) << "tie must go to 8192";

  // Invalid blocks are skipped: bad CRC, reserved bytes, LSN rules.
  f = FileStart(20000, {{40000, 40000}}, {{30000, 30000}});
  f[kLogCheckpoint1 + 3] ^= 1;
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->checkpoint_lsn, 30000u);
  f = FileStart(20000, {{40000, 40000}}, {{30000, 30000}});
  f[kLogCheckpoint1 + 20] = 1;
  StoreBE32(f.data() + kLogCheckpoint1 + kCheckpointCrc, crc32c::Value(f.data() + kLogCheckpoint1, 60));
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->checkpoint_lsn, 30000u);
  f = FileStart(20000, {{10000, 40000}}, {{30000, 30000}});  // below first_lsn
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->checkpoint_lsn, 30000u);
  f = FileStart(20000, {{40000, 39999}}, {{30000, 30000}});  // end < checkpoint
  EXPECT_EQ(PickCheckpoint(f.data(), f.size(), 20000)->checkpoint_lsn, 30000u);

  f = FileStart(20000, std::nullopt, std::nullopt);
  auto none = PickCheckpoint(f.data(), f.size(), 20000);
  EXPECT_EQ(none.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(PickCheckpoint(f.data(), 8000, 20000).ok());
}

// The first 12 KiB of the ib_logfile0 that `mariabackup --backup` (10.11.19)
// wrote for a server whose checkpoint was at LSN 44404: every non-zero byte.
TEST(RedoBackupHeader, MatchesMariabackupByteForByte) {
  Bytes h = MakeBackupLogHeader(kRedoFormat10_8, 44404, 44404, "Backup 10.11.19");
  ASSERT_EQ(h.size(), 12288u);
  std::map<size_t, uint8_t> expect;
  const uint8_t fmt[] = {0x50, 0x68, 0x79, 0x73};
  for (size_t i = 0; i < 4; i++) expect[i] = fmt[i];
  expect[0x0e] = 0xad;
  expect[0x0f] = 0x74;
  std::string creator = "Backup 10.11.19";
  for (size_t i = 0; i < creator.size(); i++) expect[0x10 + i] = static_cast<uint8_t>(creator[i]);
  const uint8_t hcrc[] = {0xf4, 0x4e, 0xd7, 0xca};
  for (size_t i = 0; i < 4; i++) expect[0x1fc + i] = hcrc[i];
  expect[0x1006] = 0xad;
  expect[0x1007] = 0x74;
  expect[0x100e] = 0xad;
  expect[0x100f] = 0x74;
  const uint8_t ccrc[] = {0xc4, 0xa7, 0x64, 0x34};
  for (size_t i = 0; i < 4; i++) expect[0x103c + i] = ccrc[i];
  for (size_t i = 0; i < h.size(); i++) {
    auto it = expect.find(i);
    ASSERT_EQ(h[i], it == expect.end() ? 0 : it->second) << "offset " << i;
  }
  auto hdr = ParseLogHeader(h.data(), h.size());
  ASSERT_TRUE(hdr.ok());
  EXPECT_EQ(hdr->creator, "Backup 10.11.19");
  auto cp = PickCheckpoint(h.data(), h.size(), hdr->first_lsn);
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->checkpoint_lsn, 44404u);

  Bytes h2 = MakeBackupLogHeader(kRedoFormat10_8, 50000, 50123, "Backup 10.11.19");
  EXPECT_EQ(PickCheckpoint(h2.data(), h2.size(), 50000)->end_lsn, 50123u);
}

// ---------------------------------------------------------------------------
// Mtr framing

TEST(RedoMtr, RealFileCheckpointMtrFromMariabackup) {
  // The first mtr of that mariabackup ib_logfile0, at offset 12288.
  const Bytes m = {0xfa, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0xad, 0x74, 0x01, 0xad, 0xd4, 0xe8, 0xf9};
  MtrInfo info;
  std::string why;
  ASSERT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why), MtrStatus::kComplete) << why;
  EXPECT_EQ(info.length, 16u);
  EXPECT_EQ(info.records_length, 11u);
  EXPECT_TRUE(info.has_checkpoint);
  EXPECT_EQ(info.checkpoint_lsn, 44404u);
  EXPECT_TRUE(info.file_ops.empty());
  EXPECT_EQ(ParseMtr(m.data(), m.size(), false, &info, &why), MtrStatus::kEndOfLog);
}

TEST(RedoMtr, FileOperationsAreExtracted) {
  Bytes r;
  Append(r, FileRecord(kFileCreate, 7, "./db/t1.ibd"));
  Bytes ren = Varint(8);
  ren.push_back(0);
  for (char c : std::string("./db/a.ibd")) ren.push_back(static_cast<uint8_t>(c));
  ren.push_back(0);
  for (char c : std::string("./db/b.ibd")) ren.push_back(static_cast<uint8_t>(c));
  Append(r, Record(kFileRename, ren));
  Append(r, FileRecord(kFileDelete, 300000, "/abs/path/with/a/long/name/t3.ibd"));
  Append(r, FileRecord(kFileModify, 9, "./db/t4.ibd"));
  Append(r, PageWrite(7, 3, 40, 1));
  Append(r, Record(0xB0, Bytes{0x05, 0x33, 0x44}));  // same_page WRITE after a page record: not a FILE_ op
  Bytes m = Mtr(r, true);
  MtrInfo info;
  std::string why;
  ASSERT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why), MtrStatus::kComplete) << why;
  EXPECT_EQ(info.length, m.size());
  ASSERT_EQ(info.file_ops.size(), 4u);
  EXPECT_EQ(info.file_ops[0].type, FileOp::Type::kCreate);
  EXPECT_EQ(info.file_ops[0].space_id, 7u);
  EXPECT_EQ(info.file_ops[0].name, "./db/t1.ibd");
  EXPECT_EQ(info.file_ops[1].type, FileOp::Type::kRename);
  EXPECT_EQ(info.file_ops[1].name, "./db/a.ibd");
  EXPECT_EQ(info.file_ops[1].new_name, "./db/b.ibd");
  EXPECT_EQ(info.file_ops[2].type, FileOp::Type::kDelete);
  EXPECT_EQ(info.file_ops[2].space_id, 300000u);
  EXPECT_EQ(info.file_ops[2].name, "/abs/path/with/a/long/name/t3.ibd");
  EXPECT_EQ(info.file_ops[3].type, FileOp::Type::kModify);
  EXPECT_FALSE(info.has_checkpoint);

  Bytes c = FileRecord(kFileModify, 9, "./db/t4.ibd");
  Append(c, CheckpointRecord(123456789));
  m = Mtr(c, false);
  ASSERT_EQ(ParseMtr(m.data(), m.size(), false, &info, &why), MtrStatus::kComplete) << why;
  EXPECT_TRUE(info.has_checkpoint);
  EXPECT_EQ(info.checkpoint_lsn, 123456789u);
  ASSERT_EQ(info.file_ops.size(), 1u);
}

TEST(RedoMtr, NeedMoreAtEveryTruncation) {
  Bytes r = PageWrite(1, 2, 300, 5);
  Append(r, PageWrite(1, 3, 3, 5));
  Bytes m = Mtr(r, true);
  MtrInfo info;
  std::string why;
  for (size_t n = 1; n < m.size(); n++) {
    ASSERT_EQ(ParseMtr(m.data(), n, true, &info, &why), MtrStatus::kNeedMore) << n;
  }
  EXPECT_EQ(ParseMtr(m.data(), 0, true, &info, &why), MtrStatus::kNeedMore);
  EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why), MtrStatus::kComplete);
}

TEST(RedoMtr, EndOfLogConditions) {
  Bytes m = Mtr(PageWrite(1, 2, 30, 5), true);
  MtrInfo info;
  std::string why;
  // Terminator byte where an mtr should start.
  for (uint8_t b : {0, 1}) {
    Bytes z{b, 0, 0, 0, 0, 0};
    EXPECT_EQ(ParseMtr(z.data(), z.size(), true, &info, &why), MtrStatus::kEndOfLog);
  }
  // Sequence bit of the previous pass (stale bytes at the live tail).
  EXPECT_EQ(ParseMtr(m.data(), m.size(), false, &info, &why), MtrStatus::kEndOfLog);
  EXPECT_TRUE(Contains(why, "sequence bit"));
  // Torn write: one record byte differs from what the CRC covers.
  Bytes torn = m;
  torn[10] ^= 0x40;
  EXPECT_EQ(ParseMtr(torn.data(), torn.size(), true, &info, &why), MtrStatus::kEndOfLog);
  EXPECT_TRUE(Contains(why, "checksum"));
  // The CRC excludes the terminator: flipping it to the expected bit is fine.
  Bytes flipped = Mtr(PageWrite(1, 2, 30, 5), false);
  flipped[flipped.size() - 5] = 1;
  EXPECT_EQ(ParseMtr(flipped.data(), flipped.size(), true, &info, &why), MtrStatus::kComplete);
}

TEST(RedoMtr, SequenceBitFlipsForATerminatorOnTheNextPass) {
  Bytes r = PageWrite(1, 2, 30, 5);
  Bytes m = Mtr(r, false);  // terminator written on the next (odd) pass
  MtrInfo info;
  std::string why;
  EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why, r.size()), MtrStatus::kComplete) << why;
  EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why, r.size() + 1), MtrStatus::kEndOfLog);
  EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why, 3), MtrStatus::kComplete);
}

TEST(RedoMtr, CorruptConditions) {
  MtrInfo info;
  std::string why;
  // Over 1 MiB of records: corrupt, whether or not the buffer holds it all.
  Bytes big;
  while (big.size() <= kMtrSizeMax) Append(big, PageWrite(1, 2, 60000, 1));
  Bytes m = Mtr(big, true);
  EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why), MtrStatus::kCorrupt);
  EXPECT_TRUE(Contains(why, "longer than"));
  // Exactly at the limit is fine.
  Bytes limit = Record(0x30, Bytes(kMtrSizeMax - 4, 9));  // 1 type byte + 3-byte length
  ASSERT_EQ(limit.size(), kMtrSizeMax);
  Bytes ml = Mtr(limit, true);
  EXPECT_EQ(ParseMtr(ml.data(), ml.size(), true, &info, &why), MtrStatus::kComplete) << why;
  // Bad length varint.
  Bytes badlen{0x30, 0xF5, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(ParseMtr(badlen.data(), badlen.size(), true, &info, &why), MtrStatus::kCorrupt);
  // Malformed FILE_ records in a checksummed mtr.
  Bytes ren = Varint(8);
  ren.push_back(0);
  for (char c : std::string("./db/no_separator.ibd")) ren.push_back(static_cast<uint8_t>(c));
  Bytes mr = Mtr(Record(kFileRename, ren), true);
  EXPECT_EQ(ParseMtr(mr.data(), mr.size(), true, &info, &why), MtrStatus::kCorrupt);
  Bytes unknown = Mtr(FileRecord(0xC0, 5, "x"), true);
  EXPECT_EQ(ParseMtr(unknown.data(), unknown.size(), true, &info, &why), MtrStatus::kCorrupt);
  Bytes page1{5, 1, 'x'};  // FILE_CREATE for page 1
  Bytes mp = Mtr(Record(kFileCreate, page1), true);
  EXPECT_EQ(ParseMtr(mp.data(), mp.size(), true, &info, &why), MtrStatus::kCorrupt);
  Bytes short_cp{0, 0, 1, 2, 3};
  Bytes mc = Mtr(Record(kFileCheckpoint, short_cp), true);
  EXPECT_EQ(ParseMtr(mc.data(), mc.size(), true, &info, &why), MtrStatus::kCorrupt);
}

// ---------------------------------------------------------------------------
// LogCopier against synthetic circular logs

struct Collected {
  std::mutex mu;
  Bytes log;
  std::vector<std::pair<FileOp, uint64_t>> ops;
};

LogCopier::Writer CollectTo(Collected* c) {
  return [c](const uint8_t* d, size_t n) {
    std::lock_guard lk(c->mu);
    c->log.insert(c->log.end(), d, d + n);
    return Status::Ok();
  };
}
LogCopier::FileOpSink OpsTo(Collected* c) {
  return [c](const FileOp& op, uint64_t lsn) {
    std::lock_guard lk(c->mu);
    c->ops.emplace_back(op, lsn);
  };
}

Bytes RandomMtrRecords(std::mt19937& rng) {
  Bytes r;
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; i++) {
    size_t len = rng() % 8 == 0 ? 1000 + rng() % 20000 : 1 + rng() % 200;
    Append(r, PageWrite(rng() % 50, rng() % 1000, len, rng()));
  }
  return r;
}

TEST(LogCopier, CopiesAWrappedLogWithAStraddlingMtr) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  const uint64_t first = 10 * 1024 * 1024 + 17;
  SynthLog log(dir / "ib_logfile0", cap, first);
  std::mt19937 rng(1);
  // Fill past the end of the first pass, so the copy starts near the end.
  while (log.lsn() < first + cap - 3000) log.Write(PageWrite(1, 1, 500, rng()));
  log.Checkpoint(log.lsn());
  const uint64_t start = log.checkpoint_lsn();
  // An mtr whose bytes straddle the end of the circular file (and so does its
  // terminator: it is on the next pass and carries sequence bit 0).
  Bytes straddle = FileRecord(kFileCreate, 11, "./db/straddle.ibd");
  Append(straddle, PageWrite(11, 0, 6000, 3));
  uint64_t straddle_lsn = log.Write(straddle);
  ASSERT_LT(LsnToOffset(straddle_lsn, first, cap), kLogStartOffset + cap);
  ASSERT_LT(LsnToOffset(log.lsn(), first, cap), LsnToOffset(straddle_lsn, first, cap)) << "must wrap";
  Bytes ren = Varint(11);
  ren.push_back(0);
  for (char c : std::string("./db/straddle.ibd")) ren.push_back(static_cast<uint8_t>(c));
  ren.push_back(0);
  for (char c : std::string("./db/moved.ibd")) ren.push_back(static_cast<uint8_t>(c));
  log.Write(Record(kFileRename, ren));
  log.Write(FileRecord(kFileDelete, 11, "./db/moved.ibd"));
  for (int i = 0; i < 20; i++) log.Write(RandomMtrRecords(rng));
  ASSERT_LT(log.lsn() - start, cap);

  auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 5ms});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->checkpoint_lsn(), start);
  EXPECT_EQ((*c)->capacity(), cap);
  EXPECT_EQ((*c)->format(), kRedoFormat10_8);
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), OpsTo(&got)).ok());
  ASSERT_TRUE((*c)->WaitUntil(log.lsn(), 5s).ok());
  EXPECT_EQ((*c)->copied_lsn(), log.lsn());
  ASSERT_TRUE((*c)->Stop().ok());

  const Bytes& lin = log.linear();
  Bytes expect(lin.end() - static_cast<ptrdiff_t>(log.lsn() - start), lin.end());
  EXPECT_EQ(got.log, expect);
  ASSERT_EQ(got.ops.size(), 4u);  // the checkpoint's FILE_MODIFY (at start) + create, rename, delete
  EXPECT_EQ(got.ops[0].first.type, FileOp::Type::kModify);
  EXPECT_EQ(got.ops[1].first.type, FileOp::Type::kCreate);
  EXPECT_EQ(got.ops[1].second, straddle_lsn + straddle.size() + 5);
  EXPECT_EQ(got.ops[2].first.type, FileOp::Type::kRename);
  EXPECT_EQ(got.ops[2].first.new_name, "./db/moved.ibd");
  EXPECT_EQ(got.ops[3].first.type, FileOp::Type::kDelete);

  // Nothing more will come: a stall times out instead of hanging.
  auto c2 = LogCopier::Open({.log_path = log.path(), .poll_interval = 5ms});
  ASSERT_TRUE(c2.ok());
  Collected got2;
  ASSERT_TRUE((*c2)->Start(CollectTo(&got2), nullptr).ok());
  Status st = (*c2)->WaitUntil(log.lsn() + 1, 200ms);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_TRUE((*c2)->Stop().ok());
  EXPECT_EQ((*c2)->WaitUntil(log.lsn() + 1, 200ms).code(), ErrorCode::kCancelled);
}

TEST(LogCopier, FollowsAGrowingLogThroughManyWraps) {
  TempDir dir;
  const uint64_t cap = 3 * 1024 * 1024 + 4096;  // larger than one read: exercises carry-over
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
  ASSERT_TRUE(c.ok()) << c.status().message();
  LogCopier& copier = **c;
  Collected got;
  ASSERT_TRUE(copier.Start(CollectTo(&got), OpsTo(&got)).ok());

  // The "server": writes mtrs (some near the 1 MiB limit), checkpoints behind
  // itself, and never writes more than half the capacity past what the copier
  // has, as a server's own checkpointing would guarantee.
  std::atomic<bool> writer_ok{true};
  uint64_t final_lsn = 0;
  std::thread server([&] {
    std::mt19937 rng(42);
    auto deadline = std::chrono::steady_clock::now() + 60s;
    int n = 0;
    while (log.lsn() < kLogFirstLsn + 6 * cap) {
      while (log.lsn() - copier.copied_lsn() > cap / 2) {
        if (std::chrono::steady_clock::now() > deadline) {
          writer_ok = false;
          return;
        }
        std::this_thread::sleep_for(1ms);
      }
      if (++n % 50 == 0) {
        Bytes huge = PageWrite(3, 4, 900000 + rng() % 100000, rng());
        log.Write(huge);
      } else {
        log.Write(RandomMtrRecords(rng));
      }
      if (n % 97 == 0) log.Write(FileRecord(kFileCreate, n, "./db/t" + std::to_string(n) + ".ibd"));
      if (n % 20 == 0)
        log.Checkpoint(std::max(log.checkpoint_lsn(), log.lsn() - std::min(log.lsn(), cap * 3 / 4)));
    }
    final_lsn = log.lsn();
  });
  server.join();
  ASSERT_TRUE(writer_ok) << "copier did not keep up; copied_lsn=" << copier.copied_lsn();
  Status w = copier.WaitUntil(final_lsn, 10s);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_TRUE(copier.Stop().ok());
  EXPECT_EQ(copier.copied_lsn(), final_lsn);
  EXPECT_TRUE(got.log == log.linear()) << "backup log differs from what was written (" << got.log.size()
                                       << " vs " << log.linear().size() << " bytes)";
  Bytes full = MakeBackupLogHeader(kRedoFormat10_8, copier.checkpoint_lsn(), copier.checkpoint_end_lsn(),
                                   "Backup 10.11.19");
  Append(full, got.log);
  LinearScan scan;
  ASSERT_TRUE(ScanLinear(full, &scan));
  EXPECT_EQ(scan.end_lsn, final_lsn);
  size_t creates = 0;
  for (auto& [op, lsn] : got.ops) creates += op.type == FileOp::Type::kCreate;
  EXPECT_GT(creates, 3u);
  EXPECT_EQ(got.ops.size(), scan.ops.size());
}

TEST(LogCopier, DetectsLogOverwrittenTwoPassesAhead) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(7);
  while (log.lsn() < kLogFirstLsn + 2 * cap + cap / 2) {
    log.Write(RandomMtrRecords(rng));
    log.Checkpoint(log.lsn() - std::min(log.lsn() - kLogFirstLsn, cap / 2));
  }
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(Contains(st.message(), "was overwritten by the server before it could be copied"))
      << st.message();
  EXPECT_TRUE(Contains(st.message(), "innodb_log_file_size"));
  EXPECT_EQ((*c)->Stop().code(), ErrorCode::kServer);
  EXPECT_TRUE(got.log.empty());
}

TEST(LogCopier, DetectsLogOverwrittenByTheNextPass) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(8);
  // One pass and a half: the start is overwritten once (sequence bit shows it),
  // and the checkpoint is past the start but less than a capacity ahead.
  while (log.lsn() < kLogFirstLsn + cap + cap / 2) log.Write(RandomMtrRecords(rng));
  log.Checkpoint(log.lsn() - cap / 2);
  Collected got;
  ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
  Status st = (*c)->WaitUntil(log.lsn(), 5s);
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(
      Contains(st.message(), "redo log from LSN " + std::to_string(kLogFirstLsn) + " was overwritten"))
      << st.message();
}

TEST(LogCopier, DetectsOverwriteWhenTheCopyFallsBehind) {
  TempDir dir;
  const uint64_t cap = 256 * 1024;
  SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
  auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
  ASSERT_TRUE(c.ok());
  // A slow target: the server outruns the copy and checkpoints past it.
  Collected got;
  auto slow = [&got](const uint8_t* d, size_t n) {
    std::this_thread::sleep_for(30ms);
    std::lock_guard lk(got.mu);
    got.log.insert(got.log.end(), d, d + n);
    return Status::Ok();
  };
  ASSERT_TRUE((*c)->Start(slow, nullptr).ok());
  std::mt19937 rng(9);
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    log.Write(RandomMtrRecords(rng));
    log.Checkpoint(log.lsn() - std::min(log.lsn() - kLogFirstLsn, cap / 4));
    if ((*c)->WaitUntil(UINT64_MAX, 0ms).code() == ErrorCode::kServer) break;
  }
  Status st = (*c)->Stop();
  EXPECT_EQ(st.code(), ErrorCode::kServer) << st.message();
  EXPECT_TRUE(Contains(st.message(), "overwritten")) << st.message();
  // What was copied before the failure is still a valid prefix.
  std::lock_guard lk(got.mu);
  EXPECT_TRUE(std::equal(got.log.begin(), got.log.end(), log.linear().begin()));
}

TEST(LogCopier, FailsClearlyWhenTheLogIsReplacedOrItsHeaderChanges) {
  TempDir dir;
  const uint64_t cap = 64 * 1024;
  {
    SynthLog log(dir / "ib_logfile0", cap, kLogFirstLsn);
    log.Write(PageWrite(1, 1, 100, 1));
    auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
    ASSERT_TRUE(c.ok());
    Collected got;
    ASSERT_TRUE((*c)->Start(CollectTo(&got), nullptr).ok());
    ASSERT_TRUE((*c)->WaitUntil(log.lsn(), 5s).ok());
    // Online resize: the server renames ib_logfile101 over ib_logfile0.
    SynthLog resized(dir / "ib_logfile101", 2 * cap, log.lsn());
    ASSERT_EQ(::rename(resized.path().c_str(), log.path().c_str()), 0);
    Status st = (*c)->WaitUntil(UINT64_MAX, 5s);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.message();
    EXPECT_TRUE(Contains(st.message(), "was replaced")) << st.message();
    auto live = (*c)->ReadLiveCheckpoint();
    EXPECT_FALSE(live.ok());
  }
  {
    SynthLog log(dir / "second_logfile0", cap, kLogFirstLsn);
    auto c = LogCopier::Open({.log_path = log.path(), .poll_interval = 2ms});
    ASSERT_TRUE(c.ok());
    auto live = (*c)->ReadLiveCheckpoint();
    ASSERT_TRUE(live.ok()) << live.status().message();
    EXPECT_EQ(live->checkpoint_lsn, kLogFirstLsn);
    ASSERT_TRUE((*c)->Start([](const uint8_t*, size_t) { return Status::Ok(); }, nullptr).ok());
    auto f = File::OpenWrite(log.path());
    ASSERT_TRUE(f.ok());
    Bytes h = ServerHeader(kRedoFormat10_8, kLogFirstLsn + 4096, "MariaDB 10.11.19");
    ASSERT_TRUE(f->PWrite(h.data(), h.size(), 0).ok());
    Status st = (*c)->WaitUntil(UINT64_MAX, 5s);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.message();
    EXPECT_TRUE(Contains(st.message(), "header changed")) << st.message();
  }
}

TEST(LogCopier, OpenRejectsOldAndEncryptedLogs) {
  TempDir dir;
  for (uint32_t fmt : {kRedoFormat10_5, kRedoFormatEnc11}) {
    std::string path = dir / ("log" + std::to_string(fmt));
    Bytes f = FileStart(kLogFirstLsn, {{kLogFirstLsn, kLogFirstLsn}}, std::nullopt);
    Bytes h = ServerHeader(fmt, kLogFirstLsn, "MariaDB");
    std::copy(h.begin(), h.end(), f.begin());
    f.resize(f.size() + 65536);
    ASSERT_TRUE(WriteFileAtomic(path, std::string(f.begin(), f.end())).ok());
    auto c = LogCopier::Open({.log_path = path});
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), ErrorCode::kUnsupported);
    EXPECT_TRUE(Contains(c.status().message(), path));
  }
  EXPECT_EQ(LogCopier::Open({.log_path = dir / "missing"}).status().code(), ErrorCode::kNotFound);
}

// ---------------------------------------------------------------------------
// A real server: mariadbd on a private datadir with an 8 MiB log, written to
// until the log has wrapped several times while LogCopier follows it.

std::string FindTool(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/usr/local/sbin:/usr/local/mysql/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string cand = path.substr(start, end - start) + "/" + name;
    if (end > start && ::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

// Owns the mariadbd process: killed (and reaped) on every exit path.
class ServerProcess {
 public:
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
  }
  bool Spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }
  bool Alive() {
    if (pid_ <= 0) return false;
    int st;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
};

int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string ShellOutput(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(LogCopierRealServer, CopiesAWrappingLogOfARunningMariadbd) {
#if defined(__SANITIZE_THREAD__)
  // Under TSan the copier runs several times slower while the (uninstrumented) server writes at
  // full speed into an 8 MiB log: it falls a whole log behind and, correctly, reports the
  // overwrite. The copier's threading is covered under TSan by the synthetic tests above.
  GTEST_SKIP() << "timing-dependent against a real server; not meaningful under ThreadSanitizer";
#endif
  const std::string mariadbd = FindTool("mariadbd"), install = FindTool("mariadb-install-db"),
                    client = FindTool("mariadb");
  if (mariadbd.empty() || install.empty() || client.empty())
    GTEST_SKIP() << "mariadbd/mariadb-install-db/mariadb not installed";
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::string data = dir / "data", sock = data + "/s";
  const bool root = ::geteuid() == 0;
  const std::string user = root ? " --user=mysql" : "";
  ASSERT_EQ(::mkdir(data.c_str(), 0750), 0);
  if (root) {
    ASSERT_EQ(Shell("chown mysql:mysql " + data), 0);
  }
  ASSERT_EQ(Shell(install + " --no-defaults --datadir=" + data + user + " --skip-test-db > " +
                  (dir / "install.log") + " 2>&1"),
            0)
      << ShellOutput("tail -20 " + (dir / "install.log"));

  ServerProcess server;
  std::vector<std::string> args = {mariadbd,
                                   "--no-defaults",
                                   "--datadir=" + data,
                                   "--socket=" + sock,
                                   "--skip-networking",
                                   "--innodb-log-file-size=8M",
                                   "--innodb-buffer-pool-size=64M",
                                   "--skip-grant-tables",
                                   "--log-error=" + data + "/error.log",
                                   "--pid-file=" + data + "/mariadbd.pid"};
  if (root) args.push_back("--user=mysql");
  ASSERT_TRUE(server.Spawn(args));
  const std::string cli = client + " --no-defaults --socket=" + sock + " -N -B";
  bool up = false;
  for (int i = 0; i < 300 && !up; i++) {
    if (!server.Alive()) break;
    up = Shell(cli + " -e 'SELECT 1' > /dev/null 2>&1") == 0;
    if (!up) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(up) << ShellOutput("tail -30 " + data + "/error.log");

  auto server_lsn = [&]() -> uint64_t {
    // The status text is one field with literal "\n" escapes in -B mode;
    // the number follows "Log sequence number" and spaces either way.
    std::string s = ShellOutput(cli + " -e 'SHOW ENGINE INNODB STATUS' 2>&1");
    size_t at = s.find("Log sequence number");
    if (at == std::string::npos) return uint64_t{0};
    at = s.find_first_of("0123456789", at);
    return at == std::string::npos ? uint64_t{0} : std::strtoull(s.c_str() + at, nullptr, 10);
  };

  auto opened = LogCopier::Open({.log_path = data + "/ib_logfile0"});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  LogCopier& copier = **opened;
  const uint64_t cap = copier.capacity();
  EXPECT_EQ(cap, (uint64_t{8} << 20) - kLogStartOffset);
  EXPECT_TRUE(Contains(copier.header().creator, "MariaDB")) << copier.header().creator;

  const std::string backup_log = dir / "backup_ib_logfile0";
  auto out = File::CreateNew(backup_log);
  ASSERT_TRUE(out.ok());
  Bytes hdr = MakeBackupLogHeader(copier.format(), copier.checkpoint_lsn(), copier.checkpoint_end_lsn(),
                                  "Backup 10.11.19");
  ASSERT_TRUE(out->Write(hdr.data(), hdr.size()).ok());
  File* outp = &*out;
  Collected ops;
  ASSERT_TRUE(
      copier.Start([outp](const uint8_t* d, size_t n) { return outp->Write(d, n); }, OpsTo(&ops)).ok());

  // Workload: DDL that the copy must track, then bulk rows until the server
  // has written at least four capacities of redo past our start.
  const uint64_t start = copier.checkpoint_lsn();
  const std::string setup = dir / "setup.sql", batch = dir / "batch.sql";
  ASSERT_TRUE(
      WriteFileAtomic(setup,
                      "CREATE DATABASE w; CREATE TABLE w.x1(id INT PRIMARY KEY) ENGINE=InnoDB;"
                      "RENAME TABLE w.x1 TO w.x2; DROP TABLE w.x2;"
                      "CREATE TABLE w.t(id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(3000)) ENGINE=InnoDB;")
          .ok());
  ASSERT_TRUE(
      WriteFileAtomic(batch,
                      "USE w; INSERT INTO w.t(v) SELECT REPEAT(CHAR(97 + seq % 26), 2500) FROM seq_1_to_3000;"
                      "UPDATE w.t SET v = REPEAT('z', 2400) WHERE id % 7 = 0;")
          .ok());
  ASSERT_EQ(Shell(cli + " < " + setup), 0);
  auto t0 = std::chrono::steady_clock::now();
  int batches = 0;
  uint64_t lsn_now = server_lsn();
  while (lsn_now < start + 4 * cap && std::chrono::steady_clock::now() - t0 < 240s) {
    ASSERT_EQ(Shell(cli + " < " + batch), 0) << ShellOutput("tail -20 " + data + "/error.log");
    batches++;
    lsn_now = server_lsn();
    ASSERT_GT(lsn_now, 0u);
    // Surfaces a failed copier early: a healthy one just "times out" at once.
    Status probe = copier.WaitUntil(UINT64_MAX, 0ms);
    ASSERT_EQ(probe.code(), ErrorCode::kTimeout) << probe.message();
  }
  ASSERT_GE(lsn_now, start + 4 * cap) << "workload too slow";
  const uint64_t reported = server_lsn();
  ASSERT_EQ(Shell(cli + " -e 'FLUSH NO_WRITE_TO_BINLOG ENGINE LOGS'"), 0);
  Status w = copier.WaitUntil(reported, 30s);
  ASSERT_TRUE(w.ok()) << w.message();
  auto live = copier.ReadLiveCheckpoint();
  ASSERT_TRUE(live.ok()) << live.status().message();
  ASSERT_TRUE(copier.Stop().ok());
  ASSERT_TRUE(out->Close().ok());
  const uint64_t copied = copier.copied_lsn();
  EXPECT_GE(copied, reported);
  EXPECT_GE(copied, live->checkpoint_lsn);

  auto bytes = ReadAll(backup_log);
  ASSERT_TRUE(bytes.ok());
  LinearScan scan;
  ASSERT_TRUE(ScanLinear(*bytes, &scan));
  EXPECT_EQ(scan.end_lsn, copied);
  EXPECT_EQ(bytes->size() - kLogStartOffset, copied - start);
  // --prepare needs the FILE_CHECKPOINT of the starting checkpoint at end_lsn.
  bool found_start_cp = false;
  for (size_t i = 0; i < scan.checkpoints.size(); i++) {
    if (scan.checkpoint_mtr_lsns[i] >= copier.checkpoint_end_lsn() && scan.checkpoints[i] == start) {
      found_start_cp = true;
      break;
    }
  }
  EXPECT_TRUE(found_start_cp) << "no FILE_CHECKPOINT(" << start << ") at or after end_lsn "
                              << copier.checkpoint_end_lsn();
  bool create = false, rename = false, del = false;
  for (auto& [op, lsn] : scan.ops) {
    create |= op.type == FileOp::Type::kCreate && Contains(op.name, "w/x1.ibd");
    rename |= op.type == FileOp::Type::kRename && Contains(op.name, "w/x1.ibd") &&
              Contains(op.new_name, "w/x2.ibd");
    del |= op.type == FileOp::Type::kDelete && Contains(op.name, "w/x2.ibd");
  }
  EXPECT_TRUE(create && rename && del) << create << rename << del;
  EXPECT_EQ(ops.ops.size(), scan.ops.size());
  const uint64_t wraps = (copied - copier.first_lsn()) / cap - (start - copier.first_lsn()) / cap;
  EXPECT_GE(wraps, 3u);
  // How many of the copied mtrs straddled the end of the live circular file.
  size_t straddled = 0;
  for (size_t pos = kLogStartOffset; pos < bytes->size();) {
    MtrInfo info;
    std::string why;
    ASSERT_EQ(ParseMtr(bytes->data() + pos, bytes->size() - pos, true, &info, &why), MtrStatus::kComplete);
    uint64_t lsn = start + pos - kLogStartOffset;
    straddled += (lsn - copier.first_lsn()) / cap != (lsn + info.length - 1 - copier.first_lsn()) / cap;
    pos += info.length;
  }
  std::printf(
      "[ real server ] log capacity %llu; copied LSN %llu..%llu (%llu bytes, %zu mtrs, %zu FILE_CHECKPOINTs, "
      "%zu file ops) across %llu wraps of the circular file, %zu mtrs straddling its end; server reported "
      "LSN %llu, live checkpoint %llu; "
      "%d batches\n",
      (unsigned long long)cap, (unsigned long long)start, (unsigned long long)copied,
      (unsigned long long)(copied - start), scan.mtrs, scan.checkpoints.size(), scan.ops.size(),
      (unsigned long long)wraps, straddled, (unsigned long long)reported,
      (unsigned long long)live->checkpoint_lsn, batches);
}

}  // namespace
}  // namespace xbak::innodb
