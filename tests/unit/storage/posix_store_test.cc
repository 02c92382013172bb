#include "xbak/storage/posix_store.h"

#include <gtest/gtest.h>

#include "storage/read_range.h"
#include "util/temp_dir.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/s3_store.h"

namespace xbak::storage {
namespace {

TEST(Md5Test, KnownVectors) {
  EXPECT_EQ(Md5Hex(Md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5Base64(Md5("")), "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(Md5Hex(Md5("The quick brown fox jumps over the lazy dog")), "9e107d9d372bb6826bd81d3542a419d6");
}

TEST(UriEncodeTest, AwsRules) {
  EXPECT_EQ(UriEncode("a-b_c.d~e/f g+h", true), "a-b_c.d~e/f%20g%2Bh");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("\xc3\xa4", false), "%C3%A4");
}

TEST(S3ConfigTest, ClearErrors) {
  EventLoop loop;
  S3Config c;
  auto keys = std::make_shared<Credentials>(nullptr, AwsCredentials{"k", "s", "", 0}, 300);
  c.credentials = keys;
  EXPECT_NE(MakeS3Store(loop, c).status().message().find("no bucket"), std::string::npos);
  c.bucket = "Bad_Bucket";
  EXPECT_NE(MakeS3Store(loop, c).status().message().find("not a valid bucket name"), std::string::npos);
  c.bucket = "good";
  c.endpoint = "ftp://127.0.0.1:9000";
  EXPECT_NE(MakeS3Store(loop, c).status().message().find("not an http(s) URL"), std::string::npos);
  c.endpoint = "http://127.0.0.1:9000/path";
  EXPECT_FALSE(MakeS3Store(loop, c).ok());
  c.endpoint = "http://127.0.0.1:9000";
  c.credentials = nullptr;
  auto r = MakeS3Store(loop, c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no S3 credentials"), std::string::npos);
  c.credentials = keys;
  EXPECT_TRUE(MakeS3Store(loop, c).ok());
}

TEST(PosixStoreTest, PutGetListDelete) {
  xbak::testing::TempDir dir;
  EventLoop loop;
  auto store = MakePosixStore(loop, dir.path());
  auto run = [&](auto start) {
    start();
    loop.Run();
  };
  auto body = std::make_shared<const std::string>("hello");
  Status put;
  run([&] {
    store->Put("a/b.1", body, Md5(*body), [&](Status s) {
      put = s;
      loop.Stop();
    });
  });
  EXPECT_TRUE(put.ok()) << put.message();
  run([&] {
    store->Put("a/bad", body, Md5("other"), [&](Status s) {
      put = s;
      loop.Stop();
    });
  });
  EXPECT_EQ(put.code(), ErrorCode::kCorrupt);
  run([&] {
    store->Put("../x", body, Md5(*body), [&](Status s) {
      put = s;
      loop.Stop();
    });
  });
  EXPECT_EQ(put.code(), ErrorCode::kInvalidArgument);
  Result<std::string> got = Status();
  run([&] {
    store->Get("a/b.1", [&](Result<std::string> r) {
      got = std::move(r);
      loop.Stop();
    });
  });
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "hello");
  run([&] {
    store->Get("a/none", [&](Result<std::string> r) {
      got = std::move(r);
      loop.Stop();
    });
  });
  EXPECT_EQ(got.status().code(), ErrorCode::kNotFound);
  auto get_range = [&](const std::string& key, ByteRange range, uint64_t piece_bytes = 2) {
    return testing::ReadRange(loop, *store, key, range, piece_bytes);
  };
  auto r = get_range("a/b.1", {1, 3});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.Bytes(), "ell");
  EXPECT_EQ(r.pieces, (std::vector<std::string>{"el", "l"}));  // pieces of 2, in order
  EXPECT_EQ(r.indexes, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(r.done_after_pieces);
  r = get_range("a/b.1", {0, 5}, 1 << 20);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.pieces, (std::vector<std::string>{"hello"}));
  r = get_range("a/b.1", {4, 1});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.Bytes(), "o");
  r = get_range("a/b.1", {3, 3});  // past the end
  EXPECT_EQ(r.status.code(), ErrorCode::kCorrupt);
  EXPECT_TRUE(r.pieces.empty());
  r = get_range("a/b.1", {0, 0});
  EXPECT_FALSE(r.status.ok());
  r = get_range("a/b.1", {0, 1}, 0);
  EXPECT_FALSE(r.status.ok());
  r = get_range("a/none", {0, 1});
  EXPECT_EQ(r.status.code(), ErrorCode::kNotFound);
  Result<std::string> first = Status();
  for (uint64_t max : {3u, 5u, 100u}) {
    run([&] {
      store->GetFirst("a/b.1", max, [&](Result<std::string> r) {
        first = std::move(r);
        loop.Stop();
      });
    });
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, std::string("hello").substr(0, max));
  }
  run([&] {
    store->GetFirst("a/none", 5, [&](Result<std::string> r) {
      first = std::move(r);
      loop.Stop();
    });
  });
  EXPECT_EQ(first.status().code(), ErrorCode::kNotFound);
  Result<ListResult> list = Status();
  run([&] {
    store->List({"a/", "", false}, [&](Result<ListResult> r) {
      list = std::move(r);
      loop.Stop();
    });
  });
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "a/b.1");
  EXPECT_EQ(list->objects[0].size, 5u);
  EXPECT_EQ(list->objects[0].md5, Md5("hello"));
  EXPECT_GT(list->objects[0].modified, 0);
  Status del;
  run([&] {
    store->Delete({"a/b.1", "a/never"}, [&](Status s) {
      del = s;
      loop.Stop();
    });
  });
  EXPECT_TRUE(del.ok());
  EXPECT_EQ(store->stats().bytes_sent, 5u);
}

