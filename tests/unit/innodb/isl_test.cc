#include "xbak/innodb/isl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xbak::innodb {
namespace {

TEST(Isl, ParsesWhatTheServerWrites) {
  auto p = ParseIsl("/srv/remote/db1/t1.ibd", "db1/t1.isl");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, "/srv/remote/db1/t1.ibd");
  // Trailing bytes <= 0x20 are dropped, as the server does (a hand-edited file).
  EXPECT_EQ(*ParseIsl("/srv/remote/db1/t1.ibd\n", "x"), "/srv/remote/db1/t1.ibd");
  EXPECT_EQ(*ParseIsl("/srv/remote/db1/t1.ibd \r\n\t", "x"), "/srv/remote/db1/t1.ibd");
  EXPECT_EQ(FormatIsl("/a/db/t.ibd"), "/a/db/t.ibd");
  EXPECT_EQ(*ParseIsl(FormatIsl("/a/db/t.ibd"), "x"), "/a/db/t.ibd");
}

TEST(Isl, RefusesWhatCouldMisleadARestore) {
  const std::vector<std::string> bads = {"",
                                         "\n",
                                         "db/t.ibd",
                                         "./db/t.ibd",
                                         "/t.ibd",
                                         "/srv/db/t.frm",
                                         "/srv/../etc/db/t.ibd",
                                         "/srv/db/..",
                                         std::string("/srv/db/t\0.ibd", 15)};
  for (const std::string& bad : bads) {
    auto p = ParseIsl(bad, "db/t.isl");
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), ErrorCode::kCorrupt);
      EXPECT_NE(p.status().message().find("db/t.isl"), std::string::npos) << p.status().message();
    }
  }
  // ".." only as a whole component.
  EXPECT_TRUE(ParseIsl("/srv/a..b/db/t.ibd", "x").ok());
}

}  // namespace
}  // namespace xbak::innodb
