#include "xbak/util/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace xbak {
namespace {

TEST(EnlargePipe, GrowsAPipeUpToTheRequestAndTheSystemLimit) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd r(p[0]), w(p[1]);
  int before = ::fcntl(w.get(), F_GETPIPE_SZ);
  ASSERT_GT(before, 0);
  size_t got = EnlargePipe(w.get(), size_t{1} << 20);
  EXPECT_EQ(got, static_cast<size_t>(::fcntl(w.get(), F_GETPIPE_SZ)));
  EXPECT_GE(got, static_cast<size_t>(before));
  EXPECT_LE(got, size_t{1} << 20);
  // Data still flows after the resize.
  ASSERT_EQ(::write(w.get(), "abc", 3), 3);
  char buf[3];
  ASSERT_EQ(::read(r.get(), buf, 3), 3);
  EXPECT_EQ(std::string(buf, 3), "abc");
}

TEST(EnlargePipe, LeavesAnythingButAPipeAlone) {
  char name[] = "/tmp/xbak_enlarge_XXXXXX";
  int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  UniqueFd owned(fd);
  ::unlink(name);
  EXPECT_EQ(EnlargePipe(fd), 0u);
  EXPECT_EQ(EnlargePipe(-1), 0u);
}

}  // namespace
}  // namespace xbak
