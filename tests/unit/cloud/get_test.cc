// xbcloud get over the posix driver: both download modes (checked whole,
// checked by piece), outputs, ranges, budgets, corruption and retries.
#include "cloud/cloud_test_util.h"

namespace xbak::cloud {
namespace {

TEST_F(CloudTest, MultipleOutputsKeepEachFileOnOneStream) {
  std::string stream = SampleStream();
  ASSERT_TRUE(Put("b1", stream).ok());
  auto o1 = MemFd(""), o2 = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, *store_, {o1.get(), o2.get()}, {"o1", "o2"}, GetOpts("b1")).ok());
  auto f1 = Files(ReadAllFromStart(o1.get())), f2 = Files(ReadAllFromStart(o2.get()));
  EXPECT_FALSE(f1.empty());
  EXPECT_FALSE(f2.empty());
  f1.merge(f2);
  EXPECT_EQ(f1, Files(stream));
}

TEST_F(CloudTest, GetSelectedFiles) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  auto o = GetOpts("b1");
  o.files = {"db/small.frm"};
  auto got = Get(o);
  ASSERT_TRUE(got.ok());
  auto files = Files(*got);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files["db/small.frm"], Pattern(1000, 2));
  o.files = {"nope"};
  EXPECT_EQ(Get(o).status().code(), ErrorCode::kNotFound);
}

TEST_F(CloudTest, IncompleteBackupIsRefusedThenReadWhenAllowed) {
  // What a put killed part way leaves: objects and sidecars, no marker, and
  // here not the last object of db/big.ibd (the one with its end chunk).
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::filesystem::remove(Path("b1/xbcloud.manifest"));
  std::string last;
  for (const auto& e : std::filesystem::directory_iterator(Path("b1/db"))) {
    std::string n = e.path().filename().string();
    if (n.starts_with("big.ibd.") && !n.ends_with(".md5") && n > last) last = n;
  }
  ASSERT_FALSE(last.empty());
  std::filesystem::remove(Path("b1/db/" + last));
  auto got = Get(GetOpts("b1"));
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("incomplete"), std::string::npos);
  auto o = GetOpts("b1");
  o.allow_incomplete = true;
  got = Get(o);
  ASSERT_TRUE(got.ok()) << got.status().message();
  // What was stored with its sidecar comes back; the extractor then reports
  // the file whose end never made it.
  EXPECT_FALSE(got->empty());
  TempDir t;
  auto fd = MemFd(*got);
  Status x = stream::ExtractStream(fd.get(), {t.path(), false, false, {}, {}});
  EXPECT_EQ(x.code(), ErrorCode::kCorrupt);
  EXPECT_NE(x.message().find("db/big.ibd"), std::string::npos) << x.message();
}

TEST_F(CloudTest, CorruptObjectIsRetriedThenNamed) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::string key = "b1/db/big.ibd.00000000000000000001";
  auto body = util::ReadSmallFile(Path(key));
  ASSERT_TRUE(body.ok());
  std::string bad = *body;
  bad[bad.size() / 2] ^= 1;
  ASSERT_TRUE(util::WriteFileAtomic(Path(key), bad).ok());
  auto got = Get(GetOpts("b1"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(got.status().message().find(key), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("4 downloads"), std::string::npos) << got.status().message();
  // Checked by piece, the message names the bytes.
  size_t at = bad.size() / 2 / (16 << 10) * (16 << 10);
  EXPECT_NE(got.status().message().find("at bytes " + std::to_string(at) + "-"), std::string::npos)
      << got.status().message();
}

// Objects checked whole (a manifest without piece MD5s, as puts before
// version 2 wrote): the window and ranges bound what is held.

TEST_F(CloudTest, RangedGetHoldsOnlyItsWindow) {
  std::string stream = SampleStream();
  PutStats ps;
  ASSERT_TRUE(Put("b1", stream, &ps, 0).ok());
  ASSERT_TRUE(util::ReadSmallFile(Path("b1/xbcloud.manifest"))->starts_with("xbcloud-manifest 1\n"));
  auto o = GetOpts("b1");
  o.parallel = 12;
  o.min_range_bytes = 10 << 10;  // 64 KiB objects in 12 / 3 = 4 ranges
  o.piece_bytes = 4 << 10;       // (ranges are whole pieces)
  o.window_objects = 3;
  GetStats gs;
  auto out = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, *store_, {out.get()}, {"o"}, o, &gs).ok());
  EXPECT_EQ(Files(ReadAllFromStart(out.get())), Files(stream));
  EXPECT_EQ(gs.objects, ps.objects);
  EXPECT_GT(gs.requests, gs.objects + 10) << "the big objects were not fetched in ranges";
  EXPECT_LE(gs.peak_held_objects, 3u);
  EXPECT_GE(gs.peak_held_objects, 2u);
  uint64_t largest = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path() + "/b1")) {
    if (e.is_regular_file()) largest = std::max<uint64_t>(largest, e.file_size());
  }
  EXPECT_LE(gs.peak_held_bytes, 3 * largest);
  EXPECT_GE(gs.peak_held_bytes, largest);
  // One request at a time, objects in 16 KiB ranges hashed as they come.
  o.parallel = 1;
  o.range_bytes = 16 << 10;
  o.min_range_bytes = 4 << 10;
  auto out2 = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, *store_, {out2.get()}, {"o"}, o, &gs).ok());
  EXPECT_EQ(Files(ReadAllFromStart(out2.get())), Files(stream));
  EXPECT_GT(gs.requests, gs.objects + 10);
  // The same with every object whole.
  o.parallel = 12;
  o.range_bytes = 0;
  o.min_range_bytes = 1 << 20;
  auto out3 = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, *store_, {out3.get()}, {"o"}, o, &gs).ok());
  EXPECT_EQ(gs.requests, gs.objects);
}

