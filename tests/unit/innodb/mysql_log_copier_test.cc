// MysqlLogCopier on synthetic #innodb_redo sets that a test "server" writes
// as the copier reads: the log copied across files, held and cut at the
// consistent LSN; a file reused or removed before it was copied, and a
// disabled redo log, refused; a copy that cannot reach the LSN times out.
#include "xbak/innodb/mysql_log_copier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "util/temp_dir.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

// A namespace of its own: the unity build compiles this with the layer's other tests.
namespace xbak::innodb::mysql_log_copier_test {
namespace {

namespace mr = mysql_redo;
using testing::TempDir;
using namespace std::chrono_literals;

constexpr uint64_t kFileBlocks = 16;
constexpr uint64_t kFirst = 64 * 1024;  // the LSN of #ib_redo1's first block

// A block of `lsn` holding `len` bytes (header included), its payload a pattern of its LSN.
std::vector<uint8_t> Block(uint64_t lsn, uint16_t len = 512) {
  std::vector<uint8_t> b(mr::kBlockSize, 0);
  for (size_t i = mr::kBlockHeaderSize; i < len && i < mr::kBlockSize - 4; i++) b[i] = uint8_t(lsn / 512 + i);
  util::StoreBE32(b.data() + 4, (uint32_t{len} << 16) | 12);
  mr::StampBlock(b.data(), lsn);
  return b;
}

class Redo {
 public:
  explicit Redo(const std::string& dir) : dir_(dir) {}
  std::string Path(uint64_t id) const { return dir_ + "/#ib_redo" + std::to_string(id); }
  // #ib_redoID for [start, start + kFileBlocks blocks), blocks not written yet.
  void Create(uint64_t id, uint64_t start, uint64_t checkpoint = 0, uint32_t flags = 0) {
    std::string f(mr::kFileHeaderSize + kFileBlocks * mr::kBlockSize, '\0');
    mr::FileHeader h{mr::kFormat8030, 7, start, "MySQL 9.7.4", flags};
    auto hb = mr::EncodeFileHeader(h);
    f.replace(0, hb.size(), reinterpret_cast<const char*>(hb.data()), hb.size());
    if (checkpoint != 0) {
      auto c = mr::EncodeCheckpoint(checkpoint);
      f.replace(mr::kCheckpoint1, c.size(), reinterpret_cast<const char*>(c.data()), c.size());
    }
    ASSERT_TRUE(util::WriteFileAtomic(Path(id), f).ok());
  }
  // Writes the block of `lsn` (carrying `as_lsn`'s number: a reused file) into file `id`.
  void Write(uint64_t id, uint64_t start, uint64_t lsn, uint16_t len = 512, uint64_t as_lsn = 0) {
    auto b = Block(as_lsn ? as_lsn : lsn, len);
    auto f = util::File::OpenWrite(Path(id));
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->PWrite(b.data(), b.size(), mr::kFileHeaderSize + (lsn - start)).ok());
  }

 private:
  std::string dir_;
};

MysqlLogCopier::Options Opts(const std::string& dir, size_t max_read = size_t{1} << 20) {
  MysqlLogCopier::Options o;
  o.redo_dir = dir;
  o.poll_interval = 2ms;
  o.max_read = max_read;
  return o;
}

struct Sink {
  std::vector<uint8_t> bytes;
  MysqlLogCopier::Writer writer() {
    return [this](const uint8_t* d, size_t n) {
      bytes.insert(bytes.end(), d, d + n);
      return Status::Ok();
    };
  }
};

TEST(MysqlLogCopier, CopiesAcrossFilesAndEndsAtTheConsistentLsn) {
  TempDir t;
  Redo r(t.path());
  const uint64_t second = kFirst + kFileBlocks * 512;
  r.Create(1, kFirst, kFirst + 3 * 512 + 100);
  for (uint64_t i = 0; i < 10; i++) r.Write(1, kFirst, kFirst + i * 512);
  auto c = MysqlLogCopier::Open(Opts(t.path(), 4 * 512));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->checkpoint_lsn(), kFirst + 3 * 512 + 100);
  EXPECT_EQ((*c)->start_lsn(), kFirst + 3 * 512);
  Sink out;
  ASSERT_TRUE((*c)->Start(out.writer()).ok());
  // The server goes on: the rest of #ib_redo1, then #ib_redo2, whose last block is partial.
  for (uint64_t i = 10; i < kFileBlocks; i++) r.Write(1, kFirst, kFirst + i * 512);
  std::this_thread::sleep_for(10ms);
  r.Create(2, second);
  for (uint64_t i = 0; i < 5; i++) r.Write(2, second, second + i * 512);
  r.Write(2, second, second + 5 * 512, 300);
  for (int i = 0; i < 500 && (*c)->copied_lsn() < second + 5 * 512; i++) std::this_thread::sleep_for(2ms);
  EXPECT_EQ((*c)->copied_lsn(), second + 5 * 512);  // the partial block is not taken
  (*c)->Hold();
  // Written after the consistent point was read: kept, then left out.
  r.Write(2, second, second + 5 * 512, 512);
  r.Write(2, second, second + 6 * 512, 512);
  for (int i = 0; i < 500 && (*c)->copied_lsn() < second + 7 * 512; i++) std::this_thread::sleep_for(2ms);
  const uint64_t end = second + 5 * 512 + 200;  // inside the block that was partial
  ASSERT_TRUE((*c)->Finish(end, 2s).ok());
  // From the checkpoint's block to the cut block, every block as the server wrote it.
  const uint64_t start = kFirst + 3 * 512;
  ASSERT_EQ(out.bytes.size(), end - end % 512 - start + 512);
  for (uint64_t lsn = start; lsn < end - end % 512; lsn += 512) {
    ASSERT_EQ(
        std::vector<uint8_t>(out.bytes.begin() + (lsn - start), out.bytes.begin() + (lsn - start) + 512),
        Block(lsn))
        << lsn;
  }
  const uint8_t* last = out.bytes.data() + out.bytes.size() - 512;
  EXPECT_EQ(mr::CheckBlock(last, end - end % 512), mr::BlockState::kOk);
  EXPECT_EQ(mr::ParseBlockHeader(last).data_len, 200u);
  EXPECT_EQ(last[199], Block(end - end % 512)[199]);
  EXPECT_EQ(last[200], 0);
}

