#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "stream/stream_test_util.h"
#include "xbak/stream/xbstream.h"

namespace xbak::stream {
namespace {

using testing::EChunk;
using testing::MemFd;
using testing::PChunk;
using testing::TempDir;
using testing::TreeContents;

Status Extract(const std::string& bytes, const std::string& target, bool overwrite = false) {
  util::UniqueFd fd = MemFd(bytes);
  ExtractOptions o;
  o.target_dir = target;
  o.overwrite = overwrite;
  o.fsync = false;
  return ExtractStream(fd.get(), o);
}

TEST(Extractor, ExtractsFilesDirsAndEmptyFiles) {
  TempDir t;
  std::string big = testing::Pattern(5 << 20, 3);
  std::string s = PChunk("db/t.ibd", big.substr(0, 1 << 20), 0) + PChunk("ibdata1", "abc", 0) +
                  PChunk("db/t.ibd", big.substr(1 << 20), 1 << 20) + EChunk("ibdata1") + EChunk("db/t.ibd") +
                  EChunk("db/empty.frm") + PChunk("./a/b/c", "x", 0) + EChunk("a/b/c");
  Status st = Extract(s, t / "out");
  ASSERT_TRUE(st.ok()) << st.message();
  auto tree = TreeContents(t / "out");
  std::map<std::string, std::string> want{
      {"db/t.ibd", big}, {"ibdata1", "abc"}, {"db/empty.frm", ""}, {"a/b/c", "x"}};
  EXPECT_EQ(tree, want);
}

TEST(Extractor, MissingEofIsAnErrorAndTheFileStaysPartial) {
  TempDir t;
  std::string s =
      PChunk("done", "1", 0) + EChunk("done") + PChunk("db/half.ibd", "abc", 0) + PChunk("z", "q", 0);
  Status st = Extract(s, t.path());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
  EXPECT_NE(st.message().find("EOF chunk of 2 file(s): db/half.ibd, z"), std::string::npos) << st.message();
  auto tree = TreeContents(t.path());
  std::map<std::string, std::string> want{
      {"done", "1"}, {"db/half.ibd.xbpartial", "abc"}, {"z.xbpartial", "q"}};
  EXPECT_EQ(tree, want);
}

TEST(Extractor, CorruptStreamFailsAndLeavesOnlyPartials) {
  TempDir t;
  std::string c = PChunk("f", "hello", 5);
  std::string s = PChunk("f", "01234", 0) + c.substr(0, c.size() - 1);
  Status st = Extract(s, t.path());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("truncated payload"), std::string::npos) << st.message();
  EXPECT_FALSE(util::PathExists(t / "f"));
  EXPECT_TRUE(util::PathExists(t / "f.xbpartial"));
}

TEST(Extractor, OutOfOrderAndDuplicateChunksAreErrors) {
  {
    TempDir t;
    Status st = Extract(PChunk("f", "ab", 0) + PChunk("f", "cd", 5) + EChunk("f"), t.path());
    EXPECT_NE(st.message().find("out-of-order chunk at offset 5, expected 2"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("(file f)"), std::string::npos) << st.message();
  }
  {
    TempDir t;
    // mbstream exits 0 here; a repeated file means a broken producer.
    Status st = Extract(PChunk("f", "ab", 0) + EChunk("f") + PChunk("f", "cd", 2) + EChunk("f"), t.path());
    EXPECT_NE(st.message().find("chunk after the file's EOF chunk"), std::string::npos) << st.message();
  }
}

TEST(Extractor, IgnorableUnknownChunksAreSkipped) {
  TempDir t;
  std::string odd = PChunk("f", "zz", 2);
  odd[8] = kXbstreamFlagIgnorable;
  odd[9] = 'Z';
  ASSERT_TRUE(Extract(PChunk("f", "ab", 0) + odd + EChunk("f"), t.path()).ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "f"), "ab");
}

TEST(Extractor, RefusesToOverwriteUnlessAsked) {
  TempDir t;
  testing::WriteFile(t / "db/f", "old");
  std::string s = PChunk("db/f", "new", 0) + EChunk("db/f");
  Status st = Extract(s, t.path());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "db/f"), "old");
  ASSERT_TRUE(Extract(s, t.path(), /*overwrite=*/true).ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "db/f"), "new");
  EXPECT_FALSE(util::PathExists(t / "db/f.xbpartial"));
}

// Every malicious stream must fail and leave `outside` untouched.
class MaliciousPath : public ::testing::TestWithParam<std::string> {};

TEST_P(MaliciousPath, WritesNothingOutsideTheTarget) {
  TempDir t;
  ASSERT_EQ(::mkdir((t / "target").c_str(), 0750), 0);
  ASSERT_EQ(::mkdir((t / "outside").c_str(), 0750), 0);
  std::string p = GetParam();
  // Paths are relative to target/, so "../outside/x" aims at the sibling.
  Status st = Extract(PChunk(p, "pwned", 0) + EChunk(p), t / "target");
  EXPECT_FALSE(st.ok()) << "accepted " << p;
  EXPECT_TRUE(TreeContents(t / "outside").empty());
  EXPECT_TRUE(TreeContents(t / "target").empty());
}

INSTANTIATE_TEST_SUITE_P(Paths, MaliciousPath,
                         ::testing::Values("../x", "../outside/x", "a/../../outside/x", "a/../x",
                                           "/tmp/xbak_evil_abs", "a//b", "",
                                           std::string("ok\0/../../outside/x", 19), "x.xbpartial"));

TEST(Extractor, AbsolutePathDoesNotEscape) {
  TempDir t;
  std::string abs = t / "outside_abs";
  Status st = Extract(PChunk(abs, "pwned", 0) + EChunk(abs), t / "target");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("absolute path"), std::string::npos) << st.message();
  EXPECT_FALSE(util::PathExists(abs));
}

