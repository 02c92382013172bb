// Progress lines: sizes in binary units, counts, rate, ETA only while there
// is something left, and the note at the end.
#include "xbak/util/progress.h"

#include <gtest/gtest.h>

#include <thread>

namespace xbak::util {
namespace {

TEST(HumanBytes, BinaryUnitsWithOneDecimal) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.0 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{3} << 20), "3.0 MiB");
  EXPECT_EQ(HumanBytes((uint64_t{5} << 30) + (uint64_t{1} << 29)), "5.5 GiB");
  EXPECT_EQ(HumanBytes(uint64_t{2} << 40), "2.0 TiB");
}

TEST(Progress, LineCountsBytesFilesRateEtaAndNote) {
  Progress p("backup", std::chrono::milliseconds(0));  // no reporter thread
  p.AddTotal(uint64_t{4} << 20, 4);
  p.AddDone(uint64_t{1} << 20);
  p.FileDone();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string line = p.Line();
  // "backup: 1.0 MiB of 4.0 MiB, 1 of 4 files, <rate>/s, ETA <n> s" (no std::regex: GCC 12's
  // regex trips -Wmaybe-uninitialized under ASan).
  EXPECT_TRUE(line.starts_with("backup: 1.0 MiB of 4.0 MiB, 1 of 4 files, ")) << line;
  EXPECT_NE(line.find("B/s, ETA "), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with(" s")) << line;
  p.SetNote("redo 5 KiB behind");
  p.AddDone(uint64_t{3} << 20);  // all done: no ETA
  line = p.Line();
  EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
  EXPECT_TRUE(line.ends_with(", redo 5 KiB behind")) << line;
  EXPECT_EQ(p.done_bytes(), uint64_t{4} << 20);
  EXPECT_EQ(p.done_files(), 1u);
  p.Finish(true);
}

}  // namespace
}  // namespace xbak::util
