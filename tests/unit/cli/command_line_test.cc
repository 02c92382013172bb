// The command line's helpers: option names spelled with '_', and secrets
// blanked in argv (what `ps` shows) in every form boost would read them.
#include "command_line.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace xbak::cli {
namespace {

// A writable argv, as main() gets it.
class Argv {
 public:
  Argv(std::initializer_list<const char*> args) {
    for (const char* a : args) store_.emplace_back(a, a + std::strlen(a) + 1);
    for (auto& s : store_) ptrs_.push_back(s.data());
  }
  int argc() const { return static_cast<int>(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }
  std::string operator[](size_t i) const { return ptrs_[i]; }

 private:
  std::vector<std::vector<char>> store_;
  std::vector<char*> ptrs_;
};

TEST(CommandLine, OptionNamesWithUnderscoresReadAsDashes) {
  Argv a{"xbak", "--loose-file_key_management_filename=/a_b/keys_1.txt", "--target_dir=/x_y", "-u", "root_1"};
  auto n = NormalizedArgs(a.argc(), a.argv());
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0], "--loose-file-key-management-filename=/a_b/keys_1.txt");  // values keep their '_'
  EXPECT_EQ(n[1], "--target-dir=/x_y");
  EXPECT_EQ(n[3], "root_1");
  EXPECT_EQ(OptionName("--loose-file_key_management_filekey=s"), "file-key-management-filekey");
}

TEST(CommandLine, ALiteralFilekeyIsBlankedInEveryForm) {
  Argv a{"xbak",
         "--prepare",
         "--file-key-management-filekey",
         "secret1",
         "--loose-file_key_management_filekey=secret2",
         "--file-key-management-filek=secret3",
         "--file-key-management-filekey=FILE:/keys/pass",
         "--password=secret4",
         "-psecret5"};
  const std::string shown = MaskPassword(a.argc(), a.argv());
  for (const char* s : {"secret1", "secret2", "secret3", "secret4", "secret5"}) {
    EXPECT_EQ(shown.find(s), std::string::npos) << s;
    for (int i = 0; i < a.argc(); i++) EXPECT_EQ(a[i].find(s), std::string::npos) << s;
  }
  // A FILE: name is no secret, and stays usable.
  EXPECT_EQ(a[6], "--file-key-management-filekey=FILE:/keys/pass");
  EXPECT_NE(shown.find("FILE:/keys/pass"), std::string::npos);
  // The filename option is not mistaken for it.
  Argv b{"xbak", "--file-key-management-filename", "/keys/k.txt"};
  MaskPassword(b.argc(), b.argv());
  EXPECT_EQ(b[2], "/keys/k.txt");
  EXPECT_FALSE(IsFilekeyOption("--file-key-management-file=x"));  // ambiguous: boost refuses it
}

}  // namespace
}  // namespace xbak::cli
