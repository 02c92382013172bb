// What xbak and xbcloud share on their command lines: secrets blanked in argv
// (what `ps` shows) in every form boost would read them, options-file values
// as arguments, the exit status of a failure.
#include "common.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "cli/argv.h"

namespace xbak::cli {
namespace {

TEST(WipeSecrets, ALiteralFilekeyIsBlankedInEveryForm) {
  Argv a{"xbak",
         "--prepare",
         "--file-key-management-filekey",
         "secret1",
         "--loose-file_key_management_filekey=secret2",
         "--file-key-management-filek=secret3",
         "--file-key-management-filekey=FILE:/keys/pass",
         "--password=secret4",
         "-psecret5",
         "--pas=secret6",
         "-p",
         "secret7"};
  const std::string shown = WipeSecrets(a.argc(), a.argv(), kXbakSecrets);
  for (const char* s : {"secret1", "secret2", "secret3", "secret4", "secret5", "secret6", "secret7"}) {
    EXPECT_EQ(shown.find(s), std::string::npos) << s;
    for (int i = 0; i < a.argc(); i++) EXPECT_EQ(a[i].find(s), std::string::npos) << s;
  }
  EXPECT_EQ(a[7], "--password=xxxxxxx");
  EXPECT_EQ(shown.rfind("--prepare --file-key-management-filekey ... --loose-", 0), 0u) << shown;
  // A FILE: name is no secret, and stays usable.
  EXPECT_EQ(a[6], "--file-key-management-filekey=FILE:/keys/pass");
  EXPECT_NE(shown.find("FILE:/keys/pass"), std::string::npos);
  // The filename option is not mistaken for it.
  Argv b{"xbak", "--file-key-management-filename", "/keys/k.txt", "--file-key-management-filekey", "FILE:/k"};
  EXPECT_EQ(WipeSecrets(b.argc(), b.argv(), kXbakSecrets),
            "--file-key-management-filename /keys/k.txt --file-key-management-filekey FILE:/k");
  EXPECT_EQ(b[2], "/keys/k.txt");
  EXPECT_EQ(b[4], "FILE:/k");
  // Ambiguous (also file-key-management-filename): boost refuses it.
  EXPECT_FALSE(NamesSecret("--file-key-management-file=x", kXbakSecrets[1]));
  EXPECT_TRUE(NamesSecret("--file-key-management-filek", kXbakSecrets[1]));
}

// xbcloud blanked only --s3-...=VALUE; boost also reads "--s3-secret-key
// VALUE" and abbreviations, which stayed in `ps`.
TEST(WipeSecrets, S3CredentialsAreBlankedInEveryForm) {
  Argv a{"xbcloud",
         "put",
         "--s3-secret-key",
         "secret1",
         "--s3-session-token=secret2",
         "--s3-sec=secret3",
         "--s3-ac",
         "secret4",
         "--s3-access-key=secret5",
         "--s3-bucket=b",
         "--s3-region",
         "r",
         "name"};
  const std::string shown = WipeSecrets(a.argc(), a.argv(), kXbcloudSecrets);
  for (const char* s : {"secret1", "secret2", "secret3", "secret4", "secret5"}) {
    EXPECT_EQ(shown.find(s), std::string::npos) << s;
    for (int i = 0; i < a.argc(); i++) EXPECT_EQ(a[i].find(s), std::string::npos) << s;
  }
  EXPECT_EQ(a[3], "xxxxxxx");
  EXPECT_EQ(a[4], "--s3-session-token=xxxxxxx");
  // Everything else as it was.
  EXPECT_EQ(a[9], "--s3-bucket=b");
  EXPECT_EQ(a[11], "r");
  EXPECT_EQ(a[12], "name");
  // s3-se is also s3-session-token: boost refuses it, so it names no secret.
  EXPECT_FALSE(NamesSecret("--s3-se=x", kXbcloudSecrets[1]));
  EXPECT_FALSE(NamesSecret("--s3-se=x", kXbcloudSecrets[2]));
  EXPECT_FALSE(NamesSecret("-s3-secret-key=x", kXbcloudSecrets[1]));
}

TEST(OptionFileArgs, TheListedOptionsAsArguments) {
  auto m = util::ParseOptionText("[xbcloud]\ns3_bucket = b\ninsecure\nparallel = 8\ns3-region=eu\n", "my.cnf",
                                 {"xbcloud"});
  ASSERT_TRUE(m.ok()) << m.status().message();
  constexpr std::string_view kKeys[] = {"s3-bucket", "insecure", "parallel", "fifo-dir"};
  constexpr std::string_view kFlags[] = {"insecure"};
  EXPECT_EQ(OptionFileArgs(*m, kKeys, kFlags),
            (std::vector<std::string>{"--s3-bucket=b", "--insecure", "--parallel=8"}));
  const auto* unknown = UnknownOption(*m, kKeys);
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->first, "s3-region");
  EXPECT_EQ(unknown->second.origin, "my.cnf:5");
  constexpr std::string_view kAll[] = {"s3-bucket", "insecure", "parallel", "s3-region"};
  EXPECT_EQ(UnknownOption(*m, kAll), nullptr);
}

TEST(Fail, ExitsOne) { EXPECT_EQ(Fail(Error(ErrorCode::kIo, "disk gone")), 1); }

}  // namespace
}  // namespace xbak::cli
