// mariabackup's options that xbak takes without acting on them: their values
// are still checked as the server checks them, with mariabackup's exit codes.
#include "compat_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

std::optional<CompatError> Check(std::vector<std::string> args) {
  po::options_description d;
  DescribeCompatOptions(&d);
  GivenOptions given;
  po::variables_map vm;
  EXPECT_FALSE(ReadCommandLine(d, args, &given));
  EXPECT_FALSE(StoreGiven(d, given, &vm));
  return CheckCompatOptions(vm);
}

TEST(CompatOptions, ServerSettingsAreCheckedAsTheServerDoes) {
  EXPECT_FALSE(Check({"--innodb-flush-method=O_DIRECT"}));
  EXPECT_FALSE(Check({"--innodb_flush_method=fsync"}));
  auto bad = Check({"--innodb-flush-method=blablabla"});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->exit_code, 13);
  EXPECT_NE(bad->message.find("blablabla"), std::string::npos);
  EXPECT_FALSE(Check({"--innodb-log-write-ahead-size=4096"}));
  EXPECT_FALSE(Check({"--innodb-log-write-ahead-size=10000"}));  // clamped by the server, not refused
  auto ws = Check({"--innodb-log-write-ahead-size=4095"});
  ASSERT_TRUE(ws);
  EXPECT_EQ(ws->exit_code, 1);
  EXPECT_EQ(Check({"--innodb-log-write-ahead-size=lots"})->exit_code, 13);
}

TEST(CompatOptions, TheNoEffectOnesAreTaken) {
  EXPECT_FALSE(Check({"--lock-ddl-per-table", "--ftwrl-wait-threshold=60", "--close-files", "--verbose",
                      "--core-file", "--no-timestamp", "--innodb-page-size=16384"}));
}

}  // namespace
}  // namespace xbak::cli
