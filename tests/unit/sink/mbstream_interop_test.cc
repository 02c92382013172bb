// Byte compatibility with MariaDB's own mbstream, both directions. Skipped
// where mariadb-backup is not installed.
#include <gtest/gtest.h>

#include <cstdlib>

#include "stream/stream_test_util.h"
#include "util/shell.h"
#include "xbak/sink/xbstream_sink.h"
#include "xbak/stream/xbstream.h"

namespace xbak::sink {
namespace {

using testing::TempDir;
using testing::TreeContents;

constexpr const char* kMbstream = "/usr/bin/mbstream";

using testing::Shell;

std::map<std::string, std::string> MbstreamSamples() {
  return {
      {"ibdata1", testing::Pattern(12 << 20, 1)},  // above mbstream's 10 MiB buffer
      {"db/t1.ibd", testing::Pattern(65536 * 3 + 5, 2)},
      {"db/t1.frm", testing::Pattern(1000, 3)},
      {"db/empty.MYD", ""},
      // mbstream creates only the last missing directory level (and exits 0
      // when it cannot), so one level, as in a real backup (db/table files).
      {"sub/c.txt", "hello\n"},
      {"xtrabackup_checkpoints", "backup_type = full-backuped\n"},
  };
}

// mbstream -x of T/s.xb into T/out: no complaint, and exactly `want` extracted.
void ExpectMbstreamExtracts(const TempDir& t, const std::map<std::string, std::string>& want) {
  ASSERT_EQ(::mkdir((t / "out").c_str(), 0750), 0);
  ASSERT_EQ(
      Shell(std::string(kMbstream) + " -x -C " + (t / "out") + " < " + (t / "s.xb") + " 2> " + (t / "err")),
      0);
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "err"), "");
  EXPECT_EQ(TreeContents(t / "out"), want);
}

TEST(MbstreamInterop, MbstreamExtractsOurStream) {
  if (::access(kMbstream, X_OK) != 0) GTEST_SKIP() << kMbstream << " not installed";
  TempDir t;
  const auto files = MbstreamSamples();
  {
    auto out = util::File::CreateNew(t / "s.xb");
    ASSERT_TRUE(out.ok());
    auto sink = MakeXbstreamSink(out->fd());
    ASSERT_TRUE(sink.ok());
    // Interleave the files' chunks the way parallel copy threads would.
    std::vector<std::pair<std::string, std::unique_ptr<SinkFile>>> open;
    for (const auto& [path, data] : files) {
      auto f = (*sink)->Create(path);
      ASSERT_TRUE(f.ok());
      open.emplace_back(path, std::move(f).value());
    }
    for (size_t off = 0;; off += 700000) {
      bool any = false;
      for (auto& [path, f] : open) {
        const std::string& data = files.at(path);
        if (off >= data.size()) continue;
        any = true;
        size_t n = std::min<size_t>(700000, data.size() - off);
        ASSERT_TRUE(f->Write(data.data() + off, n).ok());
      }
      if (!any) break;
    }
    for (auto& [path, f] : open) ASSERT_TRUE(f->Close().ok());
    ASSERT_TRUE((*sink)->Flush().ok());
  }
  ExpectMbstreamExtracts(t, files);
}

// mbstream takes the chunks of zeros a preallocated tablespace is sent as.
TEST(MbstreamInterop, MbstreamExtractsRunsOfZeros) {
  if (::access(kMbstream, X_OK) != 0) GTEST_SKIP() << kMbstream << " not installed";
  TempDir t;
  std::string want;
  {
    auto out = util::File::CreateNew(t / "s.xb");
    ASSERT_TRUE(out.ok());
    auto sink = MakeXbstreamSink(out->fd());
    ASSERT_TRUE(sink.ok());
    auto f = (*sink)->Create("db/t.ibd");
    ASSERT_TRUE(f.ok());
    const std::string data(16384, 'p');
    for (uint64_t zeros : {uint64_t{16384}, uint64_t{(5 << 19) + 16384}}) {
      ASSERT_TRUE((*f)->Write(data.data(), data.size()).ok());
      ASSERT_TRUE((*f)->WriteZeros(zeros).ok());
      want += data + std::string(zeros, '\0');
    }
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE((*sink)->Flush().ok());
  }
  ExpectMbstreamExtracts(t, {{"db/t.ibd", want}});
}

TEST(MbstreamInterop, WeExtractMbstreamsStream) {
  if (::access(kMbstream, X_OK) != 0) GTEST_SKIP() << kMbstream << " not installed";
  TempDir t;
  const auto files = MbstreamSamples();
  std::string args;
  for (const auto& [path, data] : files) {
    testing::WriteFile(t / ("src/" + path), data);
    args += " " + path;
  }
  ASSERT_EQ(Shell("cd " + (t / "src") + " && " + kMbstream + " -c" + args + " > " + (t / "s.xb")), 0);
  auto in = util::File::OpenRead(t / "s.xb");
  ASSERT_TRUE(in.ok());
  stream::ExtractOptions o;
  o.target_dir = t / "out";
  Status st = stream::ExtractStream(in->fd(), o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(TreeContents(t / "out"), files);
}

TEST(MbstreamInterop, DotSlashPathsFromMbstream) {
  if (::access(kMbstream, X_OK) != 0) GTEST_SKIP() << kMbstream << " not installed";
  TempDir t;
  testing::WriteFile(t / "src/d/f", "data");
  ASSERT_EQ(Shell("cd " + (t / "src") + " && " + kMbstream + " -c ./d/f > " + (t / "s.xb")), 0);
  auto in = util::File::OpenRead(t / "s.xb");
  stream::ExtractOptions o;
  o.target_dir = t / "out";
  ASSERT_TRUE(stream::ExtractStream(in->fd(), o).ok());
  EXPECT_EQ(testing::ReadFileOrEmpty(t / "out/d/f"), "data");
}

}  // namespace
}  // namespace xbak::sink
