// CopyTablespace on synthetic files: a ROW_FORMAT=COMPRESSED table (8 KiB
// pages on 16 KiB innodb_page_size), whole or with its page 0 reaching the
// disk while it is copied, as a table created just before a backup does.
#include "xbak/backup/tablespace_copy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "util/temp_dir.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::backup {
namespace {

constexpr uint32_t kLogical = 16384;
constexpr uint32_t kZipFlags = 0x29;  // ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8
constexpr uint32_t kZip = 8192;
constexpr uint32_t kSpace = 42;
constexpr uint32_t kPages = 6;

std::vector<uint8_t> ZipPage(uint32_t no) {
  std::vector<uint8_t> p(kZip, static_cast<uint8_t>(no + 1));
  std::fill(p.begin(), p.begin() + innodb::kFilPageData, 0);
  util::StoreBE32(p.data() + innodb::kFilPageOffset, no);
  util::StoreBE32(p.data() + innodb::kFilPageSpaceId, kSpace);
  util::StoreBE64(p.data() + innodb::kFilPageLsn, 1000 + no);
  if (no == 0) {
    std::fill(p.begin() + innodb::kFspHeaderOffset, p.begin() + innodb::kFspHeaderEnd, 0);
    util::StoreBE32(p.data() + innodb::kFspSpaceId, kSpace);
    util::StoreBE32(p.data() + innodb::kFspSize, kPages);
    util::StoreBE32(p.data() + innodb::kFspSpaceFlags, kZipFlags);
  }
  auto flags = innodb::DecodeSpaceFlags(kZipFlags);
  EXPECT_TRUE(flags.ok());
  innodb::StampPageChecksum(p.data(), *flags);
  return p;
}

std::vector<uint8_t> Space() {
  std::vector<uint8_t> out;
  for (uint32_t i = 0; i < kPages; i++) {
    auto p = ZipPage(i);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

void Write(const std::string& path, const std::vector<uint8_t>& v) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

std::vector<uint8_t> Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

class TablespaceCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    dir_ = tmp_->path();
    ASSERT_FALSE(dir_.empty());
    src_.path = dir_ + "/t.ibd";
    src_.rel = "db/t.ibd";
  }
  void TearDown() override { tmp_.reset(); }

  Status Copy(const TablespaceCopyOptions& o, TablespaceCopyResult* r) {
    auto sink = sink::MakeDirectorySink(dir_ + "/out");
    if (!sink.ok()) return sink.status();
    util::Progress progress("test", std::chrono::milliseconds(0));
    XBAK_RETURN_IF_ERROR(CopyTablespace(src_, src_.rel, **sink, progress, o, r));
    return (*sink)->Flush();
  }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string dir_;
  backupdir::SourceFile src_;
};

TEST_F(TablespaceCopyTest, CompressedTableIsCheckedInItsOwnPageSize) {
  auto space = Space();
  Write(src_.path, space);
  TablespaceCopyOptions o;
  o.page_size = kLogical;
  TablespaceCopyResult r;
  Status s = Copy(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(r.deferred);
  EXPECT_EQ(r.space_id, kSpace);
  EXPECT_EQ(r.pages, kPages);
  EXPECT_EQ(Read(dir_ + "/out/db/t.ibd"), space);
}

// Page 0 is all zero at the first read (the new table's page 0 is still in
// the buffer pool) and on disk when the copy reads the file. The copy must
// then check 8 KiB pages, not 16 KiB ones (which failed the backup with
// "page 0: checksum mismatch, still bad after 10 re-reads").
TEST_F(TablespaceCopyTest, Page0FlushedDuringTheCopyIsReadInItsFormat) {
  auto space = Space();
  auto unflushed = space;
  std::fill(unflushed.begin(), unflushed.begin() + kZip, 0);
  Write(src_.path, unflushed);
  TablespaceCopyOptions o;
  o.page_size = kLogical;
  o.max_retries = 2;
  o.after_first_read = [&] { Write(src_.path, space); };
  TablespaceCopyResult r;
  Status s = Copy(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(r.deferred) << "page 0 was there to be read";
  EXPECT_EQ(r.space_id, kSpace);
  EXPECT_EQ(r.pages, kPages);
  EXPECT_EQ(Read(dir_ + "/out/db/t.ibd"), space);
}

// Still not flushed when copied: copied as it is, deferred to the redo log.
TEST_F(TablespaceCopyTest, Page0NeverFlushedIsDeferred) {
  auto unflushed = Space();
  std::fill(unflushed.begin(), unflushed.begin() + kLogical, 0);  // pages 0 and 1 not written yet
  Write(src_.path, unflushed);
  TablespaceCopyOptions o;
  o.page_size = kLogical;
  TablespaceCopyResult r;
  Status s = Copy(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(r.deferred);
  EXPECT_EQ(Read(dir_ + "/out/db/t.ibd"), unflushed);
}

// The read buffer is sized from the listed size: a file listed smaller than it
// is now (it grew since), or exactly its size, is still copied whole.
TEST_F(TablespaceCopyTest, AFileThatGrewSinceItWasListedIsCopiedWhole) {
  auto space = Space();
  Write(src_.path, space);
  for (uint64_t listed :
       {uint64_t{0}, uint64_t{kZip}, uint64_t{kZip} * kPages, uint64_t{kZip} * kPages + 1}) {
    src_.size = listed;
    std::filesystem::remove_all(dir_ + "/out");
    TablespaceCopyOptions o;
    o.page_size = kLogical;
    TablespaceCopyResult r;
    Status s = Copy(o, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(r.pages, kPages) << "listed as " << listed << " bytes";
    EXPECT_EQ(Read(dir_ + "/out/db/t.ibd"), space) << "listed as " << listed << " bytes";
  }
}

// Holes and preallocated space are neither read nor written: the copy reads
// as the source does, and keeps them holes.
TEST_F(TablespaceCopyTest, HolesAndPreallocatedSpaceStayHoles) {
  auto space = Space();
  {
    auto f = util::File::CreateNew(src_.path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->PWrite(space.data(), space.size(), 0).ok());
    for (uint32_t no = 200; no < 204; no++) {  // after a 1.5 MiB hole
      auto p = ZipPage(no);
      ASSERT_TRUE(f->PWrite(p.data(), p.size(), uint64_t{no} * kZip).ok());
    }
    ASSERT_EQ(::fallocate(f->fd(), 0, uint64_t{204} * kZip, 2 << 20), 0);  // as InnoDB extends a file
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Close().ok());
  }
  const auto want = Read(src_.path);
  src_.size = want.size();
  TablespaceCopyOptions o;
  o.page_size = kLogical;
  TablespaceCopyResult r;
  Status s = Copy(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.pages, want.size() / kZip);
  EXPECT_EQ(Read(dir_ + "/out/db/t.ibd"), want);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/out/db/t.ibd").c_str(), &st), 0);
  EXPECT_LE(uint64_t(st.st_blocks) * 512, uint64_t{10} * kZip + 65536) << "holes written as data";
}

// A header that stays unreadable fails, naming the file and page 0.
TEST_F(TablespaceCopyTest, BadHeaderIsNamed) {
  auto space = Space();
  util::StoreBE32(space.data() + innodb::kFspSpaceFlags, 0xFFFFFFFF);
  Write(src_.path, space);
  TablespaceCopyOptions o;
  o.page_size = kLogical;
  o.max_retries = 1;
  TablespaceCopyResult r;
  Status s = Copy(o, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(src_.path + " page 0"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/db/t.ibd"));
}

}  // namespace
}  // namespace xbak::backup
