// Compressed backups: round trips through the compressing sink and
// DecompressBackup, byte compatibility with the zstd and lz4 command-line
// tools (skipped where they are not installed), and damaged inputs.
#include "xbak/sink/compress.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "stream/stream_test_util.h"
#include "util/shell.h"
#include "xbak/sink/decompress.h"
#include "xbak/sink/xbstream_sink.h"
#include "xbak/stream/xbstream.h"

namespace xbak::sink {
namespace {

using testing::TempDir;
using testing::TreeContents;
using Algo = CompressOptions::Algo;

using testing::Shell;
bool HaveTool(const char* name) { return Shell(std::string("command -v ") + name + " >/dev/null 2>&1") == 0; }
const char* Tool(Algo a) { return a == CompressOptions::kZstd ? "zstd" : "lz4"; }
std::string Sfx(Algo a) { return std::string(CompressSuffix(a)); }

std::map<std::string, std::string> CompressSamples() {
  std::string mixed = testing::Pattern(1 << 20, 5) + std::string(3 << 20, '\0') + testing::Pattern(333333, 6);
  return {
      {"ibdata1", mixed},                                  // several frames, compressible
      {"db/t1.ibd", testing::Pattern(65536 * 5 + 17, 2)},  // incompressible: stored blocks in lz4
      {"db/t1.frm", "CREATE TABLE t1 (a INT)"},
      {"db/empty.MYD", ""},
      {"xtrabackup_checkpoints", "backup_type = full-backuped\n"},
  };
}

// Writes `files` through a compressing sink into a directory, in odd-sized
// writes from two threads at once.
void WriteCompressed(const std::string& root, const std::map<std::string, std::string>& files,
                     CompressOptions o) {
  auto dir = MakeDirectorySink(root);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  auto sink = MakeCompressingSink(std::move(dir).value(), o);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  std::vector<std::pair<std::string, std::string>> list(files.begin(), files.end());
  std::vector<std::thread> threads;
  for (int th = 0; th < 2; ++th) {
    threads.emplace_back([&, th] {
      for (size_t i = th; i < list.size(); i += 2) {
        auto f = (*sink)->Create(list[i].first);
        ASSERT_TRUE(f.ok()) << f.status().message();
        const std::string& data = list[i].second;
        for (size_t off = 0; off < data.size(); off += 300007) {
          size_t n = std::min<size_t>(300007, data.size() - off);
          ASSERT_TRUE((*f)->Write(data.data() + off, n).ok());
        }
        ASSERT_TRUE((*f)->Close().ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE((*sink)->Flush().ok());
  EXPECT_NE((*sink)->Describe().find(Tool(o.algo) + std::string("-compressed")), std::string::npos);
}

// Number after "at byte " in a message, or -1.
long long ByteOffsetIn(const std::string& msg) {
  auto p = msg.find("at byte ");
  if (p == std::string::npos) return -1;
  return std::atoll(msg.c_str() + p + 8);
}

class CompressTest : public ::testing::TestWithParam<std::tuple<Algo, int>> {
 protected:
  Algo algo() const { return std::get<0>(GetParam()); }
  CompressOptions Options() const {
    CompressOptions o;
    o.algo = algo();
    o.threads = std::get<1>(GetParam());
    return o;
  }
};

TEST_P(CompressTest, RoundTripThroughDecompressBackup) {
  TempDir t;
  const auto files = CompressSamples();
  WriteCompressed(t / "b", files, Options());
  auto stored = TreeContents(t / "b");
  ASSERT_EQ(stored.size(), files.size());
  for (const auto& [name, data] : files) {
    ASSERT_EQ(stored.count(name + Sfx(algo())), 1u) << name;
    if (data.size() > 100000) {
      EXPECT_LT(stored[name + Sfx(algo())].size(), data.size() + 1000) << name;
    }
  }
  EXPECT_LT(stored["ibdata1" + Sfx(algo())].size(), files.at("ibdata1").size() / 2);

  DecompressOptions d;
  d.target_dir = t / "b";
  d.parallel = 3;
  Status st = DecompressBackup(d);
  ASSERT_TRUE(st.ok()) << st.message();
  auto after = TreeContents(t / "b");
  for (const auto& [name, data] : files) {
    EXPECT_EQ(after[name], data) << name;
    EXPECT_EQ(after.count(name + Sfx(algo())), 1u) << "original kept: " << name;
  }
  EXPECT_EQ(after.size(), 2 * files.size());  // no *.xbpartial left behind
}

TEST_P(CompressTest, RemoveOriginalLeavesOnlyTheDecompressedFiles) {
  TempDir t;
  const auto files = CompressSamples();
  WriteCompressed(t / "b", files, Options());
  DecompressOptions d;
  d.target_dir = t / "b";
  d.remove_original = true;
  Status st = DecompressBackup(d);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "b"), files);
}

// A tablespace's empty pages come back as holes, as in a backup written to a
// directory: decompressing takes no more disk than the backup did.
TEST_P(CompressTest, DecompressedZeroPagesAreHoles) {
  TempDir t;
  // Zeros inside and at the end (the size given by a truncate, not a write).
  const std::string data =
      testing::Pattern(1 << 20, 3) + std::string(8 << 20, '\0') + "tail" + std::string(4 << 20, '\0');
  WriteCompressed(t / "b", {{"z.ibd", data}}, Options());
  DecompressOptions d;
  d.target_dir = t / "b";
  Status st = DecompressBackup(d);
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string out = t / "b/z.ibd";
  EXPECT_EQ(testing::ReadFileOrEmpty(out), data);
  struct stat sb {};
  ASSERT_EQ(::stat(out.c_str(), &sb), 0);
  EXPECT_LT(static_cast<uint64_t>(sb.st_blocks) * 512, uint64_t{2} << 20);
}

TEST_P(CompressTest, CommandLineToolDecompressesOurFiles) {
  if (!HaveTool(Tool(algo()))) GTEST_SKIP() << Tool(algo()) << " not installed";
  TempDir t;
  const auto files = CompressSamples();
  WriteCompressed(t / "b", files, Options());
  for (const auto& [name, data] : files) {
    const std::string in = t / ("b/" + name + Sfx(algo()));
    const std::string out = t / ("plain_" + std::to_string(std::hash<std::string>()(name)));
    ASSERT_EQ(Shell(std::string(Tool(algo())) + " -d -q -c '" + in + "' > '" + out + "'"), 0) << name;
    EXPECT_EQ(testing::ReadFileOrEmpty(out), data) << name;
  }
}

TEST_P(CompressTest, WeDecompressTheCommandLineToolsFiles) {
  if (!HaveTool(Tool(algo()))) GTEST_SKIP() << Tool(algo()) << " not installed";
  TempDir t;
  std::map<std::string, std::string> files = {
      {"a.ibd", testing::Pattern(5 << 20, 1) + std::string(2 << 20, 'x')},
      {"sub/b.frm", "tiny"},
      {"sub/empty", ""},
  };
  for (const auto& [name, data] : files) testing::WriteFile(t / ("b/" + name), data);
  // The tools' own defaults (zstd: one frame, no content size when piped;
  // lz4: 4 MiB blocks, no content size), plus a second frame appended.
  for (const auto& [name, data] : files) {
    const std::string p = t / ("b/" + name);
    std::string flags = algo() == CompressOptions::kZstd ? " -q -3 -c " : " -q -c ";
    ASSERT_EQ(Shell(std::string("cat '") + p + "' | " + Tool(algo()) + flags + "> '" + p + Sfx(algo()) + "'"),
              0);
    ASSERT_EQ(Shell(std::string("printf tail | ") + Tool(algo()) + flags + ">> '" + p + Sfx(algo()) + "'"),
              0);
    std::filesystem::remove(p);
  }
  DecompressOptions d;
  d.target_dir = t / "b";
  d.parallel = 2;
  d.remove_original = true;
  Status st = DecompressBackup(d);
  ASSERT_TRUE(st.ok()) << st.message();
  auto tree = TreeContents(t / "b");
  ASSERT_EQ(tree.size(), files.size());
  for (const auto& [name, data] : files) EXPECT_EQ(tree[name], data + "tail") << name;
}

TEST_P(CompressTest, CorruptFileNamesFileAndFrameAndLeavesNoOutput) {
  TempDir t;
  const std::string data =
      testing::Pattern(1 << 20, 3) + std::string(3 << 20, 'z') + testing::Pattern(1 << 20, 4);
  WriteCompressed(t / "b", {{"t.ibd", data}}, Options());
  const std::string in = t / ("b/t.ibd" + Sfx(algo()));
  std::string bytes = testing::ReadFileOrEmpty(in);
  ASSERT_GT(bytes.size(), 200000u);
  // Damage the last frame (the incompressible tail), past its header.
  const size_t flip = bytes.size() - 1000;
  bytes[flip] = static_cast<char>(bytes[flip] ^ 0x5a);
  std::filesystem::remove(in);
  testing::WriteFile(in, bytes);

  DecompressOptions d;
  d.target_dir = t / "b";
  Status st = DecompressBackup(d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
  EXPECT_NE(st.message().find(in), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("corrupt " + std::string(Tool(algo())) + " data"), std::string::npos)
      << st.message();
  long long at = ByteOffsetIn(st.message());
  EXPECT_GT(at, 0) << "the damage is in a later frame: " << st.message();
  EXPECT_LE(at, static_cast<long long>(flip)) << st.message();
  EXPECT_FALSE(util::PathExists(t / "b/t.ibd"));
  EXPECT_FALSE(util::PathExists(t / ("b/t.ibd" + std::string(stream::kXbstreamPartialSuffix))));
  EXPECT_TRUE(util::PathExists(in));
}

TEST_P(CompressTest, TruncatedAndEmptyFilesAreErrors) {
  TempDir t;
  const std::string data = testing::Pattern(3 << 20, 9);
  WriteCompressed(t / "b", {{"t.ibd", data}}, Options());
  const std::string in = t / ("b/t.ibd" + Sfx(algo()));
  std::string bytes = testing::ReadFileOrEmpty(in);
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t{3}, size_t{0}}) {
    SCOPED_TRACE(keep);
    std::filesystem::remove(in);
    testing::WriteFile(in, bytes.substr(0, keep));
    DecompressOptions d;
    d.target_dir = t / "b";
    Status st = DecompressBackup(d);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), ErrorCode::kCorrupt);
    EXPECT_NE(st.message().find(in), std::string::npos) << st.message();
    if (keep > 3) {
      EXPECT_NE(st.message().find("truncated " + std::string(Tool(algo())) + " data"), std::string::npos)
          << st.message();
      EXPECT_NE(st.message().find("ends at byte " + std::to_string(keep)), std::string::npos) << st.message();
    }
    EXPECT_FALSE(util::PathExists(t / "b/t.ibd"));
    EXPECT_FALSE(util::PathExists(t / ("b/t.ibd" + std::string(stream::kXbstreamPartialSuffix))));
  }
}

TEST_P(CompressTest, ThroughAnXbstreamAndBack) {
  // The streaming case: compress into an xbstream, extract, decompress.
  TempDir t;
  const auto files = CompressSamples();
  util::UniqueFd out = testing::MemFd("");
  {
    auto xb = MakeXbstreamSink(out.get());
    ASSERT_TRUE(xb.ok());
    auto sink = MakeCompressingSink(std::move(xb).value(), Options());
    ASSERT_TRUE(sink.ok());
    for (const auto& [name, data] : files) {
      auto f = (*sink)->Create(name);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*f)->Write(data.data(), data.size()).ok());
      ASSERT_TRUE((*f)->Close().ok());
    }
    ASSERT_TRUE((*sink)->Flush().ok());
  }
  ::lseek(out.get(), 0, SEEK_SET);
  stream::ExtractOptions x;
  x.target_dir = t / "x";
  x.fsync = false;
  ASSERT_TRUE(stream::ExtractStream(out.get(), x).ok());
  EXPECT_EQ(TreeContents(t / "x").size(), files.size());
  DecompressOptions d;
  d.target_dir = t / "x";
  d.remove_original = true;
  Status st = DecompressBackup(d);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "x"), files);
}