TEST(Extractor, NeverFollowsSymlinksPlantedInTheTarget) {
  TempDir t;
  ASSERT_EQ(::mkdir((t / "target").c_str(), 0750), 0);
  ASSERT_EQ(::mkdir((t / "outside").c_str(), 0750), 0);
  testing::WriteFile(t / "outside/victim", "precious");
  // A directory symlink, a file symlink, and a symlink at the partial name.
  ASSERT_EQ(::symlink((t / "outside").c_str(), (t / "target/db").c_str()), 0);
  ASSERT_EQ(::symlink((t / "outside/victim").c_str(), (t / "target/f").c_str()), 0);
  ASSERT_EQ(::symlink((t / "outside/victim").c_str(), (t / "target/g.xbpartial").c_str()), 0);
  for (bool overwrite : {false, true}) {
    for (std::string p : {"db/victim", "db/new", "f", "g"}) {
      Status st = Extract(PChunk(p, "pwned", 0) + EChunk(p), t / "target", overwrite);
      if (p == "f" && overwrite) {
        // Replacing the link itself is what overwrite means; the target of
        // the link is still untouched (checked below).
        EXPECT_TRUE(st.ok()) << st.message();
        struct stat lst {};
        ASSERT_EQ(::lstat((t / "target/f").c_str(), &lst), 0);
        EXPECT_TRUE(S_ISREG(lst.st_mode));
        continue;
      }
      EXPECT_FALSE(st.ok()) << p << " overwrite=" << overwrite;
    }
  }
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "outside/victim"), "precious");
  std::map<std::string, std::string> want{{"victim", "precious"}};
  EXPECT_EQ(TreeContents(t / "outside"), want);
}

TEST(Extractor, ManyStreamsIntoOneTarget) {
  TempDir t;
  constexpr int kStreams = 4;
  std::vector<std::string> streams(kStreams);
  std::map<std::string, std::string> want;
  for (int f = 0; f < 40; ++f) {
    std::string path = "db" + std::to_string(f % 3) + "/t" + std::to_string(f) + ".ibd";
    std::string data = testing::Pattern(static_cast<size_t>(f) * 10007, f);
    want[path] = data;
    std::string& s = streams[f % kStreams];
    for (size_t off = 0; off < data.size(); off += 65536) s += PChunk(path, data.substr(off, 65536), off);
    s += EChunk(path);
  }
  // Feed through pipes so the readers really run concurrently.
  std::vector<util::UniqueFd> rd;
  std::vector<int> fds;
  std::vector<std::thread> writers;
  for (int i = 0; i < kStreams; ++i) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    rd.emplace_back(p[0]);
    fds.push_back(p[0]);
    writers.emplace_back([w = p[1], &s = streams[i]] {
      for (size_t i = 0; i < s.size();) {
        ssize_t n = ::write(w, s.data() + i, s.size() - i);
        if (n <= 0) break;
        i += static_cast<size_t>(n);
      }
      ::close(w);
    });
  }
  ExtractOptions o;
  o.target_dir = t / "out";
  Status st = ExtractStreams(fds, o);
  for (auto& w : writers) w.join();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "out"), want);
}

// A held file (the checkpoints) is renamed into place only once every
// stream ended whole: the stream that carries it ends first here, the other is
// cut in the middle of a file, and the held file stays partial.
TEST(Extractor, AHeldFileAppearsOnlyWhenEveryStreamEndedWhole) {
  TempDir t;
  const std::string cp =
      PChunk("mariadb_backup_checkpoints", "to_lsn = 9\n", 0) + EChunk("mariadb_backup_checkpoints");
  ExtractOptions o;
  o.fsync = false;
  o.hold_to_end = [](std::string_view rel) { return rel == "mariadb_backup_checkpoints"; };
  {
    util::UniqueFd a = MemFd(PChunk("db/a.ibd", "aa", 0) + EChunk("db/a.ibd") + cp);
    util::UniqueFd b = MemFd(PChunk("db/b.ibd", "bb", 0));  // cut: no EOF chunk
    o.target_dir = t / "cut";
    ASSERT_FALSE(ExtractStreams({a.get(), b.get()}, o).ok());
    std::map<std::string, std::string> want{{"db/a.ibd", "aa"},
                                            {"db/b.ibd.xbpartial", "bb"},
                                            {"mariadb_backup_checkpoints.xbpartial", "to_lsn = 9\n"}};
    EXPECT_EQ(TreeContents(t / "cut"), want);
  }
  util::UniqueFd a = MemFd(PChunk("db/a.ibd", "aa", 0) + EChunk("db/a.ibd") + cp);
  util::UniqueFd b = MemFd(PChunk("db/b.ibd", "bb", 0) + EChunk("db/b.ibd"));
  o.target_dir = t / "whole";
  Status st = ExtractStreams({a.get(), b.get()}, o);
  ASSERT_TRUE(st.ok()) << st.message();
  std::map<std::string, std::string> want{
      {"db/a.ibd", "aa"}, {"db/b.ibd", "bb"}, {"mariadb_backup_checkpoints", "to_lsn = 9\n"}};
  EXPECT_EQ(TreeContents(t / "whole"), want);
}

TEST(Extractor, OneBadStreamStopsTheOthers) {
  TempDir t;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd silent_rd(p[0]), silent_wr(p[1]);  // never written, never closed
  util::UniqueFd bad = MemFd(PChunk("a", "x", 0) + "XBSTCK0");
  ExtractOptions o;
  o.target_dir = t.path();
  Status st = ExtractStreams({silent_rd.get(), bad.get()}, o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
  EXPECT_NE(st.message().find("xbstream #2 at byte 36: truncated chunk header"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace xbak::stream
