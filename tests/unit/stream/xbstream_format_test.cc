#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>

#include <thread>

#include "stream/stream_test_util.h"
#include "xbak/stream/xbstream.h"

namespace xbak::stream {
namespace {

using testing::EChunk;
using testing::MemFd;
using testing::PChunk;

// Bytes taken from `mbstream -c a` where a holds "hello" (MariaDB 10.11.19).
const std::string kMbstreamHelloPayload(
    "XBSTCK01\x00P\x01\x00\x00\x00"
    "a"
    "\x05\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x86\xa6\x10\x36"
    "hello",
    8 + 1 + 1 + 4 + 1 + 8 + 8 + 4 + 5);
const std::string kMbstreamHelloEof(
    "XBSTCK01\x00"
    "E\x01\x00\x00\x00"
    "a",
    15);

TEST(XbstreamFormat, Crc32IsZlibCrc) {
  EXPECT_EQ(XbstreamCrc32("hello", 5), 0x3610a686u);
  EXPECT_EQ(XbstreamCrc32("", 0), 0u);
  EXPECT_EQ(XbstreamCrc32("123456789", 9), 0xcbf43926u);  // the CRC-32 check value
}

TEST(XbstreamFormat, GoldenPayloadAndEofChunks) {
  EXPECT_EQ(PChunk("a", "hello", 0), kMbstreamHelloPayload);
  EXPECT_EQ(EChunk("a"), kMbstreamHelloEof);
}

TEST(XbstreamFormat, WriterEmitsGoldenBytes) {
  util::UniqueFd fd = MemFd("");
  XbstreamWriter w(fd.get());
  ASSERT_TRUE(w.WritePayload("a", 0, "hello", 5).ok());
  ASSERT_TRUE(w.WriteEof("a").ok());
  EXPECT_EQ(testing::ReadAllFromStart(fd.get()), kMbstreamHelloPayload + kMbstreamHelloEof);
  EXPECT_EQ(w.bytes_written(), kMbstreamHelloPayload.size() + kMbstreamHelloEof.size());
}

TEST(XbstreamFormat, LittleEndianLengthAndOffset) {
  std::string h =
      EncodePayloadChunkHeader("db/t.ibd", 0x0102030405060708ull, 0x1112131415161718ull, 0xa1b2c3d4u);
  ASSERT_EQ(h.size(), kXbstreamFixedHeaderLen + 8 + kXbstreamPayloadHeaderLen);
  const auto* p = reinterpret_cast<const uint8_t*>(h.data());
  EXPECT_EQ(util::LoadLE32(p + 10), 8u);
  EXPECT_EQ(util::LoadLE64(p + 22), 0x0102030405060708ull);
  EXPECT_EQ(util::LoadLE64(p + 30), 0x1112131415161718ull);
  EXPECT_EQ(util::LoadLE32(p + 38), 0xa1b2c3d4u);
  EXPECT_EQ(p[22], 0x08);
}

TEST(XbstreamPath, Normalize) {
  EXPECT_EQ(NormalizeXbstreamPath("a").value(), "a");
  EXPECT_EQ(NormalizeXbstreamPath("db/t.ibd").value(), "db/t.ibd");
  EXPECT_EQ(NormalizeXbstreamPath("./db/./t.ibd").value(), "db/t.ibd");
  EXPECT_EQ(NormalizeXbstreamPath("..a/b..").value(), "..a/b..");
  for (const std::string& bad : std::vector<std::string>{
           "", "/etc/passwd", "../x", "a/../../x", "a/..", "a//b", "a/", ".", "./.", "x.xbpartial",
           "d/x.xbpartial", std::string("a\0b", 3), std::string(5000, 'a')}) {
    auto r = NormalizeXbstreamPath(bad);
    ASSERT_FALSE(r.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  }
}

TEST(XbstreamWriter, RefusesPathsMbstreamCannotRead) {
  util::UniqueFd fd = MemFd("");
  XbstreamWriter w(fd.get());
  EXPECT_TRUE(w.WriteEof(std::string(511, 'a')).ok());
  Status st = w.WriteEof(std::string(512, 'a'));
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(w.WriteEof("").ok());
}

TEST(XbstreamWriter, BrokenPipeIsAnErrorNotASignal) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  rd.Reset();  // the reader goes away
  // SIGPIPE is left at its default (terminate) on purpose: the writer must
  // keep it from killing us on its own.
  XbstreamWriter w(wr.get(), "stdout");
  Status st = w.WritePayload("a", 0, "hello", 5);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kIo);
  EXPECT_NE(st.message().find("stream reader went away (broken pipe)"), std::string::npos) << st.message();
  // Sticky: the stream may hold half a chunk now.
  EXPECT_EQ(w.WriteEof("a").message(), st.message());
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "a SIGPIPE was left pending";
}

TEST(XbstreamWriter, ConcurrentWritersNeverInterleaveInsideChunks) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  XbstreamWriter w(wr.get());
  constexpr int kThreads = 4, kChunks = 50;
  // A reader drains the pipe concurrently; small pipe buffers force writev to
  // stop mid-chunk, which must still not let another thread in.
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    ssize_t r;
    while ((r = ::read(rd.get(), buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(r));
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::string path = "f" + std::to_string(t);
      uint64_t off = 0;
      for (int i = 0; i < kChunks; ++i) {
        std::string data = testing::Pattern(1000 + 7919 * i % 100000, t * 1000 + i);
        ASSERT_TRUE(w.WritePayload(path, off, data.data(), data.size()).ok());
        off += data.size();
      }
      ASSERT_TRUE(w.WriteEof(path).ok());
    });
  }
  for (auto& t : ts) t.join();
  wr.Reset();
  reader.join();
  util::UniqueFd in = MemFd(got);
  ChunkReader r(in.get());
  Chunk c;
  std::map<std::string, uint64_t> sizes;
  int eofs = 0;
  while (true) {
    auto more = r.Next(&c);
    ASSERT_TRUE(more.ok()) << more.status().message();
    if (!*more) break;
    if (c.type == ChunkType::kEof) {
      ++eofs;
      continue;
    }
    EXPECT_EQ(c.offset, sizes[c.path]);
    sizes[c.path] += c.payload.size();
  }
  EXPECT_EQ(eofs, kThreads);
  EXPECT_EQ(r.offset(), got.size());
}

}  // namespace
}  // namespace xbak::stream
