#include "xbak/sink/xbstream_sink.h"

#include <gtest/gtest.h>

#include <thread>

#include "stream/stream_test_util.h"
#include "xbak/stream/xbstream.h"

namespace xbak::sink {
namespace {

using testing::MemFd;
using testing::TempDir;

std::vector<stream::Chunk> AllChunks(const std::string& bytes) {
  util::UniqueFd fd = MemFd(bytes);
  stream::ChunkReader r(fd.get());
  std::vector<stream::Chunk> out;
  while (true) {
    stream::Chunk c;
    auto more = r.Next(&c);
    EXPECT_TRUE(more.ok()) << more.status().message();
    if (!more.ok() || !*more) return out;
    out.push_back(std::move(c));
  }
}

TEST(XbstreamSink, CoalescesSmallWritesAndEndsWithEof) {
  util::UniqueFd out = MemFd("");
  auto sink = MakeXbstreamSink(out.get());
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  auto f = (*sink)->Create("db/t.ibd");
  ASSERT_TRUE(f.ok());
  std::string want;
  for (int i = 0; i < 600; ++i) {  // 600 x 4 KiB = 2.3 MiB in 4 KiB writes
    std::string page = testing::Pattern(4096, i);
    ASSERT_TRUE((*f)->Write(page.data(), page.size()).ok());
    want += page;
  }
  std::string big = testing::Pattern(3 << 20, 99);  // one big write: one chunk
  ASSERT_TRUE((*f)->Write(big.data(), big.size()).ok());
  want += big;
  ASSERT_TRUE((*f)->Close().ok());
  ASSERT_TRUE((*sink)->Flush().ok());

  auto chunks = AllChunks(testing::ReadAllFromStart(out.get()));
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_LE(chunks.size(), 5u);  // ~3 coalesced + the big one + EOF, not 601
  EXPECT_EQ(chunks.back().type, stream::ChunkType::kEof);
  std::string got;
  for (const auto& c : chunks) {
    if (c.type != stream::ChunkType::kPayload) continue;
    EXPECT_EQ(c.offset, got.size());
    EXPECT_LE(c.payload.size(), big.size());
    got.append(c.payload.begin(), c.payload.end());
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(chunks[chunks.size() - 2].payload.size(), big.size());
}

// Runs of zeros (a tablespace's preallocated space) go out as chunks of the
// shared zero block, in order with the data around them, with right CRCs
// (the reader checks them); through one fd (written directly) and two (queued).
TEST(XbstreamSink, ZerosBetweenDataExtractAsWritten) {
  for (int fds_n : {1, 2}) {
    SCOPED_TRACE(std::to_string(fds_n) + " fd(s)");
    TempDir t;
    std::vector<util::UniqueFd> outs;
    std::vector<int> fds;
    for (int i = 0; i < fds_n; ++i) {
      outs.push_back(MemFd(""));
      fds.push_back(outs.back().get());
    }
    auto sink = fds_n == 1 ? MakeXbstreamSink(fds[0]) : MakeXbstreamSink(fds);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    auto f = (*sink)->Create("db/t.ibd");
    ASSERT_TRUE(f.ok());
    std::string want;
    for (uint64_t zeros : {uint64_t{3000}, uint64_t{(5 << 19) + 100}, uint64_t{0}, uint64_t{1} << 20}) {
      std::string data = testing::Pattern(70000, static_cast<int>(want.size() % 251));
      ASSERT_TRUE((*f)->Write(data.data(), data.size()).ok());
      ASSERT_TRUE((*f)->WriteZeros(zeros).ok());
      want += data + std::string(zeros, '\0');
    }
    ASSERT_TRUE((*f)->Close().ok());
    ASSERT_TRUE((*sink)->Flush().ok());
    for (int fd : fds) ::lseek(fd, 0, SEEK_SET);
    stream::ExtractOptions o;
    o.target_dir = t / "out";
    o.fsync = false;
    Status st = stream::ExtractStreams(fds, o);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(testing::TreeContents(t / "out"), (std::map<std::string, std::string>{{"db/t.ibd", want}}));
  }
}

TEST(XbstreamSink, RefusesBadAndDuplicatePaths) {
  util::UniqueFd out = MemFd("");
  auto sink = MakeXbstreamSink(out.get());
  ASSERT_TRUE(sink.ok());
  for (const std::string& bad : std::vector<std::string>{"../x", "/abs", "a//b", "", std::string(600, 'a')}) {
    EXPECT_FALSE((*sink)->Create(bad).ok()) << bad;
  }
  ASSERT_TRUE((*sink)->Create("a").ok());
  auto dup = (*sink)->Create("./a");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), ErrorCode::kAlreadyExists);
}

TEST(XbstreamSink, RejectsReadOnlyFd) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  EXPECT_FALSE(MakeXbstreamSink(rd.get()).ok());
  EXPECT_FALSE(MakeXbstreamSink(std::vector<int>{}).ok());
  EXPECT_FALSE(MakeXbstreamSink(-1).ok());
}

