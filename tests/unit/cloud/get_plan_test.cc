// PlanGet: which objects a get downloads, onto which output, in what order,
// and in which download mode.
#include "get_plan.h"

#include <map>
#include <set>

#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

class GetPlanTest : public CloudTest {
 protected:
  Result<GetPlan> Plan(const std::string& name, size_t outputs, bool allow_incomplete = false) {
    auto o = GetOpts(name);
    o.allow_incomplete = allow_incomplete;
    return PlanGet(loop_, *store_, o, outputs);
  }
};

TEST_F(GetPlanTest, EachFileOnOneOutputAndTheOrderTakesFromEveryOutputInTurn) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  auto plan = Plan("b1", 2);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->files, 3u);
  ASSERT_EQ(plan->output_counts.size(), 2u);
  EXPECT_EQ(plan->output_counts[0] + plan->output_counts[1], plan->order.size());
  std::map<std::string, std::set<size_t>> outputs_of;
  std::vector<size_t> next_pos(2, 0);
  for (size_t i = 0; i < plan->order.size(); i++) {
    const Object& o = plan->order[i];
    outputs_of[o.entry.path].insert(o.output);
    // Within an output, places count up from 0 in download order.
    EXPECT_EQ(o.output_pos, next_pos[o.output]++);
    // While both outputs have objects left, they alternate.
    if (i > 0 && i < 2 * std::min(plan->output_counts[0], plan->output_counts[1])) {
      EXPECT_NE(o.output, plan->order[i - 1].output) << "at " << i;
    }
  }
  for (const auto& [path, outs] : outputs_of) EXPECT_EQ(outs.size(), 1u) << path;
  // The big file (300 KiB) alone on one output; the two small ones on the other.
  EXPECT_NE(*outputs_of["db/big.ibd"].begin(), *outputs_of["db/small.frm"].begin());
  EXPECT_EQ(*outputs_of["db/small.frm"].begin(), *outputs_of["empty"].begin());
  // A file's objects keep their order.
  uint64_t seq = 0;
  for (const auto& o : plan->order) {
    if (o.entry.path == "db/big.ibd") {
      EXPECT_EQ(o.entry.seq, seq++);
    }
  }
}

// The file whose presence says a backup is complete comes last, under
// either name, even where a database's files sort after it: a get cut short
// must not leave an extraction that looks whole.
TEST_F(GetPlanTest, TheCheckpointsFileIsDownloadedLast) {
  for (const std::string cp : {"xtrabackup_checkpoints", "mariadb_backup_checkpoints"}) {
    const std::string stream = PChunk("aaa/t.ibd", Pattern(1000, 1), 0) + EChunk("aaa/t.ibd") +
                               PChunk(cp, "backup_type = full-backuped\n", 0) + EChunk(cp) +
                               PChunk("zoo/t.ibd", Pattern(3000, 2), 0) + EChunk("zoo/t.ibd");
    const std::string name = "cp-" + cp.substr(0, 3);
    ASSERT_TRUE(Put(name, stream).ok());
    for (size_t outputs : {size_t{1}, size_t{2}}) {
      auto plan = Plan(name, outputs);
      ASSERT_TRUE(plan.ok()) << plan.status().message();
      ASSERT_EQ(plan->order.size(), 3u);
      EXPECT_EQ(plan->order.back().entry.path, cp) << outputs << " output(s)";
      const Object& last = plan->order.back();
      EXPECT_EQ(last.output_pos + 1, plan->output_counts[last.output]) << "last on its output too";
    }
  }
}

TEST_F(GetPlanTest, DownloadModeFollowsWhatTheManifestHolds) {
  ASSERT_TRUE(Put("v2", SampleStream()).ok());
  ASSERT_TRUE(Put("v1", SampleStream(), nullptr, /*digest_piece_bytes=*/0).ok());
  auto v2 = Plan("v2", 1);
  auto v1 = Plan("v1", 1);
  ASSERT_TRUE(v2.ok() && v1.ok());
  EXPECT_EQ(v2->piece_digest_bytes, uint64_t{16} << 10);  // checked by piece
  EXPECT_EQ(v1->piece_digest_bytes, 0u);                  // checked whole
  for (const auto& o : v1->order) EXPECT_TRUE(o.md5_known);
}

TEST_F(GetPlanTest, WithoutAManifestItIsRefusedOrListedWithMd5sFromSidecars) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::filesystem::remove(Path("b1/xbcloud.manifest"));
  auto refused = Plan("b1", 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(refused.status().message().find("--allow-incomplete"), std::string::npos);
  auto listed = Plan("b1", 1, /*allow_incomplete=*/true);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(listed->files, 3u);
  EXPECT_EQ(listed->piece_digest_bytes, 0u);  // no piece MD5s without the manifest
  for (const auto& o : listed->order) EXPECT_FALSE(o.md5_known);
}

TEST_F(GetPlanTest, AFileIsCutAtItsFirstObjectWithoutASidecar) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::filesystem::remove(Path("b1/xbcloud.manifest"));
  std::filesystem::remove(Path("b1/db/big.ibd.00000000000000000002.md5"));
  auto plan = Plan("b1", 1, true);
  ASSERT_TRUE(plan.ok());
  uint64_t big_objects = 0;
  for (const auto& o : plan->order) big_objects += o.entry.path == "db/big.ibd";
  EXPECT_EQ(big_objects, 2u);  // objects 0 and 1; 2 has no sidecar, so 3 and on cannot follow
}

TEST_F(GetPlanTest, AnUnknownBackupOrFileIsNamed) {
  auto none = Plan("nothing", 1, true);
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(none.status().message().find("nothing"), std::string::npos);
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  auto o = GetOpts("b1");
  o.files = {"db/small.frm", "db/missing.ibd"};
  auto plan = PlanGet(loop_, *store_, o, 1);
  EXPECT_EQ(plan.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(plan.status().message().find("db/missing.ibd"), std::string::npos);
}

}  // namespace
}  // namespace xbak::cloud