// The consistent LSN may be ahead of what the server wrote to its files when
// Finish is called: the block holding it is read again until it is there.
// An LSN right after a block's header ends the log at that block.
TEST(MysqlLogCopier, FinishWaitsForTheLastBlockToBeWrittenThatFar) {
  TempDir t;
  Redo r(t.path());
  r.Create(1, kFirst, kFirst + 100);
  r.Write(1, kFirst, kFirst);
  r.Write(1, kFirst, kFirst + 512, 40);  // 40 bytes so far; the LSN wanted is 300 in
  auto c = MysqlLogCopier::Open(Opts(t.path()));
  ASSERT_TRUE(c.ok());
  Sink out;
  ASSERT_TRUE((*c)->Start(out.writer()).ok());
  (*c)->Hold();
  std::thread server([&] {
    std::this_thread::sleep_for(50ms);
    r.Write(1, kFirst, kFirst + 512, 350);
  });
  Status st = (*c)->Finish(kFirst + 512 + 300, 5s);
  server.join();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(out.bytes.size(), 1024u);
  EXPECT_EQ(mr::ParseBlockHeader(out.bytes.data() + 512).data_len, 300u);

  TempDir t2;
  Redo r2(t2.path());
  r2.Create(1, kFirst, kFirst + 100);
  r2.Write(1, kFirst, kFirst);
  auto d = MysqlLogCopier::Open(Opts(t2.path()));
  ASSERT_TRUE(d.ok());
  Sink out2;
  ASSERT_TRUE((*d)->Start(out2.writer()).ok());
  (*d)->Hold();
  st = (*d)->Finish(kFirst + 512 + mr::kBlockHeaderSize, 1s);  // the next block is not written at all
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out2.bytes.size(), 512u);
}

TEST(MysqlLogCopier, AFileReusedBeforeItWasCopiedFailsTheCopy) {
  TempDir t;
  Redo r(t.path());
  r.Create(1, kFirst, kFirst + 100);
  r.Write(1, kFirst, kFirst);
  // Block 1 already carries a much later LSN: the file was recycled for a later range.
  r.Write(1, kFirst, kFirst + 512, 512, kFirst + 40 * 512);
  auto c = MysqlLogCopier::Open(Opts(t.path()));
  ASSERT_TRUE(c.ok()) << c.status().message();
  Sink out;
  ASSERT_TRUE((*c)->Start(out.writer()).ok());
  ASSERT_FALSE((*c)->Finish(kFirst + 3 * 512, 1s).ok());
  Status st = (*c)->Stop();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the server reused the file before it was copied"), std::string::npos)
      << st.message();
  EXPECT_EQ(st.code(), ErrorCode::kIo);
}