TEST_P(CompressTest, DecompressorTakesInputOneByteAtATime) {
  TempDir t;
  const std::string data = testing::Pattern(200000, 1) + std::string(1500000, 'q');
  WriteCompressed(t / "b", {{"f", data}}, Options());
  const std::string bytes = testing::ReadFileOrEmpty(t / ("b/f" + Sfx(algo())));
  auto dec = Decompressor::Create(algo(), "f");
  ASSERT_TRUE(dec.ok());
  std::string got;
  auto sink = [&got](const uint8_t* p, size_t n) {
    got.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  };
  for (char c : bytes) ASSERT_TRUE((*dec)->Feed(reinterpret_cast<const uint8_t*>(&c), 1, sink).ok());
  ASSERT_TRUE((*dec)->Finish().ok());
  EXPECT_EQ(got, data);
}

INSTANTIATE_TEST_SUITE_P(Algos, CompressTest,
                         ::testing::Combine(::testing::Values(CompressOptions::kZstd, CompressOptions::kLz4),
                                            ::testing::Values(1, 3)),
                         [](const auto& info) {
                           return std::string(Tool(std::get<0>(info.param))) + "_threads" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(Compress, RefusesToOverwriteAndAmbiguousNames) {
  TempDir t;
  WriteCompressed(t / "b", {{"a", "aaaa"}, {"b", "bbbb"}}, CompressOptions{});
  testing::WriteFile(t / "b/b", "already here");
  DecompressOptions d;
  d.target_dir = t / "b";
  d.remove_original = true;
  Status st = DecompressBackup(d);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(st.message().find(t / "b/b"), std::string::npos) << st.message();
  // Refused before any work: nothing was decompressed or removed.
  EXPECT_FALSE(util::PathExists(t / "b/a"));
  EXPECT_TRUE(util::PathExists(t / "b/a.zst"));
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "b/b"), "already here");

  std::filesystem::remove(t / "b/b");
  std::filesystem::copy_file(t / "b/b.zst", t / "b/b.lz4");
  st = DecompressBackup(d);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("would decompress to " + (t / "b/b")), std::string::npos) << st.message();

  EXPECT_EQ(DecompressBackup({t / "missing", 1, false}).code(), ErrorCode::kNotFound);
}

