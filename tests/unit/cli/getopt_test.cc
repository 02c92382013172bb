// my_getopt's grammar over boost's descriptions: what mariabackup's scripts
// and option files write, and the exit codes they test.
#include "getopt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

po::options_description GetoptDesc() {
  po::options_description d;
  d.add_options()("backup", "")("prepare", "")("password,p", po::value<std::string>(), "")(
      "user,u", po::value<std::string>(), "")("target-dir", po::value<std::string>(), "")(
      "parallel", po::value<int>()->default_value(1), "")("history",
                                                          po::value<std::string>()->implicit_value(""), "")(
      "incremental-dir", po::value<std::vector<std::string>>(), "")("extract,x", "")("help", "")(
      "directory,C", po::value<std::string>(), "")("safe-slave-backup", "")("safe-slave-backup-timeout",
                                                                            po::value<unsigned>(), "");
  return d;
}

struct Parsed {
  std::optional<GetoptError> err;
  po::variables_map vm;
  GivenOptions given;
};

Parsed Parse(std::vector<std::string> args, util::OrderedOptions file = {}, bool strict = true) {
  static const po::options_description d = GetoptDesc();
  Parsed p;
  p.err = ReadFileOptions(d, file, strict, true, &p.given);
  if (!p.err) p.err = ReadCommandLine(d, args, &p.given, "mysqld-args");
  if (!p.err) p.err = StoreGiven(d, p.given, &p.vm);
  return p;
}

int Code(const Parsed& p) { return p.err ? static_cast<int>(p.err->code) : 0; }

TEST(Getopt, LongOptionsInEveryForm) {
  auto p = Parse({"--backup", "--target_dir=/x_y", "--user", "root_1", "-pse_cret", "--parallel=4"});
  ASSERT_EQ(Code(p), 0) << p.err->message;
  EXPECT_EQ(p.vm["target-dir"].as<std::string>(), "/x_y");  // values keep their '_'
  EXPECT_EQ(p.vm["user"].as<std::string>(), "root_1");
  EXPECT_EQ(p.vm["password"].as<std::string>(), "se_cret");
  EXPECT_EQ(p.vm["parallel"].as<int>(), 4);
  EXPECT_EQ(p.vm.count("backup"), 1u);
}

TEST(Getopt, EmptyValueIsAValue) {
  // mtr's and many generated option files: "password=" (no password).
  auto p = Parse({"--backup"}, {{"password", "", true, "my.cnf:3", "client"}});
  ASSERT_EQ(Code(p), 0) << p.err->message;
  EXPECT_EQ(p.vm["password"].as<std::string>(), "");
  auto q = Parse({"--password="});
  ASSERT_EQ(Code(q), 0);
  EXPECT_EQ(q.vm["password"].as<std::string>(), "");
}

TEST(Getopt, UnknownOptionsGiveMyGetoptCodes) {
  EXPECT_EQ(Code(Parse({"--backup", "--unknown-option=xxx"})), 7);
  EXPECT_EQ(Code(Parse({"--backup", "--unknown-option"})), 2);
  EXPECT_EQ(Code(Parse({"--backup", "-Z"})), 2);
  EXPECT_EQ(Code(Parse({"--parallel=many"})), 13);
  EXPECT_EQ(Code(Parse({"--target-dir"})), 5);
  EXPECT_EQ(Code(Parse({"--backup=maybe"})), 13);
  // A prefix of one option is that option; of several, ambiguous.
  auto p = Parse({"--targ=/t"});
  ASSERT_EQ(Code(p), 0);
  EXPECT_EQ(p.vm["target-dir"].as<std::string>(), "/t");
  EXPECT_EQ(Code(Parse({"--safe-slave=1"})), 3);
  // A mistyped secret is not echoed.
  auto typo = Parse({"--pasword=s3cret"}, {}, true);
  ASSERT_TRUE(typo.err);
  EXPECT_EQ(typo.err->message.find("s3cret"), std::string::npos) << typo.err->message;
  auto u = Parse({}, {{"unknown-option", "XXX", true, "c.cnf:2", "mariabackup"}});
  EXPECT_EQ(Code(u), 7);
  EXPECT_NE(u.err->message.find("c.cnf:2"), std::string::npos);  // names where it was set
}

