// What the cloud layer's tests share: a sample stream, what an extractor
// makes of a stream, and a fixture with put / get over the posix driver (the
// cloud logic without a server; the S3 driver is exercised against MinIO by
// tests/integration/t_xbcloud.sh).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "stream/stream_test_util.h"
#include "xbak/cloud/get.h"
#include "xbak/cloud/layout.h"
#include "xbak/cloud/put.h"
#include "xbak/cloud/remove.h"
#include "xbak/storage/posix_store.h"

namespace xbak::cloud {

using xbak::testing::EChunk;
using xbak::testing::MemFd;
using xbak::testing::Pattern;
using xbak::testing::PChunk;
using xbak::testing::ReadAllFromStart;
using xbak::testing::TempDir;

// Three files interleaved; "big" spans several objects at a 64 KiB object size.
inline std::string SampleStream() {
  std::string s;
  std::string big = Pattern(300 << 10, 1), small = Pattern(1000, 2);
  size_t off = 0;
  for (size_t i = 0; off < big.size(); i++) {
    size_t n = std::min<size_t>(20 << 10, big.size() - off);
    s += PChunk("db/big.ibd", big.substr(off, n), off);
    off += n;
    if (i == 3) s += PChunk("db/small.frm", small, 0) + EChunk("db/small.frm");
  }
  s += EChunk("db/big.ibd") + EChunk("empty");
  return s;
}

// What the extractor would make of a stream: file -> content.
inline std::map<std::string, std::string> Files(const std::string& stream) {
  TempDir t;
  auto fd = MemFd(stream);
  EXPECT_TRUE(stream::ExtractStream(fd.get(), {t.path(), false, false, {}, {}}).ok());
  return xbak::testing::TreeContents(t.path());
}

// Forwards every operation to another store; test stores change
// only what they test.
class ForwardingStore : public storage::ObjectStore {
 public:
  explicit ForwardingStore(storage::ObjectStore& inner) : inner_(inner) {}
  void Put(const std::string& key, Body body, const storage::Md5Digest& md5,
           std::function<void(Status)> done) override {
    inner_.Put(key, std::move(body), md5, std::move(done));
  }
  void Get(const std::string& key, std::function<void(Result<std::string>)> done,
           std::string range) override {
    inner_.Get(key, std::move(done), std::move(range));
  }
  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    inner_.GetFirst(key, max_bytes, std::move(done));
  }
  void GetRange(const std::string& key, storage::ByteRange range, RangeReader reader) override {
    inner_.GetRange(key, range, std::move(reader));
  }
  void ResumeHeld() override { inner_.ResumeHeld(); }
  void List(const storage::ListQuery& q, std::function<void(Result<storage::ListResult>)> done) override {
    inner_.List(q, std::move(done));
  }
  void Delete(const std::vector<std::string>& keys, std::function<void(Status)> done) override {
    inner_.Delete(keys, std::move(done));
  }
  void CancelAll() override { inner_.CancelAll(); }
  storage::StoreStats stats() const override { return inner_.stats(); }
  std::string Describe() const override { return inner_.Describe(); }

 protected:
  storage::ObjectStore& inner_;
};

class CloudTest : public ::testing::Test {
 protected:
  PutOptions PutOpts(const std::string& name) {
    PutOptions o;
    o.name = name;
    o.object_size = 64 << 10;
    o.digest_piece_bytes = 16 << 10;  // 4 pieces per object
    o.parallel = 3;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  GetOptions GetOpts(const std::string& name) {
    GetOptions o;
    o.name = name;
    o.parallel = 3;
    o.verify_backoff_s = 0.01;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  // digest_piece_bytes 0: a version 1 manifest (objects checked whole).
  Status Put(const std::string& name, const std::string& stream, PutStats* stats = nullptr,
             uint64_t digest_piece_bytes = 16 << 10) {
    auto fd = MemFd(stream);
    auto o = PutOpts(name);
    o.digest_piece_bytes = digest_piece_bytes;
    return CloudPut(loop_, *store_, {fd.get()}, {"test stream"}, o, stats);
  }
  Result<std::string> Get(const GetOptions& o) {
    auto out = MemFd("");
    Status s = CloudGet(loop_, *store_, {out.get()}, {"test output"}, o);
    if (!s.ok()) return s;
    return ReadAllFromStart(out.get());
  }
  std::string Path(const std::string& key) { return dir_ / key; }

  TempDir dir_;
  storage::EventLoop loop_;
  std::unique_ptr<storage::ObjectStore> store_ = storage::MakePosixStore(loop_, dir_.path());
};

}  // namespace xbak::cloud
