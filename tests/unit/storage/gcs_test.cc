// The Google Cloud Storage driver against a loopback server that answers as
// each test says, and its JSON documents. What fake-gcs-server does is
// covered by tests/integration/t_xbcloud_gcs.sh.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "storage/fake_http.h"
#include "storage/read_range.h"
#include "xbak/storage/gcs_store.h"
#include "xbak/storage/md5.h"

namespace xbak::storage {
namespace {

class FixedTokens final : public GoogleTokens {
 public:
  Result<std::string> Get(int64_t) override { return std::string("tok-123"); }
  std::string Describe() const override { return "test tokens"; }
};

class GcsTest : public ::testing::Test {
 protected:
  std::unique_ptr<ObjectStore> Store(int port) {
    GcsConfig c;
    c.bucket = "backups";
    c.endpoint = "http://127.0.0.1:" + std::to_string(port);
    c.tokens = std::make_shared<FixedTokens>();
    c.storage_class = "NEARLINE";
    c.max_retries = 2;
    c.backoff_initial_s = 0.01;
    c.backoff_max_s = 0.02;
    auto s = MakeGcsStore(loop_, c);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s.value());
  }
  Status Put(ObjectStore& store, const std::string& key, const std::string& body) {
    Status out;
    store.Put(key, std::make_shared<const std::string>(body), Md5(body), [&](Status s) {
      out = s;
      loop_.Stop();
    });
    loop_.Run();
    return out;
  }
  EventLoop loop_;
};

HttpAnswer Json(const std::string& body, int status = 200) {
  return {"HTTP/1.1 " + std::to_string(status) +
              " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()),
          body};
}

TEST_F(GcsTest, PutIsAMultipartUploadWhoseMetadataCarriesTheMd5) {
  std::string body = "object bytes\r\n--not-the-boundary";
  body += std::string(1000, '\0');
  FakeHttp server([&](const HttpRequest&, int) {
    return Json(R"({"name":"n/a b","md5Hash":")" + Md5Base64(Md5(body)) + R"(","size":"1046"})");
  });
  auto store = Store(server.port());
  ASSERT_TRUE(Put(*store, "n/a b", body).ok());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].line, "POST /upload/storage/v1/b/backups/o?uploadType=multipart HTTP/1.1");
  EXPECT_EQ(Header(reqs[0].head, "authorization"), "Bearer tok-123");
  const std::string type = Header(reqs[0].head, "content-type");
  ASSERT_TRUE(type.starts_with("multipart/related; boundary=")) << type;
  const std::string boundary = type.substr(type.find('=') + 1);
  const std::string& sent = reqs[0].body;
  // Part 1: the metadata; part 2: the bytes, exactly; then the closing boundary.
  const std::string first = "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n";
  ASSERT_TRUE(sent.starts_with(first));
  const size_t meta_end = sent.find("\r\n--" + boundary, first.size());
  auto meta = nlohmann::json::parse(sent.substr(first.size(), meta_end - first.size()));
  EXPECT_EQ(meta["name"], "n/a b");
  EXPECT_EQ(meta["md5Hash"], Md5Base64(Md5(body)));
  EXPECT_EQ(meta["storageClass"], "NEARLINE");
  const std::string second = "\r\n--" + boundary + "\r\nContent-Type: application/octet-stream\r\n\r\n";
  EXPECT_EQ(sent.substr(meta_end, second.size()), second);
  const std::string tail = "\r\n--" + boundary + "--\r\n";
  EXPECT_EQ(sent.substr(meta_end + second.size()), body + tail);
}

TEST_F(GcsTest, AnUploadAnsweredWithAnotherMd5IsSentAgainThenFails) {
  FakeHttp server([&](const HttpRequest&, int n) {
    if (n == 0) return Json(R"({"error":{"code":503,"message":"backend"}})", 503);
    return Json(R"({"name":"k","md5Hash":"1B2M2Y8AsgTpgAmY7PhCfg=="})");
  });
  auto store = Store(server.port());
  Status s = Put(*store, "k", "body");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt) << s.message();
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(GcsTest, ACutDownloadResumesOnTheGenerationItStartedOn) {
  const std::string object = Object(40 << 10);
  FakeHttp server([&](const HttpRequest& req, int n) {
    HttpAnswer a = Partial(object, req, "etag");
    a.head += "\r\nX-Goog-Generation: 1795750555058570";
    if (n == 0) a.cut = 10000;
    return a;
  });
  auto store = Store(server.port());
  auto r = testing::ReadRange(loop_, *store, "dir/obj", {0, object.size()}, 16 << 10);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.Bytes(), object);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].line, "GET /storage/v1/b/backups/o/dir%2Fobj?alt=media HTTP/1.1");
  EXPECT_EQ(reqs[1].line,
            "GET /storage/v1/b/backups/o/dir%2Fobj?alt=media&generation=1795750555058570 HTTP/1.1");
}

