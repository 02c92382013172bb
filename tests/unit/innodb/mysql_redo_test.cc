// MySQL's redo log format 6 (innodb/mysql_redo.h): headers, checkpoints and
// blocks, on bytes written by MySQL 9.7.4 itself and on synthetic sets of
// files, the set as a reader meets it while the server renames files.
#include "xbak/innodb/mysql_redo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::innodb::mysql_redo {
namespace {

using testing::TempDir;

std::string DataDir() {
  std::string here = __FILE__;
  return here.substr(0, here.rfind('/')) + "/../../data/mysql97/";
}

std::vector<uint8_t> ReadData(const std::string& name) {
  auto s = util::ReadSmallFile(DataDir() + name);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::vector<uint8_t>(s->begin(), s->end()) : std::vector<uint8_t>{};
}

TEST(MysqlRedo, ReadsWhatMysql97Wrote) {
  const auto d = ReadData("ib_redo16.head");
  ASSERT_EQ(d.size(), 4096u);
  auto h = ParseFileHeader(d.data(), "ib_redo16");
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->format, kFormat8030);
  EXPECT_EQ(h->creator, "MySQL 9.7.4");
  EXPECT_EQ(h->start_lsn, 33529856u);
  EXPECT_FALSE(h->full());
  EXPECT_FALSE(h->redo_disabled());
  EXPECT_EQ(ParseCheckpoint(d.data() + kCheckpoint1), std::optional<uint64_t>(35076350));
  EXPECT_EQ(ParseCheckpoint(d.data() + kCheckpoint2), std::optional<uint64_t>(35102465));
  for (size_t i = 0; i < 4; i++) {
    const uint8_t* b = d.data() + kFileHeaderSize + i * kBlockSize;
    const uint64_t lsn = h->start_lsn + i * kBlockSize;
    EXPECT_EQ(CheckBlock(b, lsn), BlockState::kOk) << "block " << i;
    EXPECT_EQ(ParseBlockHeader(b).no, BlockNo(lsn));
    EXPECT_EQ(ParseBlockHeader(b).epoch, 1u);
    EXPECT_FALSE(ParseBlockHeader(b).encrypted);
  }
  EXPECT_EQ(ParseBlockHeader(d.data() + kFileHeaderSize).data_len, kBlockSize);
  // Read for another LSN: a block of an earlier pass, or one of a recycled file.
  EXPECT_EQ(CheckBlock(d.data() + kFileHeaderSize, h->start_lsn + kBlockSize), BlockState::kOlder);
  EXPECT_EQ(CheckBlock(d.data() + kFileHeaderSize, h->start_lsn - kBlockSize), BlockState::kNewer);
}

TEST(MysqlRedo, DamageAndOtherFormatsAreNamed) {
  auto d = ReadData("ib_redo16.head");
  ASSERT_EQ(d.size(), 4096u);
  d[kFileHeaderSize + 100] ^= 1;
  EXPECT_EQ(CheckBlock(d.data() + kFileHeaderSize, 33529856), BlockState::kTorn);
  d[kCheckpoint1 + 9] ^= 1;
  EXPECT_FALSE(ParseCheckpoint(d.data() + kCheckpoint1).has_value());
  d[20] ^= 1;
  auto h = ParseFileHeader(d.data(), "#ib_redo16");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(h.status().message().find("#ib_redo16: the header block's checksum"), std::string::npos);
  FileHeader old;
  old.format = 5;
  old.start_lsn = kStartLsn;
  auto e = EncodeFileHeader(old);
  h = ParseFileHeader(e.data(), "#ib_redo3");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(h.status().message().find("redo log format 5"), std::string::npos) << h.status().message();
  EXPECT_FALSE(ParseCheckpoint(std::vector<uint8_t>(kBlockSize, 0).data()).has_value());  // never written
}

