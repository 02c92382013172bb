// The directory sink: a file takes its name only when closed, the target
// must start empty, and nothing that exists is overwritten.
#include <gtest/gtest.h>

#include <filesystem>

#include "stream/stream_test_util.h"
#include "xbak/sink/sink.h"

namespace xbak::sink {
namespace {

using testing::ReadFileOrEmpty;
using testing::TempDir;

TEST(DirectorySink, AFileHasItsNameOnlyOnceClosed) {
  TempDir t;
  auto sink = MakeDirectorySink(t / "b");
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  auto f = (*sink)->Create("db/t.ibd");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_TRUE((*f)->Write("abc", 3).ok());
  // Unfinished (what a killed backup leaves): only under the partial name.
  EXPECT_FALSE(std::filesystem::exists(t / "b/db/t.ibd"));
  EXPECT_TRUE(std::filesystem::exists(t / "b/db/t.ibd.xbpartial"));
  ASSERT_TRUE((*f)->Write("def", 3).ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(ReadFileOrEmpty(t / "b/db/t.ibd"), "abcdef");
  EXPECT_FALSE(std::filesystem::exists(t / "b/db/t.ibd.xbpartial"));
  ASSERT_TRUE((*sink)->Flush().ok());
}

TEST(DirectorySink, AFileNeverClosedKeepsItsPartialName) {
  TempDir t;
  {
    auto sink = MakeDirectorySink(t / "b");
    ASSERT_TRUE(sink.ok());
    auto f = (*sink)->Create("xtrabackup_checkpoints");
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write("backup_type = full", 18).ok());
  }  // the backup failed before closing it
  EXPECT_FALSE(std::filesystem::exists(t / "b/xtrabackup_checkpoints"));
  EXPECT_TRUE(std::filesystem::exists(t / "b/xtrabackup_checkpoints.xbpartial"));
}

TEST(DirectorySink, NeverOverwrites) {
  TempDir t;
  auto sink = MakeDirectorySink(t / "b");
  ASSERT_TRUE(sink.ok());
  auto f = (*sink)->Create("a");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Write("mine", 4).ok());
  // Someone else creates the name meanwhile: it stays theirs.
  testing::WriteFile(t / "b/a", "theirs");
  Status s = (*f)->Close();
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists) << s.message();
  EXPECT_NE(s.message().find(t / "b/a"), std::string::npos) << s.message();
  EXPECT_EQ(ReadFileOrEmpty(t / "b/a"), "theirs");
  // A name created twice is refused at once.
  auto g = (*sink)->Create("c");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*sink)->Create("c").status().code(), ErrorCode::kAlreadyExists);
  // And a target that is not empty is refused.
  EXPECT_EQ(MakeDirectorySink(t / "b").status().code(), ErrorCode::kAlreadyExists);
}

TEST(DirectorySink, RefusesUnsafePaths) {
  TempDir t;
  auto sink = MakeDirectorySink(t / "b");
  ASSERT_TRUE(sink.ok());
  for (const char* p : {"", "/etc/x", "../x", "a/../../x"}) {
    EXPECT_EQ((*sink)->Create(p).status().code(), ErrorCode::kInvalidArgument) << p;
  }
}

}  // namespace
}  // namespace xbak::sink
