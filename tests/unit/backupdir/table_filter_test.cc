#include "xbak/backupdir/table_filter.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace xbak::backupdir {
namespace {

TableFilter Make(TableFilterOptions o) {
  auto f = TableFilter::Make(o);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? std::move(f.value()) : TableFilter();
}

TEST(TableFilter, NoOptionsTakesEverything) {
  TableFilter f = Make({});
  EXPECT_TRUE(f.TakesAll());
  EXPECT_TRUE(f.TakesTable("db", "t"));
  EXPECT_TRUE(f.TakesFile("mysql/user.frm"));
}

TEST(TableFilter, DatabasesWholeAndSomeTables) {
  TableFilterOptions o;
  o.databases = "shop  hr.emp\tlog.t#P#p1";
  TableFilter f = Make(o);
  EXPECT_TRUE(f.TakesTable("shop", "orders"));
  EXPECT_TRUE(f.TakesTable("hr", "emp"));
  EXPECT_FALSE(f.TakesTable("hr", "salary"));
  EXPECT_FALSE(f.TakesTable("mysql", "user"));
  EXPECT_FALSE(f.TakesDatabase("mysql"));
  EXPECT_TRUE(f.TakesDatabase("hr"));
  // A partition named alone: only it.
  EXPECT_TRUE(f.TakesTable("log", "t#P#p1"));
  EXPECT_FALSE(f.TakesTable("log", "t#P#p2"));
  // db.opt goes with its database; .frm with its table.
  EXPECT_TRUE(f.TakesFile("shop/db.opt"));
  EXPECT_FALSE(f.TakesFile("hr/db.opt"));  // hr is not taken whole
  EXPECT_FALSE(f.TakesFile("hr/salary.frm"));
  EXPECT_TRUE(f.TakesFile("hr/emp.frm"));
  EXPECT_FALSE(f.TakesFile("mysql/db.opt"));
  // A trigger goes with its table.
  EXPECT_TRUE(f.TakesFile("hr/on_insert.TRN", "emp"));
  EXPECT_FALSE(f.TakesFile("hr/on_update.TRN", "salary"));
  EXPECT_TRUE(f.TakesSpace("hr/emp"));
  EXPECT_FALSE(f.TakesSpace("hr/salary"));
  EXPECT_TRUE(f.TakesSpace("innodb_system"));  // not a file-per-table name
}

TEST(TableFilter, RegexesMatchAnywhereAndPartitionsAsTheirTable) {
  TableFilterOptions o;
  o.tables = "^sales[.],^hr[.]emp$";
  TableFilter f = Make(o);
  EXPECT_TRUE(f.TakesTable("sales", "q1"));
  EXPECT_TRUE(f.TakesTable("sales", "q1#P#p0"));
  EXPECT_TRUE(f.TakesTable("hr", "emp"));
  EXPECT_TRUE(f.TakesTable("hr", "emp#P#p3"));  // matched without its suffix
  EXPECT_FALSE(f.TakesTable("hr", "emp2"));
  EXPECT_FALSE(f.TakesTable("mysql", "user"));
  EXPECT_TRUE(f.TakesDatabase("mysql"));      // no database list: each table decides
  EXPECT_FALSE(f.TakesFile("sales/db.opt"));  // only named tables: as mariabackup

  TableFilterOptions loose;
  loose.tables = "test.t";  // unanchored, as mariabackup matches
  TableFilter g = Make(loose);
  EXPECT_TRUE(g.TakesTable("mytest", "t1"));
}

TEST(TableFilter, ExcludesWinOverIncludes) {
  TableFilterOptions o;
  o.databases = "shop";
  o.tables_exclude = "^shop[.]tmp_";
  o.databases_exclude = "shop.audit archive";
  TableFilter f = Make(o);
  EXPECT_TRUE(f.TakesTable("shop", "orders"));
  EXPECT_FALSE(f.TakesTable("shop", "tmp_x"));
  EXPECT_FALSE(f.TakesTable("shop", "audit"));
  EXPECT_FALSE(f.TakesDatabase("archive"));

  // Unlike mariabackup, excluding one table alone keeps the rest of its db.
  TableFilterOptions one;
  one.databases_exclude = "shop.audit";
  TableFilter g = Make(one);
  EXPECT_TRUE(g.TakesTable("shop", "orders"));
  EXPECT_FALSE(g.TakesTable("shop", "audit"));
  EXPECT_TRUE(g.TakesTable("other", "t"));
}

TEST(TableFilter, WholeDatabaseIgnoresTableIncludes) {
  TableFilterOptions o;
  o.databases = "shop";
  o.tables = "^hr[.]emp$";
  TableFilter f = Make(o);
  EXPECT_TRUE(f.TakesTable("shop", "anything"));  // shop included whole
  EXPECT_FALSE(f.TakesTable("hr", "emp"));        // hr is not in --databases
}

TEST(TableFilter, FilesAreReadWithLineNumbersInErrors) {
  char path[] = "/tmp/xbak_filter_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  { std::ofstream(path) << "hr.emp\n\nshop.orders\r\n"; }
  TableFilterOptions o;
  o.tables_file = path;
  TableFilter f = Make(o);
  EXPECT_TRUE(f.TakesTable("shop", "orders"));
  EXPECT_TRUE(f.TakesTable("hr", "emp"));
  EXPECT_FALSE(f.TakesTable("hr", "x"));

  { std::ofstream(path) << "hr.emp\nshop\n"; }
  auto bad = TableFilter::Make(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("not a db.table"), std::string::npos);
  std::remove(path);

  TableFilterOptions missing;
  missing.databases_file = "/nonexistent/list";
  auto m = TableFilter::Make(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("--databases-file /nonexistent/list"), std::string::npos);
}

TEST(TableFilter, BadInputIsRefusedByOption) {
  TableFilterOptions re;
  re.tables = "shop.(";
  auto r = TableFilter::Make(re);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--tables"), std::string::npos);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);

  TableFilterOptions slash;
  slash.databases = "../etc";
  auto s = TableFilter::Make(slash);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--databases"), std::string::npos);
}

TEST(TableFilter, SerializeRoundTrips) {
  TableFilterOptions o;
  o.databases = "shop hr.emp";
  o.databases_exclude = "archive shop.audit";
  o.tables = "^x[.]a b,^y";
  o.tables_exclude = "tmp";
  TableFilter f = Make(o);
  auto g = TableFilter::Parse(f.Serialize(), "xbak_table_filter");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->Serialize(), f.Serialize());
  for (auto [db, t] : {std::pair{"shop", "orders"},
                       {"shop", "audit"},
                       {"hr", "emp"},
                       {"hr", "x"},
                       {"x", "a b"},
                       {"y", "tmp1"},
                       {"y", "z"},
                       {"archive", "t"}}) {
    EXPECT_EQ(g->TakesTable(db, t), f.TakesTable(db, t)) << db << "." << t;
  }
  auto bad = TableFilter::Parse("include-table nodot\n", "F");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("F line 1"), std::string::npos);
  EXPECT_FALSE(TableFilter::Parse("frobnicate x\n", "F").ok());
}

}  // namespace
}  // namespace xbak::backupdir
