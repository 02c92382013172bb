#include <gtest/gtest.h>

#include "stream/stream_test_util.h"
#include "xbak/stream/xbstream.h"

namespace xbak::stream {
namespace {

using testing::EChunk;
using testing::MemFd;
using testing::PChunk;

// Reads the whole stream; returns the first error (or OK) and the chunks.
Status ReadAll(const std::string& bytes, std::vector<Chunk>* out = nullptr) {
  util::UniqueFd fd = MemFd(bytes);
  ChunkReader r(fd.get());
  while (true) {
    Chunk c;
    auto more = r.Next(&c);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
    if (out) out->push_back(std::move(c));
  }
}

TEST(ChunkReader, RoundTrip) {
  std::string big = testing::Pattern(3 << 20, 7);  // bigger than the read buffer
  std::string s = PChunk("db/t.ibd", "abc", 0) + PChunk("x", big, 0) + PChunk("db/t.ibd", "de", 3) +
                  EChunk("db/t.ibd") + EChunk("x") + EChunk("empty");
  std::vector<Chunk> cs;
  ASSERT_TRUE(ReadAll(s, &cs).ok());
  ASSERT_EQ(cs.size(), 6u);
  EXPECT_EQ(cs[0].type, ChunkType::kPayload);
  EXPECT_EQ(cs[0].path, "db/t.ibd");
  EXPECT_EQ(std::string(cs[0].payload.begin(), cs[0].payload.end()), "abc");
  EXPECT_EQ(cs[0].stream_offset, 0u);
  EXPECT_EQ(std::string(cs[1].payload.begin(), cs[1].payload.end()), big);
  EXPECT_EQ(cs[1].stream_offset, PChunk("db/t.ibd", "abc", 0).size());
  EXPECT_EQ(cs[2].offset, 3u);
  EXPECT_EQ(cs[3].type, ChunkType::kEof);
  EXPECT_EQ(cs[5].path, "empty");
}

TEST(ChunkReader, EmptyStreamIsCleanEnd) { EXPECT_TRUE(ReadAll("").ok()); }

void ExpectCorrupt(const std::string& bytes, const std::string& what, const std::string& where) {
  Status st = ReadAll(bytes);
  ASSERT_FALSE(st.ok()) << "accepted stream for: " << what;
  EXPECT_EQ(st.code(), ErrorCode::kCorrupt) << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(where), std::string::npos) << st.message();
}

TEST(ChunkReader, TruncatedInFixedHeader) {
  std::string good = PChunk("a", "hello", 0);
  ExpectCorrupt(good + EChunk("a").substr(0, 5), "truncated chunk header",
                "corrupt xbstream at byte " + std::to_string(good.size()) + ":");
}

TEST(ChunkReader, TruncatedInPath) {
  std::string c = PChunk("db/t.ibd", "hello", 0);
  ExpectCorrupt(c.substr(0, kXbstreamFixedHeaderLen + 3), "truncated chunk header", "at byte 0");
}

TEST(ChunkReader, TruncatedInLengthFields) {
  std::string c = PChunk("db/t.ibd", "hello", 0);
  ExpectCorrupt(c.substr(0, kXbstreamFixedHeaderLen + 8 + 10), "truncated chunk header",
                "at byte 0 (file db/t.ibd)");
}

TEST(ChunkReader, TruncatedInPayload) {
  std::string first = PChunk("x", "1", 0);
  std::string c = PChunk("db/t.ibd", "hello world", 0);
  ExpectCorrupt(first + c.substr(0, c.size() - 4), "truncated payload (stream ends after 7 of 11",
                "corrupt xbstream at byte " + std::to_string(first.size()) + " (file db/t.ibd)");
}

TEST(ChunkReader, BadMagic) {
  std::string first = PChunk("x", "1", 0);
  std::string c = PChunk("a", "hello", 0);
  c[3] = 'X';
  ExpectCorrupt(first + c, "bad chunk magic", "at byte " + std::to_string(first.size()));
  ExpectCorrupt("garbage that is not a stream", "bad chunk magic", "at byte 0");
}

TEST(ChunkReader, BadChecksum) {
  std::string c = PChunk("db/t.ibd", "hello", 0);
  c[c.size() - 1] ^= 1;  // flip a payload bit
  ExpectCorrupt(c, "payload checksum mismatch", "corrupt xbstream at byte 0 (file db/t.ibd)");
  std::string d = PChunk("db/t.ibd", "hello", 0);
  d[kXbstreamFixedHeaderLen + 8 + 16] ^= 0x80;  // flip a bit of the stored CRC
  ExpectCorrupt(d, "payload checksum mismatch", "(file db/t.ibd)");
}

TEST(ChunkReader, UnknownTypeRefusedUnlessIgnorable) {
  std::string c = PChunk("a", "xy", 0);
  c[9] = 'S';  // Percona's sparse chunk: mbstream 10.11 refuses it too
  ExpectCorrupt(c, "unknown chunk type 0x53", "at byte 0");
  c[8] = kXbstreamFlagIgnorable;
  std::vector<Chunk> cs;
  ASSERT_TRUE(ReadAll(c + EChunk("a"), &cs).ok());
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].type, ChunkType::kUnknown);
  EXPECT_EQ(cs[0].raw_type, 'S');
}

TEST(ChunkReader, SaneLimits) {
  std::string c = EChunk("a");
  util::StoreLE32(reinterpret_cast<uint8_t*>(c.data()) + 10, 0xfffffff0u);
  ExpectCorrupt(c, "path too long", "at byte 0");
  std::string h = EncodePayloadChunkHeader("a", uint64_t{1} << 40, 0, 0);
  ExpectCorrupt(h, "payload too large", "(file a)");
  std::string o = EncodePayloadChunkHeader("a", 1, ~uint64_t{0}, 0) + "x";
  ExpectCorrupt(o, "out of range", "(file a)");
}

TEST(ChunkReader, ShortReadsFromAPipe) {
  // A FIFO hands out data in arbitrary pieces; the reader must not care.
  std::string s = PChunk("a", testing::Pattern(200000, 1), 0) + EChunk("a");
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  std::thread writer([&] {
    for (size_t i = 0; i < s.size(); i += 3) {
      ASSERT_GT(::write(wr.get(), s.data() + i, std::min<size_t>(3, s.size() - i)), 0);
    }
    wr.Reset();
  });
  ChunkReader r(rd.get());
  Chunk c;
  int n = 0;
  while (true) {
    auto more = r.Next(&c);
    ASSERT_TRUE(more.ok()) << more.status().message();
    if (!*more) break;
    ++n;
  }
  writer.join();
  EXPECT_EQ(n, 2);
  EXPECT_EQ(r.offset(), s.size());
}

TEST(ChunkReader, CancelFlagStopsABlockedRead) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);  // writer stays open and silent
  std::atomic<bool> cancel{false};
  ChunkReader r(rd.get());
  r.SetCancelFlag(&cancel);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    cancel = true;
  });
  Chunk c;
  auto more = r.Next(&c);
  t.join();
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), ErrorCode::kCancelled);
}

}  // namespace
}  // namespace xbak::stream
