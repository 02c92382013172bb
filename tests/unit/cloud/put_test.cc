// xbcloud put over the posix driver: objects, sidecars, manifest, refusals.
#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

TEST_F(CloudTest, RoundTripRebuildsEveryFile) {
  std::string stream = SampleStream();
  PutStats ps;
  ASSERT_TRUE(Put("b1", stream, &ps).ok());
  EXPECT_EQ(ps.files, 3u);
  EXPECT_GT(ps.objects, 4u);  // the big file was cut into several objects
  EXPECT_TRUE(util::PathExists(Path("b1/xbcloud.manifest")));
  EXPECT_TRUE(util::PathExists(Path("b1/db/big.ibd.00000000000000000000")));
  EXPECT_TRUE(util::PathExists(Path("b1/db/big.ibd.00000000000000000000.md5")));
  auto got = Get(GetOpts("b1"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(Files(*got), Files(stream));
}

TEST_F(CloudTest, SidecarsAreMd5sumFormat) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::string key = "b1/db/small.frm.00000000000000000000";
  auto body = util::ReadSmallFile(Path(key));
  auto sidecar = util::ReadSmallFile(Path(key + ".md5"));
  ASSERT_TRUE(body.ok() && sidecar.ok());
  EXPECT_EQ(*sidecar, storage::Md5Hex(storage::Md5(*body)) + "  small.frm.00000000000000000000\n");
}

TEST_F(CloudTest, PutRefusesAnExistingName) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  Status s = Put("b1", SampleStream());
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(s.message().find("already exists"), std::string::npos);
  // Nor a backup being deleted, nor one that would hold another.
  ASSERT_TRUE(util::MakeDirs(Path("b2")).ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b2/xbcloud.manifest"), TombstoneText(1)).ok());
  s = Put("b2", SampleStream());
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(s.message().find("xbcloud delete b2"), std::string::npos) << s.message();
  s = Put("b1/inner", SampleStream());  // inside a backup
  EXPECT_EQ(s.code(), ErrorCode::kAlreadyExists);
  EXPECT_NE(s.message().find("inside backup b1"), std::string::npos) << s.message();
  ASSERT_TRUE(Put("b3/inner", SampleStream()).ok());
  EXPECT_EQ(Put("b3", SampleStream()).code(), ErrorCode::kAlreadyExists);
}

// An interrupted put (here: its stream cut short) run again with the same
// name sends only what is missing, removes what the new stream does not
// have, and completes; a complete backup is still refused.
TEST_F(CloudTest, PutResumesAnInterruptedPut) {
  const std::string stream = SampleStream();
  // A cut stream stores some objects and no manifest.
  ASSERT_EQ(Put("b1", stream.substr(0, stream.size() - EChunk("db/big.ibd").size() - EChunk("empty").size()))
                .code(),
            ErrorCode::kCorrupt);
  EXPECT_TRUE(util::PathExists(Path("b1/xbcloud.started")));
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
  // What a put killed later would have left: objects of a whole put (their
  // sidecars too), one of them altered, and objects this stream lacks.
  ASSERT_TRUE(Put("b0", stream).ok());
  for (std::string key : {"db/big.ibd.00000000000000000001", "db/big.ibd.00000000000000000002",
                          "db/small.frm.00000000000000000000"}) {
    for (std::string k : {key, key + ".md5"}) {
      ASSERT_TRUE(util::WriteFileAtomic(Path("b1/" + k), *util::ReadSmallFile(Path("b0/" + k))).ok());
    }
  }
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/db/big.ibd.00000000000000000002"), "damaged").ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/junk.00000000000000000000"), "x").ok());
  ASSERT_TRUE(util::WriteFileAtomic(Path("b1/junk.00000000000000000000.md5"), "x").ok());

  PutStats ps;
  ASSERT_TRUE(Put("b1", stream, &ps).ok());
  EXPECT_EQ(ps.objects_skipped, 3u);  // big 0 (from the cut put) and 1, small; big 2 is sent again
  EXPECT_EQ(ps.stale_deleted, 2u);    // junk and its sidecar
  EXPECT_FALSE(util::PathExists(Path("b1/junk.00000000000000000000")));
  auto got = Get(GetOpts("b1"));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(Files(*got), Files(stream));
  EXPECT_EQ(Put("b1", stream).code(), ErrorCode::kAlreadyExists);
}

