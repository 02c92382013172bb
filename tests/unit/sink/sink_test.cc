#include "xbak/sink/sink.h"

#include <gtest/gtest.h>

#include "util/temp_dir.h"
#include "xbak/util/file.h"

namespace xbak::sink {
namespace {

using testing::TempDir;

// A view of a sink writes into the sink it views, which stays usable and
// owned by its owner after the view is gone.
TEST(SinkRef, WritesThroughToTheViewedSinkAndOwnsNothing) {
  TempDir t;
  auto dir = MakeDirectorySink(t / "b");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  {
    std::unique_ptr<Sink> ref = MakeSinkRef(**dir);
    EXPECT_EQ(ref->Describe(), (*dir)->Describe());
    ASSERT_TRUE(WriteSmallFile(*ref, "db/a.frm", "through the view").ok());
    ASSERT_TRUE(ref->Flush().ok());
  }
  ASSERT_TRUE(WriteSmallFile(**dir, "b.txt", "direct").ok());
  ASSERT_TRUE((*dir)->Flush().ok());
  EXPECT_EQ(*util::ReadSmallFile(t / "b/db/a.frm"), "through the view");
  EXPECT_EQ(*util::ReadSmallFile(t / "b/b.txt"), "direct");
  EXPECT_FALSE(util::PathExists(t / "b/db/a.frm.xbpartial"));
}

}  // namespace
}  // namespace xbak::sink
