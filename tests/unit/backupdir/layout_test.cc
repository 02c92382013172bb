#include "xbak/backupdir/layout.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::backupdir {
namespace {

TEST(ParseDataFiles, SizesAreReadAsTheServerReadsThem) {
  auto f = ParseDataFiles("ibdata1:3M;ibdata2:1G;/abs/ibdata3:2048K;ibdata4:10485760:autoextend");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->size(), 4u);
  EXPECT_EQ((*f)[0].name, "ibdata1");
  EXPECT_EQ((*f)[0].size, 3u << 20);
  EXPECT_EQ((*f)[1].size, uint64_t{1} << 30);
  EXPECT_EQ((*f)[2].name, "/abs/ibdata3");
  EXPECT_EQ((*f)[2].size, 2u << 20);
  EXPECT_EQ((*f)[3].size, 10u << 20);  // bytes without a suffix
  EXPECT_EQ(FirstPages(*f, 16384), (std::vector<uint32_t>{0, 192, 192 + 65536, 192 + 65536 + 128}));
  auto names = ParseDataFilePath("ibdata1:12M:autoextend");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"ibdata1"});
}

TEST(ParseDataFiles, BadSpecsAreRefusedWithTheSpec) {
  auto none = ParseDataFiles("ibdata1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no file size"), std::string::npos);
  auto bad = ParseDataFiles("ibdata1:abc");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'abc' is not a size"), std::string::npos);
  EXPECT_EQ(ParseDataFiles("ibdata1:12M:raw").status().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(ParseDataFiles("").ok());
}

// The sizes go through util's ParseSize: whole megabytes as the server keeps
// them, more than the 1 TiB of a size option, and a size that does not fit in
// 64 bits refused rather than wrapped around (the old inline parser took
// 17179869184G as 0 bytes and 17592186044417M as 1 MiB).
TEST(ParseDataFiles, LargeSizesAreTakenAndOverflowIsRefused) {
  auto f = ParseDataFiles("ibdata1:2048G;ibdata2:1048577K;ibdata3:1048575:autoextend");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)[0].size, uint64_t{1} << 41);
  EXPECT_EQ((*f)[1].size, uint64_t{1} << 30);  // rounded down to whole megabytes
  EXPECT_EQ((*f)[2].size, 0u);
  for (const char* bad : {"ibdata1:17179869184G", "ibdata1:17592186044417M", "ibdata1:99999999999999999999",
                          "ibdata1:12MB", "ibdata1:12T"}) {
    auto r = ParseDataFiles(bad);
    ASSERT_FALSE(r.ok()) << bad << " gave " << (*r)[0].size;
    EXPECT_NE(r.status().message().find("is not a size"), std::string::npos) << r.status().message();
  }
}

// The backup tells a table renamed during it from one dropped and another
// created (FileIdentity): a rename keeps the identity, a new file has
// another. Not staged here: a new file given the dropped one's inode number
// (XFS does it at once), where only the birth time differs; the comparison
// is the same.
TEST(ListInnodbFiles, ARenameKeepsTheIdentityAndANewFileHasAnother) {
  const testing::TempDir tmp;
  const std::string dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  ServerLayout l;
  l.datadir = l.undo_dir = l.data_home_dir = l.log_dir = dir;
  ASSERT_TRUE(util::MakeDirs(dir + "/db").ok());
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/db/t.ibd", "page").ok());
  auto identity = [&]() -> FileIdentity {
    auto files = ListInnodbFiles(l);
    EXPECT_TRUE(files.ok()) << files.status().message();
    if (!files.ok() || files->tablespaces.size() != 1) return {};
    return files->tablespaces[0].id;
  };
  const FileIdentity t = identity();
  EXPECT_NE(t.ino, 0u);
  std::filesystem::rename(dir + "/db/t.ibd", dir + "/db/u.ibd");
  EXPECT_EQ(identity(), t);
  std::filesystem::remove(dir + "/db/u.ibd");
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/db/t.ibd", "page").ok());
  const FileIdentity again = identity();
  EXPECT_NE(again, t);
  if (t.birth_ns != 0) {
    EXPECT_GE(again.birth_ns, t.birth_ns);
  }
}

}  // namespace
}  // namespace xbak::backupdir
