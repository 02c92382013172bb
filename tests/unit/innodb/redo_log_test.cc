#include "xbak/innodb/redo_log.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "redo_synth.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using namespace synth;
// One spelling of an LSN in every message, the word included (log_copier.cc's
// copy gave the bare number, log_scanner.cc's and redo_apply.cc's "LSN N").
TEST(FormatLsn, SaysLsnAndTheDecimalNumber) {
  EXPECT_EQ(FormatLsn(0), "LSN 0");
  EXPECT_EQ(FormatLsn(12345), "LSN 12345");
  EXPECT_EQ(FormatLsn(UINT64_MAX), "LSN 18446744073709551615");
}

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
  // Encrypted logs parse; their key information is kept for the backup's copy.
  Bytes enc11 = ServerHeader(kRedoFormatEnc11, 44404, "MariaDB 10.11.14");
  EXPECT_EQ(ParseLogHeader(enc11.data(), enc11.size()).status().code(), ErrorCode::kCorrupt);  // no key id
  util::StoreBE32(enc11.data() + kLogHeaderCryptKey, 1);                                       // key id
  util::StoreBE32(enc11.data() + kLogHeaderCryptKey + 4, 1);                                   // key version
  enc11[kLogHeaderCryptKey + 8] = 0x6c;  // crypt message...
  util::StoreBE32(enc11.data() + kLogHeaderCrc, util::crc32c::Value(enc11.data(), kLogHeaderCrc));
  auto e11 = ParseLogHeader(enc11.data(), enc11.size());
  ASSERT_TRUE(e11.ok()) << e11.status().message();
  EXPECT_TRUE(e11->encrypted);
  EXPECT_EQ(e11->crypt[3], 1);
  EXPECT_EQ(e11->crypt[8], 0x6c);
  auto back = MakeBackupLogHeader(e11->format, 44404, 44404, "Backup 10.11.14", e11->crypt.data());
  auto reread = ParseLogHeader(back.data(), back.size());
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  EXPECT_TRUE(reread->encrypted);
  EXPECT_EQ(reread->crypt, e11->crypt);

  Bytes enc108 = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  util::StoreBE32(enc108.data() + kLogHeaderCryptKey, 1);  // key id: the legacy FORMAT_ENC_10_8
  util::StoreBE32(enc108.data() + kLogHeaderCrc, util::crc32c::Value(enc108.data(), kLogHeaderCrc));
  auto e = ParseLogHeader(enc108.data(), enc108.size());
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->encrypted);

  Bytes bad_crc = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  bad_crc[20] ^= 1;
  EXPECT_EQ(ParseLogHeader(bad_crc.data(), bad_crc.size()).status().code(), ErrorCode::kCorrupt);

  Bytes low = ServerHeader(kRedoFormat10_8, 100, "MariaDB 10.11.19");
  EXPECT_EQ(ParseLogHeader(low.data(), low.size()).status().code(), ErrorCode::kCorrupt);

  Bytes sub = ServerHeader(kRedoFormat10_8, 44404, "MariaDB 10.11.19");
  sub[7] = 1;
  util::StoreBE32(sub.data() + kLogHeaderCrc, util::crc32c::Value(sub.data(), kLogHeaderCrc));
  EXPECT_EQ(ParseLogHeader(sub.data(), sub.size()).status().code(), ErrorCode::kCorrupt);

  Bytes unknown = ServerHeader(0x12345678, 44404, "x");
  EXPECT_EQ(ParseLogHeader(unknown.data(), unknown.size()).status().code(), ErrorCode::kCorrupt);
  Bytes zero(kLogHeaderSize, 0);
  EXPECT_EQ(ParseLogHeader(zero.data(), zero.size()).status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(ParseLogHeader(unknown.data(), 100).ok());
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
  util::StoreBE32(f.data() + kLogCheckpoint1 + kCheckpointCrc,
                  util::crc32c::Value(f.data() + kLogCheckpoint1, 60));
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

// Mini-transactions of an encrypted log written by a real MariaDB 10.11.19
// (innodb_encrypt_log=ON, aes_cbc): record lengths are plain, bodies are
// not, and an 8-byte nonce sits between the terminator and the CRC-32C,
// which covers the records and the nonce. Framing needs no key.
TEST(ParseMtr, FramesEncryptedMtrsWithoutTheKey) {
  auto hex = [](const std::string& h) {
    Bytes b;
    for (size_t i = 0; i + 1 < h.size(); i += 2)
      b.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
    return b;
  };
  const std::vector<std::pair<std::string, size_t>> mtrs = {
      {"fa3d89d6fd127f7eba5c0701000000000000ad74efd1a0b5", 11},  // FILE_CHECKPOINT
      {"3a62ce9a236ded4c0944a9b00eee7527b33b9398317dfdb42aee2ead9d98b91edb87c8eb384ae5025401000000000000ad8c1"
       "e52fb81",
       41},  // WRITEs of page 0's crypt data
      {"20215b9d9ca3e35bd534b94d5b08ba28ec3b3867e567c7547ada62d14603e8e63f4f0aa3805a71a6d24ec18b49baa10102010"
       "00000000000c5e4c0febd5d",
       49},  // an insert
  };
  for (const auto& [h, records] : mtrs) {
    Bytes m = hex(h);
    MtrInfo info;
    std::string why;
    ASSERT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why, SIZE_MAX, /*encrypted=*/true),
              MtrStatus::kComplete)
        << why;
    EXPECT_EQ(info.length, m.size());
    EXPECT_EQ(info.records_length, records);
    EXPECT_TRUE(info.file_ops.empty());  // FILE_CHECKPOINT's body is encrypted: not read
    // Read as an unencrypted log, the nonce is where the CRC should be.
    EXPECT_NE(ParseMtr(m.data(), m.size(), true, &info, &why), MtrStatus::kComplete);
    // A flipped nonce bit fails the CRC.
    m[records + 3] ^= 1;
    EXPECT_EQ(ParseMtr(m.data(), m.size(), true, &info, &why, SIZE_MAX, true), MtrStatus::kEndOfLog);
    // Cut inside the nonce: more is needed.
    EXPECT_EQ(ParseMtr(m.data(), records + 5, true, &info, &why, SIZE_MAX, true), MtrStatus::kNeedMore);
  }
}

}  // namespace
}  // namespace xbak::innodb
