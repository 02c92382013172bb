// The writing side of get: objects written in their output's order whatever
// order they become ready in, buffers handed back, cancellation, a reader
// that went away.
#include "get_output.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "stream/stream_test_util.h"

namespace xbak::cloud {
namespace {

using xbak::testing::MemFd;
using xbak::testing::ReadAllFromStart;

TEST(GetOutputTest, WritesObjectsInOrderWhateverOrderTheyAreReadyIn) {
  OutputQueue q;
  auto fd = MemFd("");
  std::atomic<uint64_t> written{0};
  std::vector<size_t> handed_back;
  // Object 2 whole, then object 0 in two steps, then object 1.
  q.Push(2, Ready{12, {"ccc"}, true});
  q.Push(0, Ready{10, {"a", "aa"}, false});
  std::thread writer([&] {
    Status s = WriteOutput(q, 3, fd.get(), "out", written, [&](Ready r) { handed_back.push_back(r.index); });
    EXPECT_TRUE(s.ok()) << s.message();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Push(1, Ready{11, {"b"}, true});
  q.Push(0, Ready{10, {"aaa"}, true});
  writer.join();
  EXPECT_EQ(ReadAllFromStart(fd.get()), "aaaaaabccc");
  EXPECT_EQ(written.load(), 10u);
  EXPECT_EQ(handed_back, (std::vector<size_t>{10, 10, 11, 12}));
}

TEST(GetOutputTest, CancelEndsAWaitingWriter) {
  OutputQueue q;
  auto fd = MemFd("");
  std::atomic<uint64_t> written{0};
  Status s;
  std::thread writer([&] { s = WriteOutput(q, 1, fd.get(), "out", written, [](Ready) {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Cancel();
  writer.join();
  EXPECT_EQ(s.code(), ErrorCode::kCancelled);
}

TEST(GetOutputTest, AReaderThatWentAwayIsNamed) {
  ::signal(SIGPIPE, SIG_IGN);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[0]);
  OutputQueue q;
  q.Push(0, Ready{0, {"bytes"}, true});
  std::atomic<uint64_t> written{0};
  int handed = 0;
  Status s = WriteOutput(q, 1, p[1], "stream 3 (/tmp/fifo)", written, [&](Ready) { handed++; });
  ::close(p[1]);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find("stream 3 (/tmp/fifo)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("broken pipe"), std::string::npos) << s.message();
  EXPECT_EQ(handed, 1);  // its buffers still go back
  EXPECT_EQ(written.load(), 0u);
}

}  // namespace
}  // namespace xbak::cloud