TEST(XbstreamSink, FlushEmitsBufferedDataOfOpenFiles) {
  util::UniqueFd out = MemFd("");
  auto sink = MakeXbstreamSink(out.get());
  auto f = (*sink)->Create("f");
  ASSERT_TRUE((*f)->Write("abc", 3).ok());
  EXPECT_TRUE(testing::ReadAllFromStart(out.get()).empty());
  ASSERT_TRUE((*sink)->Flush().ok());
  auto chunks = AllChunks(testing::ReadAllFromStart(out.get()));
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].payload.size(), 3u);
  ASSERT_TRUE((*f)->Write("de", 2).ok());
  ASSERT_TRUE((*f)->Close().ok());
  chunks = AllChunks(testing::ReadAllFromStart(out.get()));
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].offset, 3u);
}

TEST(XbstreamSink, UnclosedFileIsIncompleteOnExtraction) {
  TempDir t;
  util::UniqueFd out = MemFd("");
  {
    auto sink = MakeXbstreamSink(out.get());
    auto f = (*sink)->Create("f");
    ASSERT_TRUE((*f)->Write(std::string(2 << 20, 'x').data(), 2 << 20).ok());
  }  // destroyed without Close
  ::lseek(out.get(), 0, SEEK_SET);
  stream::ExtractOptions o;
  o.target_dir = t.path();
  o.fsync = false;
  Status st = stream::ExtractStream(out.get(), o);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(util::PathExists(t / "f"));
}

TEST(XbstreamSink, ManyFdsManyThreadsRoundTrip) {
  TempDir t;
  constexpr int kFds = 3;
  std::vector<util::UniqueFd> outs;
  std::vector<int> fds;
  for (int i = 0; i < kFds; ++i) {
    outs.push_back(MemFd(""));
    fds.push_back(outs.back().get());
  }
  auto sink = MakeXbstreamSink(fds);
  ASSERT_TRUE(sink.ok());
  EXPECT_EQ((*sink)->Describe().rfind("xbstream on 3 fds", 0), 0u);
  std::map<std::string, std::string> want;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int k = 0; k < 6; ++k) {
        std::string path = "db" + std::to_string(th) + "/f" + std::to_string(k);
        std::string data = testing::Pattern(static_cast<size_t>(k) * 300000 + 17, th * 10 + k);
        auto f = (*sink)->Create(path);
        ASSERT_TRUE(f.ok()) << f.status().message();
        for (size_t off = 0; off < data.size(); off += 16384) {
          size_t n = std::min<size_t>(16384, data.size() - off);
          ASSERT_TRUE((*f)->Write(data.data() + off, n).ok());
        }
        ASSERT_TRUE((*f)->Close().ok());
        std::lock_guard<std::mutex> lock(mu);
        want[path] = data;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*sink)->Flush().ok());
  // Every fd carries some files, and each is a complete stream of its own.
  for (int i = 0; i < kFds; ++i) {
    EXPECT_FALSE(testing::ReadAllFromStart(fds[i]).empty()) << "fd " << i << " got no files";
    ::lseek(fds[i], 0, SEEK_SET);
  }
  stream::ExtractOptions o;
  o.target_dir = t / "out";
  o.fsync = false;
  Status st = stream::ExtractStreams(fds, o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(testing::TreeContents(t / "out"), want);
}

TEST(XbstreamSink, ReaderGoneIsAClearError) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  auto sink = MakeXbstreamSink(wr.get());
  rd.Reset();
  auto f = (*sink)->Create("f");
  std::string data(2 << 20, 'x');
  Status st = (*f)->Write(data.data(), data.size());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("broken pipe"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace xbak::sink
