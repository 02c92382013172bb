// DirectDeltas: an incremental's deltas written into the datadir as its
// stream arrives, or staged when they cannot be (direct_delta.h).
#include "xbak/restore/direct_delta.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "testing/synthetic_chain.h"
#include "util/temp_dir.h"
#include "xbak/prepare/applied_delta.h"

namespace xbak::restore {
namespace {

using testing::kPs;
using testing::MakePage;

class DirectDeltaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace();
    root_ = tmp_->path();
    ASSERT_FALSE(root_.empty());
    data_ = root_ + "/data";
    staging_ = root_ + "/staging";
    ASSERT_TRUE(util::MakeDirs(data_ + "/db").ok());
    ASSERT_TRUE(util::MakeDirs(staging_ + "/db").ok());
    // db/t.ibd in the datadir: space 5, 4 pages.
    std::string t;
    for (uint32_t no = 0; no < 4; no++) {
      auto p = MakePage(5, no, 0x11, 4);
      t.append(p.begin(), p.end());
    }
    ASSERT_TRUE(util::WriteFileAtomic(data_ + "/db/t.ibd", t).ok());
  }
  void TearDown() override { tmp_.reset(); }

  // A delta of `space` holding `pages` (filled with `fill`; page 0 says `fsp_size`).
  static std::string Delta(uint32_t space, const std::vector<uint32_t>& pages, uint8_t fill,
                           uint32_t fsp_size) {
    std::string out;
    innodb::DeltaWriter w(kPs, [&](const uint8_t* d, size_t n) {
      out.append(reinterpret_cast<const char*>(d), n);
      return Status::Ok();
    });
    for (uint32_t no : pages) EXPECT_TRUE(w.AddPage(no, MakePage(space, no, fill, fsp_size).data()).ok());
    EXPECT_TRUE(w.Finish().ok());
    return out;
  }

  struct Fed {
    bool filtered = false;  // false: the factory left the file to be staged as it is
    std::string out_rel, record;
    Status status;
  };
  // Feeds `bytes` to stream k's filter for `rel`, in uneven pieces.
  static Fed Feed(DirectDeltas& d, size_t k, const std::string& staging, const std::string& rel,
                  const std::string& bytes) {
    Fed f;
    f.out_rel = rel;
    auto factory = d.Filter(k, staging);
    auto filter = factory(rel, &f.out_rel, [&](const uint8_t* p, size_t n) {
      f.record.append(reinterpret_cast<const char*>(p), n);
      return Status::Ok();
    });
    if (!filter.ok()) {
      f.status = filter.status();
      return f;
    }
    if (!*filter) return f;
    f.filtered = true;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    size_t at = 0, step = 1000;
    while (at < bytes.size() && f.status.ok()) {
      const size_t n = std::min(step, bytes.size() - at);
      f.status = (*filter)->Write(p + at, n);
      at += n;
      step = step * 3 % 9001 + 1;
    }
    if (f.status.ok()) f.status = (*filter)->Finish();
    return f;
  }
  std::string Page(uint32_t no) {
    auto f = util::File::OpenRead(data_ + "/db/t.ibd");
    std::string p(kPs, '\0');
    EXPECT_TRUE(f.ok() && f->PRead(p.data(), kPs, uint64_t{no} * kPs).ok());
    return p;
  }
  static std::string Str(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

  std::optional<testing::TempDir> tmp_;  // the test's directory, removed at TearDown
  std::string root_, data_, staging_;
};

TEST_F(DirectDeltaTest, ADeltaOfTheSameTablespaceGoesIntoTheDatadirPageByPage) {
  DirectDeltas d(data_, 2);
  d.Open(1, kPs, prepare::LogDdl{});
  Fed f = Feed(d, 1, staging_, "db/t.ibd.delta", Delta(5, {0, 2, 3, 4, 5}, 0x22, 6));
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  ASSERT_TRUE(f.filtered);
  EXPECT_EQ(f.out_rel, "db/t.ibd.xbapplied");
  for (uint32_t no : {0u, 2u, 3u, 4u, 5u}) EXPECT_EQ(Page(no), Str(MakePage(5, no, 0x22, 6))) << no;
  EXPECT_EQ(Page(1), Str(MakePage(5, 1, 0x11, 4)));  // not in the delta
  auto size = util::File::OpenRead(data_ + "/db/t.ibd")->Size();
  EXPECT_EQ(*size, 6u * kPs);
  auto rec = prepare::ParseAppliedDelta(f.record, "record");
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_EQ(rec->space_id, 5u);
  EXPECT_EQ(rec->pages, (std::vector<uint32_t>{0, 2, 3, 4, 5}));
  EXPECT_FALSE(util::PathExists(staging_ + "/db/t.ibd.delta"));
  EXPECT_NE(d.Summary(1).find("1 deltas"), std::string::npos) << d.Summary(1);
}

TEST_F(DirectDeltaTest, ADeltaOfATableReCreatedBetweenTheBackupsIsStagedWhole) {
  DirectDeltas d(data_, 2);
  d.Open(1, kPs, prepare::LogDdl{});
  const std::string delta = Delta(8, {0, 1, 2}, 0x33, 3);  // db/t is space 8 now
  Fed f = Feed(d, 1, staging_, "db/t.ibd.delta", delta);
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  EXPECT_TRUE(f.record.empty());  // an empty record stands for nothing
  auto staged = util::ReadSmallFile(staging_ + "/db/t.ibd.delta", 1 << 20);
  ASSERT_TRUE(staged.ok());
  EXPECT_EQ(*staged, delta);
  EXPECT_EQ(Page(0), Str(MakePage(5, 0, 0x11, 4)));  // the datadir's file untouched
  EXPECT_NE(d.Summary(1).find("1 staged"), std::string::npos) << d.Summary(1);
}

TEST_F(DirectDeltaTest, TablesTheLogBeforeChangesOtherwiseAndOtherFilesAreStaged) {
  DirectDeltas d(data_, 3);
  prepare::LogDdl ddl;
  ddl.names.insert("db/t.ibd");
  d.Open(1, kPs, ddl);
  EXPECT_FALSE(Feed(d, 1, staging_, "db/t.ibd.delta", Delta(5, {1}, 0x22, 0)).filtered);
  ddl = {};
  ddl.spaces.insert(5);
  d.Open(2, kPs, ddl);
  EXPECT_FALSE(Feed(d, 2, staging_, "db/t.ibd.delta", Delta(5, {1}, 0x22, 0)).filtered);
  d.Open(2, kPs, prepare::LogDdl{});  // the first call decided
  EXPECT_FALSE(Feed(d, 2, staging_, "db/t.ibd.delta", Delta(5, {1}, 0x22, 0)).filtered);
  // Not a table's delta; a table the datadir does not have; the full backup's stream.
  EXPECT_FALSE(Feed(d, 2, staging_, "ibdata1.delta", "").filtered);
  EXPECT_FALSE(Feed(d, 2, staging_, "db/t.ibd.meta", "").filtered);
  EXPECT_FALSE(Feed(d, 2, staging_, "db/u.ibd.delta", "").filtered);
  EXPECT_FALSE(Feed(d, 0, staging_, "db/t.ibd.delta", "").filtered);
  EXPECT_EQ(Page(1), Str(MakePage(5, 1, 0x11, 4)));
}

TEST_F(DirectDeltaTest, ADeltaArrivingLongBeforeItsGateIsStagedAndOurRecordsNamesAreRefused) {
  DirectDeltas d(data_, 3);
  auto factory = d.Filter(1, staging_, std::chrono::milliseconds(20));
  std::string out_rel;
  auto f = factory("db/t.ibd.delta", &out_rel, [](const uint8_t*, size_t) { return Status::Ok(); });
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(*f);  // not decided within 20 ms: staged
  EXPECT_NE(d.Summary(1).find("1 staged"), std::string::npos) << d.Summary(1);
  // A stream that brings a record of its own (in any stream, the full backup's too).
  for (size_t k : {0, 1}) {
    auto bad = d.Filter(k, staging_)("db/t.ibd.xbapplied", &out_rel,
                                     [](const uint8_t*, size_t) { return Status::Ok(); });
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("a name xbak keeps for its own records"), std::string::npos);
  }
}

