// Builders for synthetic InnoDB redo (records, mtrs, a circular ib_logfile0
// written as a server writes it) shared by the redo_log and log_copier tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "testing/redo_records.h"
#include "util/temp_dir.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::innodb::synth {

using xbak::testing::redo_records::Append;
using xbak::testing::redo_records::Bytes;
using xbak::testing::redo_records::FileRecord;
using xbak::testing::redo_records::Record;
using xbak::testing::redo_records::Varint;

// ---------------------------------------------------------------------------
// Builders for synthetic redo: records, mtrs, and a circular ib_logfile0.

inline Bytes CheckpointRecord(uint64_t lsn) {
  Bytes p{0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  util::StoreBE64(p.data() + 2, lsn);
  return Record(kFileCheckpoint, p);
}

// A WRITE record of n data bytes to (space, page), data filled from `seed`.
inline Bytes PageWrite(uint32_t space, uint32_t page, size_t n, uint32_t seed) {
  Bytes p = Varint(space);
  Append(p, Varint(page));
  Append(p, Varint(38));
  for (size_t i = 0; i < n; i++) p.push_back(static_cast<uint8_t>((seed + i * 7) & 0xFF));
  return Record(0x30, p);
}

inline Bytes Mtr(const Bytes& records, bool seq_bit) {
  Bytes m = records;
  m.push_back(seq_bit ? 1 : 0);
  uint8_t crc[4];
  util::StoreBE32(crc, util::crc32c::Value(records.data(), records.size()));
  m.insert(m.end(), crc, crc + 4);
  return m;
}

inline Bytes ServerHeader(uint32_t format, uint64_t first_lsn, const std::string& creator) {
  Bytes h(kLogHeaderSize, 0);
  util::StoreBE32(h.data(), format);
  util::StoreBE64(h.data() + kLogHeaderFirstLsn, first_lsn);
  std::copy(creator.begin(), creator.end(), h.begin() + kLogHeaderCreator);
  util::StoreBE32(h.data() + kLogHeaderCrc, util::crc32c::Value(h.data(), kLogHeaderCrc));
  return h;
}

inline Bytes CheckpointBlock(uint64_t cp, uint64_t end) {
  Bytes b(kCheckpointBlockSize, 0);
  util::StoreBE64(b.data(), cp);
  util::StoreBE64(b.data() + 8, end);
  util::StoreBE32(b.data() + kCheckpointCrc, util::crc32c::Value(b.data(), kCheckpointCrc));
  return b;
}

using TempDir = xbak::testing::TempDir;

// A server-like circular ib_logfile0 written with pwrite, as a live server
// would: mtrs land at LsnToOffset(), wrap round, carry the sequence bit of the
// pass their terminator is on. `linear()` is what a correct backup log holds.
class SynthLog {
 public:
  SynthLog(std::string path, uint64_t capacity, uint64_t first_lsn)
      : path_(std::move(path)),
        capacity_(capacity),
        first_lsn_(first_lsn),
        lsn_(first_lsn),
        written_(first_lsn) {
    auto f = util::File::CreateNew(path_);
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
    Bytes m = MtrAt(start, records);
    PutCircular(start, m);
    m[records.size()] = 1;
    Append(linear_, m);
    lsn_ += m.size();
    written_.store(lsn_, std::memory_order_release);
    return start;
  }
  // As a server's partly written last block can look to a reader: a whole,
  // checksummed mtr that is not part of the log (a stale copy left in the
  // block's garbage, or a block read halfway through a write) sits at the
  // log's end for `pause`; then the real mtr is written over it, and only
  // then does written() cover it.
  uint64_t WriteOverDecoy(const Bytes& records, const Bytes& decoy, std::chrono::microseconds pause) {
    PutCircular(lsn_, MtrAt(lsn_, decoy));
    std::this_thread::sleep_for(pause);
    return Write(records);
  }
  // The LSN up to which the log is completely written (for written_lsn).
  uint64_t written() const { return written_.load(std::memory_order_acquire); }
  // A checkpoint as the server writes it: FILE_MODIFY + FILE_CHECKPOINT mtr at
  // end_lsn, then the checkpoint block.
  void Checkpoint(uint64_t cp) {
    Bytes r = FileRecord(kFileModify, 5, "./db/t1.ibd");
    Append(r, CheckpointRecord(cp));
    uint64_t end = Write(r);
    SetCheckpoint(cp, end);
  }
  uint64_t lsn() const { return lsn_; }
  Bytes MtrAt(uint64_t start, const Bytes& records) const {
    return Mtr(records, SequenceBit(start + records.size(), first_lsn_, capacity_));
  }
  void PutCircular(uint64_t start, const Bytes& m) {
    size_t done = 0;
    while (done < m.size()) {  // split at the end of the circular area
      uint64_t off = LsnToOffset(start + done, first_lsn_, capacity_);
      size_t n = static_cast<size_t>(std::min<uint64_t>(m.size() - done, kLogStartOffset + capacity_ - off));
      EXPECT_TRUE(file_->PWrite(m.data() + done, n, off).ok());
      done += n;
    }
  }
  uint64_t checkpoint_lsn() const { return checkpoint_lsn_; }
  uint64_t capacity() const { return capacity_; }
  const Bytes& linear() const { return linear_; }  // mtrs from first_lsn, terminators = 1
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<util::File> file_;
  uint64_t capacity_, first_lsn_, lsn_;
  std::atomic<uint64_t> written_{0};
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
inline ::testing::AssertionResult ScanLinear(const Bytes& log, LinearScan* s) {
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

inline Result<Bytes> ReadAll(const std::string& path) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  Bytes b(size);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(b.data(), b.size(), 0));
  b.resize(n);
  return b;
}

inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline Bytes FileStart(uint64_t first_lsn, std::optional<std::pair<uint64_t, uint64_t>> cp1,
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

}  // namespace xbak::innodb::synth