TEST(Compress, ChecksOptions) {
  TempDir t;
  auto inner = [&] { return std::move(MakeDirectorySink(t / "x")).value(); };
  CompressOptions o;
  o.threads = 0;
  EXPECT_EQ(MakeCompressingSink(inner(), o).status().code(), ErrorCode::kInvalidArgument);
  o = {};
  o.zstd_level = 99;
  EXPECT_EQ(MakeCompressingSink(inner(), o).status().code(), ErrorCode::kInvalidArgument);
  o = {};
  o.algo = CompressOptions::kLz4;
  o.chunk_size = size_t{8} << 20;
  EXPECT_EQ(MakeCompressingSink(inner(), o).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeCompressingSink(nullptr, CompressOptions{}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Compress, Lz4ChunkSizeSetsTheBlockSize) {
  // Frame descriptor byte BD (after magic and FLG) holds the block size code:
  // 4 = 64 KiB ... 7 = 4 MiB. FLG: version 01, independent blocks, content
  // size and content checksum, no block checksum, as Percona writes.
  for (auto [chunk, code] :
       {std::pair<size_t, int>{64 << 10, 4}, {100 << 10, 5}, {1 << 20, 6}, {3 << 20, 7}}) {
    TempDir t;
    CompressOptions o;
    o.algo = CompressOptions::kLz4;
    o.chunk_size = chunk;
    // Big enough for a whole frame: LZ4F picks a smaller block for a frame
    // that fits in one, which is fine for readers but not what we test.
    WriteCompressed(t / "b", {{"f", testing::Pattern(4 << 20, 1)}}, o);
    std::string bytes = testing::ReadFileOrEmpty(t / "b/f.lz4");
    ASSERT_GT(bytes.size(), 6u);
    EXPECT_EQ(static_cast<uint8_t>(bytes[4]), 0x40 | 0x20 | 0x08 | 0x04) << chunk;
    EXPECT_EQ(static_cast<uint8_t>(bytes[5]) >> 4, code) << chunk;
  }
}

}  // namespace
}  // namespace xbak::sink