TEST(MysqlRedo, BlockNumbersWrapIntoTheNextEpoch) {
  const uint64_t wrap = uint64_t{kBlockSize} * 0x40000000;  // the first block of epoch 2
  EXPECT_EQ(BlockNo(wrap - kBlockSize), 0x40000000u);
  EXPECT_EQ(BlockEpoch(wrap - kBlockSize), 1u);
  EXPECT_EQ(BlockNo(wrap), 1u);
  EXPECT_EQ(BlockEpoch(wrap), 2u);
  std::vector<uint8_t> b(kBlockSize, 0x33);
  StampBlock(b.data(), wrap);
  EXPECT_EQ(CheckBlock(b.data(), wrap), BlockState::kOk);
  EXPECT_EQ(CheckBlock(b.data(), wrap - kBlockSize), BlockState::kNewer);
  StampBlock(b.data(), wrap - kBlockSize);
  EXPECT_EQ(CheckBlock(b.data(), wrap), BlockState::kOlder);
}

// A redo file: the header for [start, start + blocks * 512), checkpoints in
// its slots (0: none), `blocks` stamped blocks.
void WriteRedoFile(const std::string& path, uint32_t uuid, uint64_t start, size_t blocks, uint64_t ck1 = 0,
                   uint64_t ck2 = 0) {
  std::vector<uint8_t> f(kFileHeaderSize + blocks * kBlockSize, 0);
  FileHeader h;
  h.format = kFormat8030;
  h.log_uuid = uuid;
  h.start_lsn = start;
  h.creator = "MySQL 9.7.4";
  auto hb = EncodeFileHeader(h);
  std::copy(hb.begin(), hb.end(), f.begin());
  if (ck1 != 0) {
    auto c = EncodeCheckpoint(ck1);
    std::copy(c.begin(), c.end(), f.begin() + kCheckpoint1);
  }
  if (ck2 != 0) {
    auto c = EncodeCheckpoint(ck2);
    std::copy(c.begin(), c.end(), f.begin() + kCheckpoint2);
  }
  for (size_t i = 0; i < blocks; i++)
    StampBlock(f.data() + kFileHeaderSize + i * kBlockSize, start + i * 512);
  ASSERT_TRUE(util::WriteFileAtomic(path, std::string(f.begin(), f.end())).ok());
}

TEST(MysqlRedo, ListsTheSetWithoutSparesAndFindsTheNewestCheckpoint) {
  TempDir t;
  const uint64_t a = 1 << 20;
  WriteRedoFile(t.path() + "/#ib_redo7", 42, a, 8, a + 100, a + 700);
  WriteRedoFile(t.path() + "/#ib_redo8", 42, a + 8 * 512, 8, 0, a + 8 * 512 + 40);
  // A spare that still holds a recycled file's header and a newer checkpoint: not part of the set.
  WriteRedoFile(t.path() + "/#ib_redo9_tmp", 42, a + 16 * 512, 8, a + 16 * 512 + 10);
  // A slot whose LSN is not in its own file does not count.
  WriteRedoFile(t.path() + "/#ib_redo6", 42, a - 8 * 512, 8, a + 1000000);
  auto files = ListRedoFiles(t.path());
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].id, 6u);
  EXPECT_EQ((*files)[2].id, 8u);
  EXPECT_EQ((*files)[2].end_lsn(), a + 16 * 512);
  auto ck = FindCheckpoint(*files);
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  EXPECT_EQ(*ck, a + 8 * 512 + 40);
}

TEST(MysqlRedo, ASetWithAGapOrAnotherServersFileIsRefused) {
  TempDir t;
  WriteRedoFile(t.path() + "/#ib_redo1", 42, 8192, 8, 8192 + 20);
  WriteRedoFile(t.path() + "/#ib_redo2", 42, 8192 + 9 * 512, 8);
  auto files = ListRedoFiles(t.path());
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("#ib_redo2 starts at LSN 12800 but"), std::string::npos)
      << files.status().message();
  WriteRedoFile(t.path() + "/#ib_redo2", 43, 8192 + 8 * 512, 8);
  files = ListRedoFiles(t.path());
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("is of another redo log set"), std::string::npos)
      << files.status().message();
  TempDir empty;
  files = ListRedoFiles(empty.path());
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace xbak::innodb::mysql_redo
