// FIFO streaming: both ends of the named pipes, the bounded per-fd queues, and
// what happens when a reader is missing, dies or is slow.
#include "xbak/sink/fifo.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "stream/stream_test_util.h"
#include "xbak/sink/xbstream_sink.h"
#include "xbak/stream/xbstream.h"

namespace xbak::sink {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// Runs fn on another thread and aborts the whole binary if it takes longer
// than `limit`: a hang is the failure these tests look for, and it must not
// turn into a test run that never ends.
template <typename Fn>
auto Bounded(std::chrono::seconds limit, Fn fn) {
  auto fut = std::async(std::launch::async, std::move(fn));
  if (fut.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "timed out after " << limit.count() << " s";
    std::abort();
  }
  return fut.get();
}

// Reads fd to its end, `chunk` bytes at a time, sleeping `pause` after each.
uint64_t Drain(int fd, size_t chunk, std::chrono::milliseconds pause) {
  std::vector<char> buf(chunk);
  uint64_t total = 0;
  while (true) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return total;
    total += static_cast<uint64_t>(r);
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
}

TEST(Fifo, NamesMatchPercona) {
  EXPECT_EQ(FifoPath("/tmp/stream", 0), "/tmp/stream/thread_0");
  EXPECT_EQ(FifoPath("/tmp/stream/", 12), "/tmp/stream/thread_12");
}

TEST(Fifo, RoundTripFourFifosIntoExtractStreams) {
  TempDir t;
  const std::string dir = t / "fifos";  // does not exist yet: the writer creates it
  constexpr int kFifos = 4;

  // The reader starts first and waits for the FIFOs to appear.
  auto reader = std::async(std::launch::async, [&]() -> Status {
    XBAK_ASSIGN_OR_RETURN(std::vector<util::UniqueFd> fds, OpenFifosForReading(dir, kFifos, 30s));
    std::vector<int> raw;
    for (auto& f : fds) raw.push_back(f.get());
    stream::ExtractOptions o;
    o.target_dir = t / "out";
    o.fsync = false;
    return stream::ExtractStreams(raw, o);
  });

  std::map<std::string, std::string> want;
  Bounded(60s, [&] {
    auto sink = MakeFifoSink(dir, kFifos, 30s);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    EXPECT_NE((*sink)->Describe().find("fifo " + FifoPath(dir, 3)), std::string::npos) << (*sink)->Describe();
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int th = 0; th < 3; ++th) {
      threads.emplace_back([&, th] {
        for (int k = 0; k < 5; ++k) {
          std::string path = "db" + std::to_string(th) + "/t" + std::to_string(k) + ".ibd";
          std::string data = testing::Pattern(static_cast<size_t>(k) * 700001 + 3, th * 10 + k);
          auto f = (*sink)->Create(path);
          ASSERT_TRUE(f.ok()) << f.status().message();
          for (size_t off = 0; off < data.size(); off += 65536) {
            size_t n = std::min<size_t>(65536, data.size() - off);
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
    for (const auto& s : (*sink)->BufferStats()) {
      EXPECT_EQ(s.buffered_bytes, 0u);  // Flush waits for the queues
      EXPECT_LE(s.peak_buffered_bytes, s.bound_bytes);
      EXPECT_GT(s.written_bytes, 0u) << "a FIFO carried nothing";
    }
    // Destroying the sink closes the FIFOs: the readers see end of stream.
  });
  Status st = Bounded(60s, [&] { return reader.get(); });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(testing::TreeContents(t / "out"), want);
}

TEST(Fifo, ReaderThatNeverComesTimesOutNamingTheFifo) {
  TempDir t;
  const std::string dir = t / "fifos";
  auto start = std::chrono::steady_clock::now();
  auto fds = Bounded(30s, [&] { return OpenFifosForWriting(dir, 3, 1s); });
  ASSERT_FALSE(fds.ok());
  EXPECT_EQ(fds.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(fds.status().message().find("no reader opened fifo " + FifoPath(dir, 0)), std::string::npos)
      << fds.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // What it created it removed, so a retry (or another tool) starts clean.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(util::PathExists(FifoPath(dir, i))) << i;
}

TEST(Fifo, WriterThatNeverComesTimesOutOnTheReadingSide) {
  TempDir t;
  // Missing altogether.
  auto missing = Bounded(30s, [&] { return OpenFifosForReading(t.path(), 2, 1s); });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(missing.status().message().find(FifoPath(t.path(), 0) + " did not appear"), std::string::npos)
      << missing.status().message();

  // Present, but no writer opens them: the blocked opens are released.
  for (int i = 0; i < 2; ++i) ASSERT_EQ(::mkfifo(FifoPath(t.path(), i).c_str(), 0600), 0);
  auto unopened = Bounded(30s, [&] { return OpenFifosForReading(t.path(), 2, 1s); });
  ASSERT_FALSE(unopened.ok());
  EXPECT_EQ(unopened.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(unopened.status().message().find("no writer opened fifo " + FifoPath(t.path(), 0)),
            std::string::npos)
      << unopened.status().message();
}

TEST(Fifo, RefusesAPathThatIsNotAFifo) {
  TempDir t;
  testing::WriteFile(FifoPath(t.path(), 1), "not a pipe");
  auto w = OpenFifosForWriting(t.path(), 2, 1s);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(w.status().message().find(FifoPath(t.path(), 1) + " exists and is not a FIFO"), std::string::npos)
      << w.status().message();
  EXPECT_FALSE(util::PathExists(FifoPath(t.path(), 0)));  // created by the failed call, removed again
  EXPECT_EQ(testing::ReadFileOrEmpty(FifoPath(t.path(), 1)), "not a pipe");

  auto r = OpenFifosForReading(t.path(), 2, 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kTimeout);  // thread_0 is gone now
  ASSERT_EQ(::mkfifo(FifoPath(t.path(), 0).c_str(), 0600), 0);
  r = OpenFifosForReading(t.path(), 2, 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kAlreadyExists) << r.status().message();
}

TEST(Fifo, ExistingFifosAreReused) {
  TempDir t;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(::mkfifo(FifoPath(t.path(), i).c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] { return OpenFifosForReading(t.path(), 2, 10s); });
  auto w = Bounded(30s, [&] { return OpenFifosForWriting(t.path(), 2, 10s); });
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto r = Bounded(30s, [&] { return reader.get(); });
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(::write((*w)[1].get(), "hi", 2), 2);
  char buf[2];
  ASSERT_EQ(::read((*r)[1].get(), buf, 2), 2);
  EXPECT_EQ(std::string(buf, 2), "hi");
}

TEST(Fifo, ReaderThatDiesMidStreamIsAClearErrorNotAHang) {
  TempDir t;
  const std::string dir = t / "fifos";
  auto reader = std::async(std::launch::async, [&]() -> uint64_t {
    auto fds = OpenFifosForReading(dir, 2, 30s);
    if (!fds.ok()) return 0;
    // thread_1's reader takes a little and dies; thread_0's reads everything
    // (at the same time: a reader that waited for the other would stall the
    // writer, as a real one would).
    std::thread dying([fd = std::move((*fds)[1])]() mutable {
      std::vector<char> buf(100000);
      size_t got = 0;
      while (got < buf.size()) {
        ssize_t r = ::read(fd.get(), buf.data(), buf.size() - got);
        if (r <= 0) break;
        got += static_cast<size_t>(r);
      }
    });
    uint64_t n = Drain((*fds)[0].get(), 1 << 16, 0ms);
    dying.join();
    return n;
  });

  Status first = Bounded(60s, [&] {
    auto sink = MakeFifoSink(dir, 2, 30s, /*queue_chunks=*/2);
    if (!sink.ok()) return sink.status();
    const std::string data = testing::Pattern(3 << 20, 7);
    for (int k = 0; k < 16; ++k) {
      auto f = (*sink)->Create("f" + std::to_string(k));
      if (!f.ok()) return f.status();
      for (size_t off = 0; off < data.size(); off += 256 << 10) {
        XBAK_RETURN_IF_ERROR((*f)->Write(data.data() + off, 256 << 10));
      }
      XBAK_RETURN_IF_ERROR((*f)->Close());
    }
    return (*sink)->Flush();
    // (The sink's destructor joins its writer threads: no hang there either.)
  });
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.code(), ErrorCode::kIo);
  EXPECT_NE(first.message().find("reader of fifo " + FifoPath(dir, 1) + " went away"), std::string::npos)
      << first.message();
  Bounded(60s, [&] { return reader.get(); });
}

TEST(Fifo, SlowReaderBuffersNoMoreThanTheBound) {
  TempDir t;
  const std::string dir = t / "fifos";
  constexpr int kFifos = 4;
  constexpr size_t kQueue = 3;
  std::array<uint64_t, kFifos> read_bytes{};
  auto readers = std::async(std::launch::async, [&]() -> Status {
    XBAK_ASSIGN_OR_RETURN(std::vector<util::UniqueFd> fds, OpenFifosForReading(dir, kFifos, 30s));
    std::vector<std::thread> th;
    for (int i = 0; i < kFifos; ++i) {
      th.emplace_back([&, i] {
        // thread_3 is slow: 64 KiB every 5 ms, about 12 MiB/s at best.
        read_bytes[i] =
            i == kFifos - 1 ? Drain(fds[i].get(), 64 << 10, 5ms) : Drain(fds[i].get(), 1 << 20, 0ms);
      });
    }
    for (auto& x : th) x.join();
    return Status::Ok();
  });

  std::vector<StreamBufferStats> stats;
  Bounded(120s, [&] {
    auto sink = MakeFifoSink(dir, kFifos, 30s, kQueue);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&, w] {
        const std::string data = testing::Pattern(3 << 20, w);
        for (int k = 0; k < 6; ++k) {
          auto f = (*sink)->Create("w" + std::to_string(w) + "/f" + std::to_string(k));
          ASSERT_TRUE(f.ok());
          // Big writes and small ones: both paths into the queue.
          ASSERT_TRUE((*f)->Write(data.data(), 2 << 20).ok());
          for (size_t off = 2 << 20; off < data.size(); off += 4096) {
            ASSERT_TRUE((*f)->Write(data.data() + off, 4096).ok());
          }
          ASSERT_TRUE((*f)->Close().ok());
        }
      });
    }
    for (auto& x : writers) x.join();
    ASSERT_TRUE((*sink)->Flush().ok());
    stats = (*sink)->BufferStats();
  });
  ASSERT_TRUE(Bounded(60s, [&] { return readers.get(); }).ok());

  ASSERT_EQ(stats.size(), size_t{kFifos});
  uint64_t total = 0;
  for (int i = 0; i < kFifos; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(stats[i].bound_bytes,
              kQueue * (kXbstreamSinkCoalesceBytes + stream::kXbstreamFixedHeaderLen +
                        stream::kXbstreamMaxWritePathLen + stream::kXbstreamPayloadHeaderLen));
    EXPECT_LE(stats[i].peak_buffered_bytes, stats[i].bound_bytes);
    EXPECT_EQ(stats[i].written_bytes, read_bytes[i]);
    total += stats[i].written_bytes;
  }
  // The slow FIFO's queue did fill, so the bound is what held it.
  EXPECT_GT(stats[kFifos - 1].peak_buffered_bytes, kXbstreamSinkCoalesceBytes);
  EXPECT_GT(total, uint64_t{4 * 6} * (3 << 20));  // every payload byte, plus headers
}

TEST(BufferedXbstreamSink, ChecksItsArguments) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  util::UniqueFd rd(p[0]), wr(p[1]);
  EXPECT_FALSE(MakeBufferedXbstreamSink({}, {}).ok());
  EXPECT_FALSE(MakeBufferedXbstreamSink({rd.get()}, {}).ok());
  StreamBufferOptions zero;
  zero.queue_chunks = 0;
  EXPECT_FALSE(MakeBufferedXbstreamSink({wr.get()}, std::move(zero)).ok());
  StreamBufferOptions names;
  names.names = {"a", "b"};
  EXPECT_FALSE(MakeBufferedXbstreamSink({wr.get()}, std::move(names)).ok());
  EXPECT_EQ(OpenFifosForWriting("/tmp", 0, 1s).status().code(), ErrorCode::kInvalidArgument);
}

TEST(BufferedXbstreamSink, SameBytesAsTheDirectSink) {
  // Same files, same write sizes: the queued path must produce a stream that
  // extracts to the same tree (chunking may differ; content may not).
  TempDir t;
  util::UniqueFd out = testing::MemFd("");
  {
    auto sink = MakeBufferedXbstreamSink({out.get()}, {});
    ASSERT_TRUE(sink.ok());
    for (int k = 0; k < 4; ++k) {
      auto f = (*sink)->Create("d/f" + std::to_string(k));
      std::string data = testing::Pattern(static_cast<size_t>(k) * 1500000, k);
      ASSERT_TRUE((*f)->Write(data.data(), data.size()).ok());
      ASSERT_TRUE((*f)->Close().ok());
    }
    ASSERT_TRUE((*sink)->Flush().ok());
  }
  ::lseek(out.get(), 0, SEEK_SET);
  stream::ExtractOptions o;
  o.target_dir = t / "out";
  o.fsync = false;
  Status st = stream::ExtractStream(out.get(), o);
  ASSERT_TRUE(st.ok()) << st.message();
  auto tree = testing::TreeContents(t / "out");
  ASSERT_EQ(tree.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(tree["d/f" + std::to_string(k)], testing::Pattern(static_cast<size_t>(k) * 1500000, k));
  }
}

}  // namespace
}  // namespace xbak::sink