TEST(Getopt, LooseUnknownIsAWarningAndOtherGroupsAreSkipped) {
  auto p = Parse({"--loose-no-such-thing=1", "--backup"});
  ASSERT_EQ(Code(p), 0);
  ASSERT_EQ(p.given.warnings.size(), 1u);
  // Not xbak's group ([mysqld]): its options are the server's business.
  EXPECT_EQ(Code(Parse({"--backup"}, {{"performance-schema", "ON", true, "my.cnf:9", "mysqld"}}, false)), 0);
}

TEST(Getopt, SwitchesTakeSkipEnableAndOnOff) {
  EXPECT_EQ(Parse({"--backup", "--skip-backup"}).vm.count("backup"), 0u);
  EXPECT_EQ(Parse({"--backup=OFF"}).vm.count("backup"), 0u);
  EXPECT_EQ(Parse({"--backup=1"}).vm.count("backup"), 1u);
  EXPECT_EQ(Parse({"--disable-backup", "--enable-backup"}).vm.count("backup"), 1u);
  // A file's bare name turns a switch on.
  EXPECT_EQ(Parse({}, {{"safe-slave-backup", "", false, "f:1", "xtrabackup"}}).vm.count("safe-slave-backup"),
            1u);
}

TEST(Getopt, LastValueWinsRepeatableOnesAccumulate) {
  auto p = Parse({"--target-dir=/a", "--incremental-dir=/i1", "--target-dir=/b", "--incremental-dir=/i2"},
                 {{"target-dir", "/from-file", true, "f:1", "xtrabackup"}});
  ASSERT_EQ(Code(p), 0);
  EXPECT_EQ(p.vm["target-dir"].as<std::string>(), "/b");
  EXPECT_EQ(p.vm["incremental-dir"].as<std::vector<std::string>>(), (std::vector<std::string>{"/i1", "/i2"}));
}

TEST(Getopt, TheCommandLineReplacesAFilesRepeatableValues) {
  auto p = Parse({"--incremental-dir=/cmd"}, {{"incremental-dir", "/file", true, "f:1", "xtrabackup"}});
  ASSERT_EQ(Code(p), 0);
  EXPECT_EQ(p.vm["incremental-dir"].as<std::vector<std::string>>(), (std::vector<std::string>{"/cmd"}));
  auto f = Parse({}, {{"incremental-dir", "/f1", true, "f:1", "xtrabackup"},
                      {"incremental-dir", "/f2", true, "f:2", "xtrabackup"}});
  EXPECT_EQ(f.vm["incremental-dir"].as<std::vector<std::string>>(), (std::vector<std::string>{"/f1", "/f2"}));
}

TEST(Getopt, ABareValueOptionInAFileIsIgnoredWithAWarning) {
  // "password" alone, on which the mysql clients prompt.
  auto p = Parse({"--backup"}, {{"password", "", false, "my.cnf:4", "client"}}, false);
  ASSERT_EQ(Code(p), 0);
  EXPECT_EQ(p.vm.count("password"), 0u);
  ASSERT_EQ(p.given.warnings.size(), 1u);
  EXPECT_NE(p.given.warnings[0].find("my.cnf:4"), std::string::npos);
}

TEST(Getopt, OptionalValueAndShortClusters) {
  auto p = Parse({"--history", "--backup"});
  ASSERT_EQ(Code(p), 0);
  EXPECT_EQ(p.vm["history"].as<std::string>(), "");  // --history takes no next argument
  auto x = Parse({"-x", "-C", "/dir"});
  ASSERT_EQ(Code(x), 0);
  EXPECT_EQ(x.vm["directory"].as<std::string>(), "/dir");
  auto c = Parse({"-xC/dir"});
  EXPECT_EQ(c.vm.count("extract"), 1u);
  EXPECT_EQ(c.vm["directory"].as<std::string>(), "/dir");
  EXPECT_EQ(Parse({"-?"}).given.options.at(0).name, "help");
}

TEST(Getopt, MysqldArgsEndsXbaksOptions) {
  auto p = Parse({"--backup", "--mysqld-args", "--unknown-option", "--innodb-foo=1"});
  EXPECT_EQ(Code(p), 0);
  auto q = Parse({"--backup", "--", "dir"});
  ASSERT_EQ(q.given.positional.size(), 1u);
}

}  // namespace
}  // namespace xbak::cli
