// The catalog of a backup's tablespaces as --prepare builds it: names from
// the log mapped into the backup, page 0s read, tablespaces still to come
// from the log, and DDL markers noticed.
#include "xbak/prepare/space_catalog.h"

#include <gtest/gtest.h>

#include "testing/synthetic_chain.h"

namespace xbak::prepare {
namespace {

using testing::kPs;
using testing::MakePage;

TEST(BackupRelName, TheLastTwoComponentsAndNothingUnsafe) {
  EXPECT_EQ(BackupRelName("./db/t.ibd"), "db/t.ibd");
  EXPECT_EQ(BackupRelName("/data/elsewhere/db/t.ibd"), "db/t.ibd");  // DATA DIRECTORY
  EXPECT_EQ(BackupRelName("db/t#P#p0.ibd"), "db/t#P#p0.ibd");
  EXPECT_EQ(BackupRelName("t.ibd"), std::nullopt);
  EXPECT_EQ(BackupRelName("/t.ibd"), std::nullopt);
  EXPECT_EQ(BackupRelName("./../t.ibd"), std::nullopt);
  EXPECT_EQ(BackupRelName("/x/../db.ibd"), std::nullopt);
}

TEST(PageName, NamesFilePageAndTablespace) {
  Space s;
  s.id = 12;
  s.rel = "db/t.ibd";
  EXPECT_EQ(PageName(s, 7), "db/t.ibd page 7 (tablespace 12)");
}

class CatalogTest : public testing::SyntheticChainTest {
 protected:
  void Table(const std::string& rel, uint32_t space, uint32_t pages) {
    std::string body;
    for (uint32_t no = 0; no < pages; no++) {
      auto p = MakePage(space, no, 0x22, pages);
      body.append(p.begin(), p.end());
    }
    ASSERT_TRUE(util::WriteFileAtomic(full_ + "/" + rel, body).ok());
  }
  Catalog catalog_{nullptr, {}};
};

TEST_F(CatalogTest, ReadsEachTablespacesPage0) {
  Table("db/u.ibd", 9, 3);
  ASSERT_TRUE(catalog_.Scan(full_, kPs, {}, 2).ok());
  ASSERT_NE(catalog_.Find(5), nullptr);  // db/t.ibd of the synthetic full backup
  EXPECT_EQ(catalog_.Find(5)->rel, "db/t.ibd");
  Space* u = catalog_.Find(9);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->rel, "db/u.ibd");
  EXPECT_TRUE(u->flags_known);
  EXPECT_EQ(u->flags.physical_size, kPs);
  EXPECT_EQ(catalog_.Find(10), nullptr);
  EXPECT_FALSE(catalog_.saw_ddl_markers());
}

TEST_F(CatalogTest, TablespacesTheLogNamesWithoutAFileAreDeferred) {
  ASSERT_TRUE(catalog_.Scan(full_, kPs, {}, 1).ok());
  FileNames names;
  names.last_name = {{5, "db/t.ibd"}, {20, "db/new.ibd"}, {21, "db/gone.ibd"}, {22, "other/x.ibd"}};
  names.deleted = {21};
  backupdir::TableFilterOptions fo;
  fo.databases = "db";
  auto filter = backupdir::TableFilter::Make(fo);
  ASSERT_TRUE(filter.ok()) << filter.status().message();
  catalog_.AddDeferred(full_, names, *filter);
  ASSERT_NE(catalog_.Find(20), nullptr);  // created during the backup: page 0 from the log
  EXPECT_FALSE(catalog_.Find(20)->flags_known);
  EXPECT_EQ(catalog_.Find(20)->rel, "db/new.ibd");
  EXPECT_TRUE(catalog_.Find(5)->flags_known);  // has its file: unchanged
  EXPECT_EQ(catalog_.Find(21), nullptr);       // dropped at the log's end
  EXPECT_EQ(catalog_.Find(22), nullptr);       // left out by the partial backup's filter
}

TEST_F(CatalogTest, DdlMarkersAreNoticedAndARebuildSeesTheFilesAgain) {
  ASSERT_TRUE(util::WriteFileAtomic(full_ + "/db/t.ren", "db/renamed").ok());
  ASSERT_TRUE(catalog_.Scan(full_, kPs, {}, 1).ok());
  EXPECT_TRUE(catalog_.saw_ddl_markers());
  // What installing the marker does; the rebuilt catalog follows the file.
  std::filesystem::rename(full_ + "/db/t.ibd", full_ + "/db/renamed.ibd");
  std::filesystem::remove(full_ + "/db/t.ren");
  ASSERT_TRUE(catalog_.Rebuild(full_, kPs, {}, 1).ok());
  ASSERT_NE(catalog_.Find(5), nullptr);
  EXPECT_EQ(catalog_.Find(5)->rel, "db/renamed.ibd");
  EXPECT_FALSE(catalog_.saw_ddl_markers());
}

TEST_F(CatalogTest, TwoFilesWithOneTablespaceIdAreRefused) {
  Table("db/copy.ibd", 5, 2);
  Status s = catalog_.Scan(full_, kPs, {}, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("db/copy.ibd"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace xbak::prepare
