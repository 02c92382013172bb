#include "xbak/prepare/doublewrite.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "util/temp_dir.h"
#include "xbak/innodb/page.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::prepare {
namespace {

constexpr size_t kDwPs = 4096;
constexpr uint32_t kId = 7;
constexpr DoublewriteTag kTag{1000, 2000};

class DoublewriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    dir_ = tmp_->path();
    ASSERT_FALSE(dir_.empty());
    ASSERT_TRUE(util::MakeDirs(dir_ + "/db").ok());
    WriteTable("db/t.ibd", kId);
  }
  void TearDown() override { tmp_.reset(); }

  void WriteTable(const std::string& rel, uint32_t id) {
    std::string ts(4 * kDwPs, 'o');
    util::StoreBE32(reinterpret_cast<uint8_t*>(ts.data()) + innodb::kFilPageSpaceId, id);
    ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/" + rel, ts).ok());
  }
  std::string Page(uint32_t no) {
    return util::ReadSmallFile(dir_ + "/db/t.ibd").value().substr(no * kDwPs, kDwPs);
  }
  static std::vector<uint8_t> Image(char c) { return std::vector<uint8_t>(kDwPs, static_cast<uint8_t>(c)); }
  Status WriteOne(Doublewrite& d, size_t slot, uint32_t id, uint32_t page,
                  const std::vector<uint8_t>& bytes) {
    return d.Write(slot, std::vector<PageImage>{{"db/t.ibd", "db/t.ibd", id, page * kDwPs, bytes}});
  }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string dir_;
};

TEST_F(DoublewriteTest, EveryIntactImageOfTheSameApplyGoesBackInPlace) {
  auto d = Doublewrite::Create(dir_, kTag, 2, 2, kDwPs);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const auto a = Image('a'), b = Image('b');
  ASSERT_TRUE(
      (*d)->Write(0, std::vector<PageImage>{{"db/t.ibd", "db/t.ibd", kId, 2 * kDwPs, a},
                                            {"db/t.ibd", "db/t.ibd", kId, 3 * kDwPs, {b.data(), 100}}})
          .ok());
  auto n = RestoreDoublewrite(dir_, kTag);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(Page(2), std::string(kDwPs, 'a'));
  EXPECT_EQ(Page(3), std::string(100, 'b') + std::string(kDwPs - 100, 'o'))
      << "only the bytes that were written";
  ASSERT_TRUE((*d)->Remove().ok());
  EXPECT_FALSE(util::PathExists(dir_ + "/" + kDoublewriteFile));
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 0u) << "no file: nothing to do";
}

TEST_F(DoublewriteTest, AnotherApplysFileATornEntryAndAnotherTablespaceAreLeftAlone) {
  {
    auto other = Doublewrite::Create(dir_, {kTag.checkpoint_lsn, kTag.end_lsn + 1}, 1, 2, kDwPs);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE(WriteOne(**other, 0, kId, 1, Image('x')).ok());
  }
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 0u);
  EXPECT_EQ(Page(1), std::string(kDwPs, 'o'));

  auto d = Doublewrite::Create(dir_, kTag, 3, 1, kDwPs);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteOne(**d, 0, kId, 1, Image('x')).ok());
  ASSERT_TRUE(WriteOne(**d, 1, kId + 1, 2, Image('y')).ok());  // db/t.ibd holds another tablespace now
  ASSERT_TRUE(WriteOne(**d, 2, kId, 3, Image('z')).ok());
  {  // the last entry cut short: the kill came while it was written
    auto f = util::File::OpenWrite(dir_ + "/" + kDoublewriteFile);
    ASSERT_TRUE(f.ok());
    const uint64_t size = f->Size().value();
    ASSERT_TRUE(f->PWrite("?", 1, size - 10).ok());
  }
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 1u);
  EXPECT_EQ(Page(1), std::string(kDwPs, 'x'));
  EXPECT_EQ(Page(2), std::string(kDwPs, 'o'));
  EXPECT_EQ(Page(3), std::string(kDwPs, 'o'));
}