// With delimit, the keys below a '/' come back as one prefix each, and pages
// continue after a prefix as after a key (1,000 entries to a page).
TEST(PosixStoreTest, ListByPrefixPages) {
  xbak::testing::TempDir dir;
  EventLoop loop;
  auto store = MakePosixStore(loop, dir.path());
  auto body = std::make_shared<const std::string>("x");
  std::vector<std::string> keys = {"r/top.0", "r/z/deep/a.0"};
  for (int i = 0; i < 1200; i++) {
    char name[32];
    std::snprintf(name, sizeof name, "r/b%04d/", i);
    keys.push_back(std::string(name) + "f.0");
    keys.push_back(std::string(name) + "d/g.0");
  }
  size_t stored = 0;
  for (const auto& k : keys) {
    store->Put(k, body, Md5(*body), [&](Status s) {
      EXPECT_TRUE(s.ok()) << s.message();
      if (++stored == keys.size()) loop.Stop();
    });
  }
  loop.Run();
  std::vector<std::string> objects, prefixes;
  std::string token;
  int pages = 0;
  do {
    Result<ListResult> page = Status();
    store->List({"r/", token, true}, [&](Result<ListResult> r) {
      page = std::move(r);
      loop.Stop();
    });
    loop.Run();
    ASSERT_TRUE(page.ok()) << page.status().message();
    for (auto& o : page->objects) objects.push_back(o.key);
    for (auto& p : page->prefixes) prefixes.push_back(p);
    token = page->next_token;
    pages++;
  } while (!token.empty());
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(objects, std::vector<std::string>{"r/top.0"});
  ASSERT_EQ(prefixes.size(), 1201u);
  EXPECT_EQ(prefixes.front(), "r/b0000/");
  EXPECT_EQ(prefixes[1199], "r/b1199/");
  EXPECT_EQ(prefixes.back(), "r/z/");
}

}  // namespace
}  // namespace xbak::storage