TEST_F(CloudTest, CorruptObjectFetchedInRangesIsRetriedThenNamed) {
  ASSERT_TRUE(Put("b1", SampleStream(), nullptr, 0).ok());  // checked whole
  std::string key = "b1/db/big.ibd.00000000000000000002";
  auto body = util::ReadSmallFile(Path(key));
  ASSERT_TRUE(body.ok());
  std::string bad = *body;
  bad[bad.size() - 3] ^= 0x40;  // in the last range
  ASSERT_TRUE(util::WriteFileAtomic(Path(key), bad).ok());
  auto o = GetOpts("b1");
  o.parallel = 4;
  o.window_objects = 2;  // 2 ranges per object
  o.min_range_bytes = 8 << 10;
  o.piece_bytes = 4 << 10;
  auto got = Get(o);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(got.status().message().find(key), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("4 downloads"), std::string::npos) << got.status().message();
  // Repaired: the same get succeeds.
  ASSERT_TRUE(util::WriteFileAtomic(Path(key), *body).ok());
  auto again = Get(o);
  EXPECT_TRUE(again.ok()) << again.status().message();
}

// Checked by piece, a get holds what is received and not yet written within
// its budget (and each output's share for the object its writer is on),
// far less than the objects it downloads, and fetches each object whole.

TEST_F(CloudTest, PieceCheckedGetKeepsToItsBudget) {
  std::string stream = SampleStream();
  PutStats ps;
  ASSERT_TRUE(Put("b1", stream, &ps, 4 << 10).ok());
  const std::string manifest = *util::ReadSmallFile(Path("b1/xbcloud.manifest"));
  ASSERT_TRUE(manifest.starts_with("xbcloud-manifest 3\n")) << manifest;
  ASSERT_NE(manifest.find("\npieces 4096\n"), std::string::npos) << manifest;
  for (int parallel : {1, 4, 16}) {
    auto o = GetOpts("b1");
    o.parallel = parallel;
    o.buffer_bytes = 16 << 10;  // 4 pieces; objects are 64 KiB
    GetStats gs;
    auto out = MemFd("");
    ASSERT_TRUE(CloudGet(loop_, *store_, {out.get()}, {"o"}, o, &gs).ok()) << parallel;
    EXPECT_EQ(Files(ReadAllFromStart(out.get())), Files(stream)) << parallel;
    EXPECT_EQ(gs.objects, ps.objects);
    EXPECT_EQ(gs.requests, gs.objects) << "objects fetched whole";
    EXPECT_GE(gs.peak_held_bytes, 4u << 10);
    EXPECT_LE(gs.peak_held_bytes, 2 * (16u << 10)) << parallel;
  }
  // With the budget of several objects, still right.
  auto o = GetOpts("b1");
  o.parallel = 8;
  o.buffer_bytes = 1 << 20;
  auto got = Get(o);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Files(*got), Files(stream));
  // And in ranges.
  o.range_bytes = 8 << 10;
  o.min_range_bytes = 4 << 10;
  GetStats gs;
  auto out = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, *store_, {out.get()}, {"o"}, o, &gs).ok());
  EXPECT_EQ(Files(ReadAllFromStart(out.get())), Files(stream));
  EXPECT_GT(gs.requests, gs.objects + 10);
}

