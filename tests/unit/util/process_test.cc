#include "xbak/util/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

namespace xbak::util {
namespace {

TEST(Process, RunAndCaptureReturnsOutputOrNamesTheFailure) {
  auto out = RunAndCapture({"sh", "-c", "echo out; echo err >&2"});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "out\nerr\n");
  auto bad = RunAndCapture({"sh", "-c", "echo why; exit 3"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("status 3"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("why"), std::string::npos);
  EXPECT_FALSE(RunAndCapture({"/nonexistent/program"}).ok());
}

TEST(Process, FindExecutableLooksInPathAndTakesPathsAsGiven) {
  EXPECT_FALSE(FindExecutable({"sh"}).empty());
  EXPECT_EQ(FindExecutable({"/nonexistent/x", "/bin/sh"}), "/bin/sh");
  EXPECT_EQ(FindExecutable({"no-such-program-xbak"}), "");
}

TEST(Process, ChildIsPolledWaitedAndKilledWhenDropped) {
  auto quick = Child::Start({"sh", "-c", "exit 5"}, "");
  ASSERT_TRUE(quick.ok());
  auto code = quick->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 5);

  pid_t pid = -1;
  {
    auto slow = Child::Start({"sleep", "60"}, "");
    ASSERT_TRUE(slow.ok());
    pid = slow->pid();
    EXPECT_FALSE(slow->Poll().has_value());
    EXPECT_FALSE(slow->Wait(std::chrono::milliseconds(100)).has_value());
  }
  // Dropped: killed and reaped, so the pid no longer exists.
  EXPECT_NE(::kill(pid, 0), 0);
}

}  // namespace
}  // namespace xbak::util