TEST(MysqlLogCopier, ARemovedFileAndADisabledLogAreRefused) {
  TempDir t;
  Redo r(t.path());
  r.Create(1, kFirst, kFirst + 100);
  for (uint64_t i = 0; i < kFileBlocks; i++) r.Write(1, kFirst, kFirst + i * 512);
  auto c = MysqlLogCopier::Open(Opts(t.path(), 512));
  ASSERT_TRUE(c.ok());
  // Consumed and removed before the copier read it: the next file only is there.
  ASSERT_TRUE(std::filesystem::remove(r.Path(1)));
  r.Create(2, kFirst + kFileBlocks * 512);
  Sink out;
  ASSERT_TRUE((*c)->Start(out.writer()).ok());
  Status st = (*c)->Finish(kFirst + kFileBlocks * 512 + 100, 2s);
  ASSERT_FALSE(st.ok());
  st = (*c)->Stop();
  EXPECT_NE(st.message().find("is gone: the server removed the file"), std::string::npos) << st.message();

  TempDir t2;
  Redo off(t2.path());
  off.Create(1, kFirst, kFirst + 100, /*flags=*/0x1);
  off.Write(1, kFirst, kFirst);
  auto d = MysqlLogCopier::Open(Opts(t2.path()));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(d.status().message().find("DISABLE INNODB REDO_LOG"), std::string::npos);
}

TEST(MysqlLogCopier, ALogThatDoesNotReachTheLsnTimesOut) {
  TempDir t;
  Redo r(t.path());
  r.Create(1, kFirst, kFirst + 100);
  r.Write(1, kFirst, kFirst);
  auto c = MysqlLogCopier::Open(Opts(t.path()));
  ASSERT_TRUE(c.ok());
  Sink out;
  ASSERT_TRUE((*c)->Start(out.writer()).ok());
  Status st = (*c)->Finish(kFirst + 5 * 512, 100ms);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_NE(st.message().find("stopped at LSN " + std::to_string(kFirst + 512)), std::string::npos)
      << st.message();
}

TEST(MysqlLogCopier, TheBackupLogHeaderNamesItsCreatorAndCheckpoint) {
  mr::FileHeader live{mr::kFormat8030, 7, kFirst, "MySQL 9.7.4", 0x8};
  auto h = MakeMysqlBackupLogHeader(live, kFirst + 700, "xbak 1.0");
  ASSERT_EQ(h.size(), mr::kFileHeaderSize);
  auto p = mr::ParseFileHeader(h.data(), "xtrabackup_logfile");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->creator, "xbak 1.0");
  EXPECT_EQ(p->start_lsn, kFirst);
  EXPECT_FALSE(p->full());
  EXPECT_EQ(mr::ParseCheckpoint(h.data() + mr::kCheckpoint1), std::optional<uint64_t>(kFirst + 700));
  EXPECT_EQ(mr::ParseCheckpoint(h.data() + mr::kCheckpoint2), std::optional<uint64_t>(kFirst + 700));
}

// The backup log becomes the one redo file recovery reads: its start LSN the
// checkpoint's block, the blocks as copied, zeros after them.
TEST(MysqlLogCopier, TheBackupLogBecomesTheRecoveryFile) {
  TempDir t;
  const uint64_t cp = kFirst + 5 * 512 + 77, first = kFirst + 5 * 512;
  mr::FileHeader live{mr::kFormat8030, 7, kFirst, "MySQL 9.7.4", 0};
  std::vector<uint8_t> log = MakeMysqlBackupLogHeader(live, cp, "xbak 1.0");
  for (uint64_t i = 0; i < 7; i++) {
    auto b = Block(first + i * 512, i == 6 ? 100 : 512);
    log.insert(log.end(), b.begin(), b.end());
  }
  const std::string path = t.path() + "/xtrabackup_logfile";
  ASSERT_TRUE(util::WriteFileAtomic(path, std::string(log.begin(), log.end())).ok());
  auto got = MakeMysqlRecoveryLog(path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, cp);
  auto s = util::ReadSmallFile(path);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), size_t{1} << 20);
  const auto* d = reinterpret_cast<const uint8_t*>(s->data());
  auto h = mr::ParseFileHeader(d, path);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->start_lsn, first);
  EXPECT_EQ(mr::ParseCheckpoint(d + mr::kCheckpoint1), std::optional<uint64_t>(cp));
  EXPECT_EQ(mr::ParseCheckpoint(d + mr::kCheckpoint2), std::optional<uint64_t>(cp));
  EXPECT_EQ(std::string(s->begin() + mr::kFileHeaderSize, s->begin() + log.size()),
            std::string(log.begin() + mr::kFileHeaderSize, log.end()));
  EXPECT_EQ(s->find_first_not_of('\0', log.size()), std::string::npos);
  // A log whose first block is not its checkpoint's: refused, named.
  std::vector<uint8_t> bad = MakeMysqlBackupLogHeader(live, cp + 512, "xbak 1.0");
  auto b = Block(first);
  bad.insert(bad.end(), b.begin(), b.end());
  ASSERT_TRUE(util::WriteFileAtomic(path, std::string(bad.begin(), bad.end())).ok());
  got = MakeMysqlRecoveryLog(path);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("is not the block of its checkpoint"), std::string::npos)
      << got.status().message();
}

}  // namespace
}  // namespace xbak::innodb::mysql_log_copier_test