TEST_F(GcsTest, AnObjectReplacedDuringADownloadIsNamed) {
  const std::string object = Object(40 << 10);
  FakeHttp server([&](const HttpRequest& req, int n) {
    if (n > 0) return HttpAnswer{"HTTP/1.1 404 Not Found\r\nContent-Length: 10", "Not Found\n"};
    HttpAnswer a = Partial(object, req, "etag");
    a.head += "\r\nX-Goog-Generation: 7";
    a.cut = 10000;
    return a;
  });
  auto store = Store(server.port());
  auto r = testing::ReadRange(loop_, *store, "obj", {0, object.size()}, 16 << 10);
  EXPECT_EQ(r.status.code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status.message().find("replaced while it was read"), std::string::npos) << r.status.message();
}

TEST_F(GcsTest, MissingBucketAndRefusedTokenAreNamed) {
  FakeHttp server([&](const HttpRequest& req, int) {
    if (req.line.starts_with("GET /storage/v1/b/backups/o?"))
      return Json(R"({"error":{"code":404,"message":"Not Found","errors":[{"reason":"notFound"}]}})", 404);
    return Json(R"({"error":{"code":401,"message":"Invalid Credentials","errors":[{"reason":"authError"}]}})",
                401);
  });
  auto store = Store(server.port());
  Result<ListResult> page = Status();
  store->List({"", "", true}, [&](Result<ListResult> r) {
    page = std::move(r);
    loop_.Stop();
  });
  loop_.Run();
  EXPECT_EQ(page.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(page.status().message().find("bucket 'backups' does not exist"), std::string::npos);
  Status s = Put(*store, "k", "b");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("authError: Invalid Credentials"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("tok-123"), std::string::npos);
}

TEST(GcsJson, ListPages) {
  auto page = ParseGcsList(
      R"({"kind":"storage#objects","items":[{"name":"a/2","size":"11","md5Hash":"XrY7u+Ae7tCTyyK7j1rNww==",)"
      R"("updated":"2026-11-27T03:35:55.058506Z"},{"name":"a/1","size":"0"}],"prefixes":["a/b/"],"nextPageToken":"a/3"})");
  ASSERT_TRUE(page.ok()) << page.status().message();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "a/1");
  EXPECT_EQ(page->objects[1].size, 11u);
  EXPECT_EQ(Md5Base64(*page->objects[1].md5), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_EQ(page->objects[1].modified, 1795750555);
  EXPECT_EQ(page->prefixes, std::vector<std::string>{"a/b/"});
  EXPECT_EQ(page->next_token, "a/3");
  auto empty = ParseGcsList(R"({"kind":"storage#objects"})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->objects.empty() && empty->next_token.empty());
}

TEST(GcsJson, ShapesTheDriverReliesOnAreChecked) {
  EXPECT_EQ(ParseGcsList("[").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseGcsList(R"({"items":[{"size":"1"}]})").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseGcsList(R"({"items":[{"name":"k","size":-1}]})").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseGcsList(R"({"items":[{"name":"k","size":"1x"}]})").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseGcsList(R"({"prefixes":[1]})").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseGcsList(R"({"nextPageToken":5})").status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(GcsObjectMd5(R"({"md5Hash":"short"})").has_value());
  GcsError e = ParseGcsError(R"({"error":{"code":403,"message":"no","errors":[{"reason":"forbidden"}]}})");
  EXPECT_EQ(e.reason, "forbidden");
  EXPECT_EQ(e.message, "no");
  EXPECT_EQ(ParseGcsError("Not Found\n").reason, "");
}

TEST(GcsConfigTest, BadConfigurationsAreRefusedByName) {
  EventLoop loop;
  GcsConfig c;
  c.bucket = "Bad Bucket";
  EXPECT_NE(MakeGcsStore(loop, c).status().message().find("--google-bucket"), std::string::npos);
  c.bucket = "ok-bucket";
  c.endpoint = "storage.googleapis.com";
  EXPECT_NE(MakeGcsStore(loop, c).status().message().find("--google-endpoint"), std::string::npos);
  c.endpoint.clear();
  c.storage_class = "cold";
  EXPECT_NE(MakeGcsStore(loop, c).status().message().find("--google-storage-class"), std::string::npos);
}

}  // namespace
}  // namespace xbak::storage