// The first read of `key` hands over piece `piece` with one bit flipped
// (what a corruption in transit looks like).
class FlipOnceStore final : public ForwardingStore {
 public:
  FlipOnceStore(storage::ObjectStore& inner, std::string key, size_t piece)
      : ForwardingStore(inner), key_(std::move(key)), piece_(piece) {}
  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    inner_.GetFirst(key, max_bytes, std::move(done));
  }
  void GetRange(const std::string& key, storage::ByteRange range, RangeReader reader) override {
    if (key == key_ && !flipped_) {
      flipped_ = true;
      reader.piece = [this, inner = std::move(reader.piece)](size_t i, std::string p) {
        if (i == piece_) p[p.size() / 2] ^= 0x10;
        inner(i, std::move(p));
      };
    }
    inner_.GetRange(key, range, std::move(reader));
  }

 private:
  const std::string key_;
  const size_t piece_;
  bool flipped_ = false;
};

// Every read reports its end `delay` seconds after its last byte, as an S3
// transfer may complete after its body was hashed and written.
class LateEndStore final : public ForwardingStore {
 public:
  LateEndStore(storage::ObjectStore& inner, storage::EventLoop& loop, double delay)
      : ForwardingStore(inner), loop_(loop), delay_(delay) {}
  void Get(const std::string& key, std::function<void(Result<std::string>)> done,
           std::string range) override {
    inner_.Get(
        key,
        [this, done = std::move(done)](Result<std::string> r) mutable {
          loop_.After(delay_, [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
        },
        std::move(range));
  }
  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    inner_.GetFirst(key, max_bytes, std::move(done));
  }
  void GetRange(const std::string& key, storage::ByteRange range, RangeReader reader) override {
    reader.done = [this, done = std::move(reader.done)](Status s) mutable {
      loop_.After(delay_, [done = std::move(done), s = std::move(s)]() mutable { done(s); });
    };
    inner_.GetRange(key, range, std::move(reader));
  }

 private:
  storage::EventLoop& loop_;
  const double delay_;
};

// The last download to end may be a request whose bytes were all written
// already: the get must finish then (it once waited forever there).

TEST_F(CloudTest, GetEndsWhenTheLastRequestEndsAfterTheLastWrite) {
  std::string stream = SampleStream();
  for (uint64_t digest_piece_bytes : {uint64_t{16} << 10, uint64_t{0}}) {  // by piece, then whole
    SCOPED_TRACE(digest_piece_bytes);
    std::string name = "b" + std::to_string(digest_piece_bytes);
    ASSERT_TRUE(Put(name, stream, nullptr, digest_piece_bytes).ok());
    LateEndStore late(*store_, loop_, 0.05);
    // A watchdog instead of a test that never ends: it stops the loop (the
    // get then returns) if the get has not ended by then.
    auto ended = std::make_shared<bool>(false);
    bool fired = false;
    loop_.After(30, [ended, &fired, this] {
      if (*ended) return;
      fired = true;
      loop_.Stop();
    });
    auto o = GetOpts(name);
    auto out = MemFd("");
    Status s = CloudGet(loop_, late, {out.get()}, {"o"}, o);
    *ended = true;
    ASSERT_FALSE(fired) << "the get did not end after its last request";
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(Files(ReadAllFromStart(out.get())), Files(stream));
  }
}

TEST_F(CloudTest, CorruptPieceIsFetchedAgainAlone) {
  std::string stream = SampleStream();
  ASSERT_TRUE(Put("b1", stream).ok());
  std::string key = "b1/db/big.ibd.00000000000000000001";
  FlipOnceStore flaky(*store_, key, 2);
  auto o = GetOpts("b1");
  GetStats gs;
  auto out = MemFd("");
  ASSERT_TRUE(CloudGet(loop_, flaky, {out.get()}, {"o"}, o, &gs).ok());
  std::string got = ReadAllFromStart(out.get());
  EXPECT_EQ(Files(got), Files(stream));
  EXPECT_EQ(gs.md5_retries, 1u);
  EXPECT_EQ(gs.requests, gs.objects) << "the retry is not counted as a request of its own";
  EXPECT_EQ(gs.bytes_downloaded, got.size() + (16u << 10)) << "only the bad piece came again";
}

TEST_F(CloudTest, MissingObjectIsNamed) {
  ASSERT_TRUE(Put("b1", SampleStream()).ok());
  std::string key = "b1/db/big.ibd.00000000000000000002";
  std::filesystem::remove(Path(key));
  auto got = Get(GetOpts("b1"));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(key), std::string::npos) << got.status().message();
}

}  // namespace
}  // namespace xbak::cloud