// The manifest's summary: times, the files' bytes, and the metadata files.
TEST_F(CloudTest, PutSummarizesTheBackupInItsManifest) {
  const std::string checkpoints = "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 12345\n";
  std::string stream = PChunk("xtrabackup_checkpoints", checkpoints.substr(0, 10), 0) + SampleStream();
  stream += PChunk("xtrabackup_checkpoints", checkpoints.substr(10), 10) + EChunk("xtrabackup_checkpoints");
  const int64_t before = ::time(nullptr);
  ASSERT_TRUE(Put("b1", stream).ok());
  ManifestSummary sum;
  auto entries = ParseManifest(*util::ReadSmallFile(Path("b1/xbcloud.manifest")), &sum);
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  EXPECT_GE(sum.started, before);
  EXPECT_GE(sum.finished, sum.started);
  EXPECT_EQ(sum.file_bytes, (300u << 10) + 1000u + checkpoints.size());
  ASSERT_NE(sum.File("xtrabackup_checkpoints"), nullptr);
  EXPECT_EQ(*sum.File("xtrabackup_checkpoints"), checkpoints);
  EXPECT_EQ(sum.files.size(), 1u);
}

// What happens to NAME/xbcloud.started while the put runs, at its first
// data object: a delete removes it, or a second put of NAME replaces it.
class MarkerChangingStore final : public ForwardingStore {
 public:
  MarkerChangingStore(storage::ObjectStore& inner, std::string root, bool remove)
      : ForwardingStore(inner), root_(std::move(root)), remove_(remove) {}
  void Put(const std::string& key, Body body, const storage::Md5Digest& md5,
           std::function<void(Status)> done) override {
    if (!done_ && key.find(".0000") != std::string::npos) {
      done_ = true;
      const std::string marker = root_ + "/b1/xbcloud.started";
      if (remove_) {
        std::filesystem::remove(marker);
      } else {
        EXPECT_TRUE(util::WriteFileAtomic(marker, "started 1\ntoken 0123456789abcdef\n").ok());
      }
    }
    ForwardingStore::Put(key, std::move(body), md5, std::move(done));
  }

 private:
  std::string root_;
  bool remove_;
  bool done_ = false;
};

TEST_F(CloudTest, APutWhoseNameWasTakenMeanwhileWritesNoManifest) {
  for (bool remove : {true, false}) {
    MarkerChangingStore store(*store_, dir_.path(), remove);
    auto fd = MemFd(SampleStream());
    Status s = CloudPut(loop_, store, {fd.get()}, {"s"}, PutOpts("b1"));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(remove ? "was deleted while it was being put" : "another put of b1 started"),
              std::string::npos)
        << s.message();
    EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
    std::filesystem::remove_all(Path("b1"));
  }
}

// Objects an interrupted put stored under other options (here: no
// encryption, now with) are sent again, whatever their bytes.
TEST_F(CloudTest, AResumedPutUnderOtherOptionsSendsEverything) {
  struct Encrypting final : ForwardingStore {
    using ForwardingStore::ForwardingStore;
    std::string ObjectOptions() const override { return "sse=AES256"; }
  };
  const std::string stream = SampleStream();
  ASSERT_EQ(Put("b1", stream.substr(0, stream.size() - EChunk("db/big.ibd").size() - EChunk("empty").size()))
                .code(),
            ErrorCode::kCorrupt);
  Encrypting store(*store_);
  auto fd = MemFd(stream);
  PutStats ps;
  ASSERT_TRUE(CloudPut(loop_, store, {fd.get()}, {"s"}, PutOpts("b1"), &ps).ok());
  EXPECT_EQ(ps.objects_skipped, 0u);
  EXPECT_NE(util::ReadSmallFile(Path("b1/xbcloud.started"))->find("options sse=AES256"), std::string::npos);
}

TEST_F(CloudTest, NotXbstreamFailsWithoutMarker) {
  Status s = Put("b1", "this is not an xbstream at all, just some text........");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("byte 0"), std::string::npos) << s.message();
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
}

TEST_F(CloudTest, TruncatedStreamIsNotComplete) {
  std::string stream = SampleStream();
  // Cut before the big file's end chunk: the marker must not be written.
  Status s =
      Put("b1", stream.substr(0, stream.size() - EChunk("db/big.ibd").size() - EChunk("empty").size()));
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("db/big.ibd"), std::string::npos) << s.message();
  EXPECT_FALSE(util::PathExists(Path("b1/xbcloud.manifest")));
}

TEST_F(CloudTest, ManyFilesAndTinyBudgetStillComplete) {
  // More open files than the memory share holds: readers must flush early
  // instead of deadlocking.
  std::string s;
  for (int round = 0; round < 4; round++) {
    for (int f = 0; f < 40; f++)
      s += PChunk("f" + std::to_string(f), Pattern(8 << 10, f + round), round * (8 << 10));
  }
  for (int f = 0; f < 40; f++) s += EChunk("f" + std::to_string(f));
  auto o = PutOpts("many");
  o.memory_per_stream = 1;  // rounded up to 2 objects
  auto fd = MemFd(s);
  ASSERT_TRUE(CloudPut(loop_, *store_, {fd.get()}, {"s"}, o).ok());
  auto got = Get(GetOpts("many"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Files(*got), Files(s));
}

}  // namespace
}  // namespace xbak::cloud
