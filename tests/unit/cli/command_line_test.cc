// xbak's command line before boost reads it: option names spelled with '_'.
#include "command_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/argv.h"
#include "common.h"

namespace xbak::cli {
namespace {

TEST(CommandLine, OptionNamesWithUnderscoresReadAsDashes) {
  Argv a{"xbak", "--loose-file_key_management_filename=/a_b/keys_1.txt", "--target_dir=/x_y", "-u", "root_1"};
  auto n = NormalizedArgs(a.argc(), a.argv());
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0], "--loose-file-key-management-filename=/a_b/keys_1.txt");  // values keep their '_'
  EXPECT_EQ(n[1], "--target-dir=/x_y");
  EXPECT_EQ(n[3], "root_1");
  EXPECT_EQ(OptionName("--loose-file_key_management_filekey=s"), "file-key-management-filekey");
}

}  // namespace
}  // namespace xbak::cli
