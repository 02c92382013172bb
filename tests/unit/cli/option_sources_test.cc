// The option files xbak reads and what it takes from each group, as
// mariabackup does: mtr's generated my.cnf, the suffixed groups, the groups
// that are not xbak's.
#include "option_sources.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "util/temp_dir.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

constexpr std::string_view kClient[] = {"user", "password", "host", "port", "socket"};
constexpr std::string_view kServer[] = {"datadir", "innodb-flush-method"};

po::options_description SourcesDesc() {
  po::options_description d;
  d.add_options()("backup", "")("user", po::value<std::string>(), "")(
      "password", po::value<std::string>(), "")("socket", po::value<std::string>(), "")(
      "port", po::value<unsigned>(), "")("host", po::value<std::string>(), "")(
      "datadir", po::value<std::string>(), "")("innodb-flush-method", po::value<std::string>(), "")(
      "target-dir", po::value<std::string>(), "")("defaults-file", po::value<std::string>(), "")(
      "defaults-extra-file", po::value<std::string>(), "")("defaults-group-suffix", po::value<std::string>(),
                                                           "")("no-defaults", "");
  return d;
}

struct Gathered {
  std::optional<GetoptError> err;
  po::variables_map vm;
};

Gathered Gather(const std::string& cnf_text, std::vector<std::string> args, testing::TempDir* dir) {
  const std::string cnf = *dir / "my.cnf";
  std::ofstream(cnf) << cnf_text;
  args.insert(args.begin(), "--defaults-file=" + cnf);
  static const po::options_description d = SourcesDesc();
  Gathered g;
  GivenOptions given;
  g.err = GatherOptions(d, args, XbakGroups(), kClient, kServer, true, &given);
  if (!g.err) g.err = StoreGiven(d, given, &g.vm);
  return g;
}

std::string Get(const Gathered& g, const char* k) {
  return g.vm.count(k) ? g.vm[k].as<std::string>() : "(unset)";
}

TEST(OptionSources, MtrsMyCnf) {
  testing::TempDir dir;
  auto g = Gather(
      "[mysqld]\nuser=mysql\nperformance-schema\nloose-innodb_data_file_path=ibdata1:12M\n"
      "[mysqld.1]\ndatadir=/var/1/data\nport=19030\n"
      "[client]\nsocket=/tmp/1.sock\nuser=root\npassword=\ncharacter-sets-dir=/x\n"
      "[client.1]\nuser=root1\n"
      "[mariadb-client]\nuser=bla\npassword=bla\n",
      {"--backup"}, &dir);
  ASSERT_FALSE(g.err) << g.err->message;
  EXPECT_EQ(Get(g, "user"), "root");  // not [mysqld]'s (the server's account), not [mariadb-client]'s
  EXPECT_EQ(Get(g, "password"), "");
  EXPECT_EQ(Get(g, "socket"), "/tmp/1.sock");
  EXPECT_EQ(Get(g, "datadir"), "(unset)");  // [mysqld.1] only with the suffix
  EXPECT_EQ(g.vm.count("port"), 0u);        // a server's port is not the client's
}

TEST(OptionSources, GroupSuffixReadsTheTwins) {
  testing::TempDir dir;
  auto g = Gather("[mysqld.2]\ndatadir=/var/2/data\n[client]\nuser=root\n[client.2]\nuser=two\nport=19032\n",
                  {"--defaults-group-suffix=.2", "--backup"}, &dir);
  ASSERT_FALSE(g.err) << g.err->message;
  EXPECT_EQ(Get(g, "datadir"), "/var/2/data");
  EXPECT_EQ(Get(g, "user"), "two");
  EXPECT_EQ(g.vm["port"].as<unsigned>(), 19032u);
}

TEST(OptionSources, OwnGroupsAreStrictAndTheLaterLineWins) {
  testing::TempDir dir;
  auto bad = Gather("[mariabackup]\nunknown-option=XXX\n", {"--backup"}, &dir);
  ASSERT_TRUE(bad.err);
  EXPECT_EQ(static_cast<int>(bad.err->code), 7);
  auto later =
      Gather("[mariadbd]\ninnodb-flush-method=O_DIRECT\n[mariabackup]\ninnodb-flush-method=blablabla\n",
             {"--backup"}, &dir);
  ASSERT_FALSE(later.err);
  EXPECT_EQ(Get(later, "innodb-flush-method"), "blablabla");
  // The command line wins over every file.
  auto cmd = Gather("[xtrabackup]\ntarget-dir=/from-file\n", {"--target-dir=/cmd", "--backup"}, &dir);
  EXPECT_EQ(Get(cmd, "target-dir"), "/cmd");
}

TEST(OptionSources, TheChainOfFiles) {
  auto chain = OptionFileChain(false, "", "", "/home/u");
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].path, "/etc/my.cnf");
  EXPECT_EQ(chain[1].path, "/etc/mysql/my.cnf");
  EXPECT_EQ(chain[2].path, "/home/u/.my.cnf");
  EXPECT_FALSE(chain[2].must_exist);
  auto extra = OptionFileChain(false, "", "/e.cnf", "/home/u");
  ASSERT_EQ(extra.size(), 4u);
  EXPECT_EQ(extra[2].path, "/e.cnf");
  EXPECT_TRUE(extra[2].must_exist);
  auto only = OptionFileChain(false, "/d.cnf", "", "/home/u");
  ASSERT_EQ(only.size(), 1u);
  EXPECT_TRUE(only[0].must_exist);
  EXPECT_TRUE(OptionFileChain(true, "/d.cnf", "", "/home/u").empty());
}

TEST(OptionSources, AMissingDefaultsFileIsAnError) {
  GivenOptions given;
  auto err = GatherOptions(SourcesDesc(), std::vector<std::string>{"--defaults-file=/nonexistent/my.cnf"},
                           XbakGroups(), kClient, kServer, true, &given);
  ASSERT_TRUE(err);
  EXPECT_NE(err->message.find("/nonexistent/my.cnf"), std::string::npos);
}

}  // namespace
}  // namespace xbak::cli
