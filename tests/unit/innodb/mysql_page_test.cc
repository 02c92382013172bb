// MySQL's tablespaces (page.h, Dialect::kMySQL) on pages MySQL 9.7.4 wrote
// (tests/data/mysql97/README.md): their flags decoded in MySQL's meaning,
// their page 0 parsed, their crc32 checksums checked as the server does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/file.h"

// A namespace of its own: the unity build compiles this with the layer's other tests.
namespace xbak::innodb::mysql_page_test {
namespace {

std::vector<uint8_t> ReadPage(const std::string& name) {
  std::string here = __FILE__;
  auto s = util::ReadSmallFile(here.substr(0, here.rfind('/')) + "/../../data/mysql97/" + name);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::vector<uint8_t>(s->begin(), s->end()) : std::vector<uint8_t>(16384, 0);
}

TEST(MysqlPage, FlagsAreReadInMysqlsMeaning) {
  auto f = DecodeSpaceFlags(0x4021, Dialect::kMySQL);  // a DYNAMIC file-per-table table
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->logical_size, 16384u);
  EXPECT_EQ(f->physical_size, 16384u);
  EXPECT_FALSE(f->full_crc32);
  EXPECT_FALSE(f->page_compressed);
  EXPECT_TRUE(f->mysql_sdi);
  EXPECT_FALSE(f->mysql_shared);
  EXPECT_FALSE(f->mysql_encrypted);
  f = DecodeSpaceFlags(0x6021, Dialect::kMySQL);  // the same, ENCRYPTION='Y'
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->mysql_encrypted);
  f = DecodeSpaceFlags(0x4800 | (3 << 6), Dialect::kMySQL);  // a general tablespace of 4k pages
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->mysql_shared);
  EXPECT_EQ(f->logical_size, 4096u);
  f = DecodeSpaceFlags(0x4029, Dialect::kMySQL);  // ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->zip_size, 8192u);
  // Bits MySQL never sets, and MySQL's flags read as MariaDB's: refused, named.
  f = DecodeSpaceFlags(0x10021, Dialect::kMySQL);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("bits above 14"), std::string::npos) << f.status().message();
  f = DecodeSpaceFlags(0x4021, Dialect::kMariaDB);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("or a MySQL tablespace?"), std::string::npos) << f.status().message();
}

TEST(MysqlPage, RealPagesParseAndPassTheirChecksums) {
  struct Case {
    const char* file;
    uint32_t space_id, page_no, flags;
  };
  for (const Case& c :
       {Case{"sbtest_sbtest1_p0.page", 3, 0, 0x4021}, Case{"sbtest_sbtest1_p4.page", 3, 4, 0x4021},
        Case{"mysql_p0.page", 0xFFFFFFFE, 0, 0x4800}, Case{"mysql_p4.page", 0xFFFFFFFE, 4, 0x4800}}) {
    SCOPED_TRACE(c.file);
    auto page = ReadPage(c.file);
    ASSERT_EQ(page.size(), 16384u);
    auto flags = DecodeSpaceFlags(c.flags, Dialect::kMySQL);
    ASSERT_TRUE(flags.ok());
    if (c.page_no == 0) {
      auto h = ParseSpaceHeader(page.data(), page.size(), Dialect::kMySQL);
      ASSERT_TRUE(h.ok()) << h.status().message();
      EXPECT_EQ(h->space_id, c.space_id);
      EXPECT_EQ(h->flags.raw, c.flags);
    }
    EXPECT_EQ(PageSpaceId(page.data()), c.space_id);
    PageCheck ok = CheckPage(page.data(), *flags, c.page_no);
    EXPECT_EQ(ok.verdict, PageVerdict::kOk) << ok.detail;
    page[5000] ^= 0x40;
    PageCheck bad = CheckPage(page.data(), *flags, c.page_no);
    EXPECT_EQ(bad.verdict, PageVerdict::kCorrupt);
  }
}

}  // namespace
}  // namespace xbak::innodb::mysql_page_test