TEST_F(DoublewriteTest, ANewApplyStartsAnEmptyFileAndSlotsAreSharedByWriters) {
  {
    auto d = Doublewrite::Create(dir_, kTag, 1, 1, kDwPs);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(WriteOne(**d, 0, kId, 1, Image('x')).ok());
  }
  auto d = Doublewrite::Create(dir_, kTag, 2, 1, kDwPs);  // run again: the old images were written back
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 0u);
  // Two slots: a third writer waits until one is released, and gets that one
  // (a slot is reused only once its pages are in place).
  const size_t s0 = (*d)->Acquire().value(), s1 = (*d)->Acquire().value();
  EXPECT_NE(s0, s1);
  std::atomic<bool> got{false};
  size_t third = 99;
  std::thread waiter([&] {
    third = (*d)->Acquire().value();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  (*d)->Release(s1);
  waiter.join();
  EXPECT_EQ(third, s1);
  ASSERT_TRUE(WriteOne(**d, s0, kId, 1, Image('a')).ok());
  ASSERT_TRUE(WriteOne(**d, third, kId, 2, Image('b')).ok());
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 2u);
  EXPECT_EQ(Page(1), std::string(kDwPs, 'a'));
  EXPECT_EQ(Page(2), std::string(kDwPs, 'b'));
}

// The page cache of an earlier boot is gone: the pages the run was writing
// may be torn on disk, their copies lost with it. Refused, by name.
TEST_F(DoublewriteTest, ARunOfAnEarlierBootIsRefusedByName) {
  auto d = Doublewrite::Create(dir_, kTag, 1, 1, kDwPs);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(WriteOne(**d, 0, kId, 1, Image('x')).ok());
  const std::string path = dir_ + "/" + kDoublewriteFile;
  ASSERT_FALSE(BootId().empty());
  std::string file = util::ReadSmallFile(path, 1 << 24).value();
  EXPECT_EQ(file.substr(40, 36), BootId()) << "the header holds the boot id at 40";
  file.replace(40, 36, std::string(36, '0'));
  auto* h = reinterpret_cast<uint8_t*>(file.data());
  util::StoreBE32(h + 76, util::crc32c::Value(h, 76));
  ASSERT_TRUE(util::WriteFileAtomic(path, file).ok());
  auto n = RestoreDoublewrite(dir_, kTag);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("earlier boot"), std::string::npos) << n.status().message();
  EXPECT_NE(n.status().message().find(kDoublewriteFile), std::string::npos) << n.status().message();
  EXPECT_EQ(Page(1), std::string(kDwPs, 'o')) << "nothing written";
  // No boot id recorded (a machine without /proc): the boot cannot be told,
  // so the page cache is not trusted either.
  file.replace(40, 36, std::string(36, '\0'));
  util::StoreBE32(h + 76, util::crc32c::Value(h, 76));
  ASSERT_TRUE(util::WriteFileAtomic(path, file).ok());
  n = RestoreDoublewrite(dir_, kTag);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("cannot be told"), std::string::npos) << n.status().message();
  EXPECT_EQ(Page(1), std::string(kDwPs, 'o')) << "nothing written";
}

// A write in place that failed (ENOSPC, EIO) may have torn a page whose only
// whole copy is in its slot: the slot is never handed out again, nor is any
// other (a writer waiting for one gets an error), and the copy is there for
// the next run.
TEST_F(DoublewriteTest, AnAbandonedSlotKeepsItsCopiesAndNoSlotIsWrittenAfter) {
  auto d = Doublewrite::Create(dir_, kTag, 2, 1, kDwPs);
  ASSERT_TRUE(d.ok());
  const size_t s0 = (*d)->Acquire().value(), s1 = (*d)->Acquire().value();
  ASSERT_TRUE(WriteOne(**d, s0, kId, 1, Image('x')).ok());
  Result<size_t> third = size_t{99};
  std::thread waiter([&] { third = (*d)->Acquire(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*d)->Abandon(s0);
  waiter.join();
  ASSERT_FALSE(third.ok()) << "handed out slot " << *third;
  EXPECT_NE(third.status().message().find("failed write of a page in place"), std::string::npos)
      << third.status().message();
  (*d)->Release(s1);
  EXPECT_FALSE((*d)->Acquire().ok()) << "a released slot is not handed out either";
  EXPECT_EQ(*RestoreDoublewrite(dir_, kTag), 1u);
  EXPECT_EQ(Page(1), std::string(kDwPs, 'x'));
}

TEST_F(DoublewriteTest, NamesThatWouldLeaveTheDirectoryAreNeverFollowed) {
  WriteTable("outside.ibd", kId);
  auto d = Doublewrite::Create(dir_ + "/db", kTag, 1, 1, kDwPs);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(
      (*d)->Write(0, std::vector<PageImage>{{"../outside.ibd", "../outside.ibd", kId, kDwPs, Image('x')}})
          .ok());
  EXPECT_EQ(*RestoreDoublewrite(dir_ + "/db", kTag), 0u);
  EXPECT_EQ(util::ReadSmallFile(dir_ + "/outside.ibd").value().substr(kDwPs, kDwPs), std::string(kDwPs, 'o'));
}

}  // namespace
}  // namespace xbak::prepare