TEST_F(DirectDeltaTest, AnEmptyBlockBeforeTheLastIsStagedWhole) {
  DirectDeltas d(data_, 2);
  d.Open(1, kPs, prepare::LogDdl{});
  std::string empty(kPs, '\0');
  util::StoreBE32(reinterpret_cast<uint8_t*>(empty.data()), innodb::kDeltaMagicMore);
  util::StoreBE32(reinterpret_cast<uint8_t*>(empty.data()) + 4, innodb::kDeltaListEnd);
  const std::string delta = empty + Delta(5, {1}, 0x22, 0);
  Fed f = Feed(d, 1, staging_, "db/t.ibd.delta", delta);
  ASSERT_TRUE(f.status.ok()) << f.status.message();
  EXPECT_TRUE(f.record.empty());
  auto staged = util::ReadSmallFile(staging_ + "/db/t.ibd.delta", 1 << 20);
  ASSERT_TRUE(staged.ok());
  EXPECT_EQ(*staged, delta);
  EXPECT_EQ(Page(1), Str(MakePage(5, 1, 0x11, 4)));
}

TEST_F(DirectDeltaTest, ADeltaWaitsForItsGateAndCloseAllStagesEverything) {
  DirectDeltas d(data_, 3);
  std::optional<Fed> f;
  std::thread reader([&] { f = Feed(d, 2, staging_, "db/t.ibd.delta", Delta(5, {1}, 0x22, 0)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(f.has_value());  // waiting for step 1's deltas and markers
  d.CloseAll();
  reader.join();
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->filtered);
}

TEST_F(DirectDeltaTest, ACorruptPageOrACutDeltaIsAnErrorNamingItAndTheByte) {
  DirectDeltas d(data_, 2);
  d.Open(1, kPs, prepare::LogDdl{});
  std::string delta = Delta(5, {1, 2}, 0x22, 0);
  delta[2 * kPs + 100] ^= 1;  // page 2: the block's header, page 1, then it
  Fed f = Feed(d, 1, staging_, "db/t.ibd.delta", delta);
  ASSERT_FALSE(f.status.ok());
  EXPECT_NE(f.status.message().find("db/t.ibd.delta: page 2"), std::string::npos) << f.status.message();
  EXPECT_NE(f.status.message().find("byte 8192 of the delta"), std::string::npos) << f.status.message();
  f = Feed(d, 1, staging_, "db/t.ibd.delta", Delta(5, {1, 2}, 0x22, 0).substr(0, 2 * kPs + 10));
  ASSERT_FALSE(f.status.ok());
  EXPECT_NE(f.status.message().find("cut short"), std::string::npos) << f.status.message();
  // Page 3 of another tablespace after a first page of this one.
  std::string mixed = Delta(5, {1, 3}, 0x22, 0);
  const auto other = MakePage(6, 3, 0x22);
  mixed.replace(2 * kPs, kPs, Str(other));
  f = Feed(d, 1, staging_, "db/t.ibd.delta", mixed);
  ASSERT_FALSE(f.status.ok());
  EXPECT_NE(f.status.message().find("page 3 is of space 6, not 5"), std::string::npos) << f.status.message();
}

}  // namespace
}  // namespace xbak::restore
