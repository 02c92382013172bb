// Keys: from a file only when others may not read it, of the right size, a
// trailing newline dropped, named by id and never shown.
#include "xbak/crypt/key.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "util/temp_dir.h"

namespace xbak::crypt {
namespace {

std::string Write(const xbak::testing::TempDir& d, const std::string& name, const std::string& content,
                  mode_t mode) {
  const std::string p = d / name;
  std::ofstream(p, std::ios::binary) << content;
  EXPECT_EQ(::chmod(p.c_str(), mode), 0);
  return p;
}

const std::string kKey32 = "0123456789abcdefghijklmnopqrstuv";

TEST(KeyTest, AKeyFileOfThirtyTwoBytesWithOrWithoutNewline) {
  xbak::testing::TempDir d;
  auto a = LoadKeyFile(Write(d, "a", kKey32, 0600));
  auto b = LoadKeyFile(Write(d, "b", kKey32 + "\n", 0400));
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*a)->data()), kKeyBytes), kKey32);
  EXPECT_EQ((*a)->id(), (*b)->id());
  EXPECT_EQ(KeyIdHex((*a)->id()).size(), 16u);
  auto other = Key::FromBytes("1123456789abcdefghijklmnopqrstuv", "other");
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->id(), (*a)->id());
}

TEST(KeyTest, AKeyFileOthersMayReadIsRefused) {
  xbak::testing::TempDir d;
  for (mode_t m : {0644, 0640, 0604, 0660}) {
    const std::string p = Write(d, "k" + std::to_string(m), kKey32, m);
    auto k = LoadKeyFile(p);
    ASSERT_FALSE(k.ok()) << m;
    EXPECT_NE(k.status().message().find(p + ": the key file may be read or written by others"),
              std::string::npos)
        << k.status().message();
    EXPECT_NE(k.status().message().find("chmod 600 " + p), std::string::npos);
    EXPECT_EQ(k.status().message().find(kKey32), std::string::npos) << "the key must never be shown";
  }
}

TEST(KeyTest, AKeyOfAnotherSizeIsRefusedWithoutShowingIt) {
  xbak::testing::TempDir d;
  for (const std::string& content :
       {std::string("short"), kKey32 + "x", kKey32 + "\n\n", std::string(200, 'k')}) {
    auto k = LoadKeyFile(Write(d, "k", content, 0600));
    ASSERT_FALSE(k.ok()) << content.size();
    EXPECT_EQ(k.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(k.status().message().find(content.substr(0, 5)), std::string::npos) << k.status().message();
    ::unlink((d / "k").c_str());
  }
  auto missing = LoadKeyFile(d / "none");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(d / "none"), std::string::npos);
}

TEST(KeyTest, TheEnvironmentVariableIsAnotherSource) {
  ::unsetenv("XBAK_TEST_KEY");
  auto none = KeyFromEnvironment("XBAK_TEST_KEY");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  ::setenv("XBAK_TEST_KEY", kKey32.c_str(), 1);
  auto k = KeyFromEnvironment("XBAK_TEST_KEY");
  ASSERT_TRUE(k.ok());
  ASSERT_NE(*k, nullptr);
  EXPECT_EQ((*k)->origin(), "environment variable XBAK_TEST_KEY");
  ::setenv("XBAK_TEST_KEY", "too short", 1);
  auto bad = KeyFromEnvironment("XBAK_TEST_KEY");
  EXPECT_FALSE(bad.ok());
  ::unsetenv("XBAK_TEST_KEY");
}

}  // namespace
}  // namespace xbak::crypt
