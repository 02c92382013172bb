// The Azure driver against a loopback server that answers as each test says
// (the errors, retries and resumes Azurite cannot be made to produce), and
// its List Blobs parser. Signatures are checked by Azurite itself in
// tests/integration/t_xbcloud_azure.sh, which refuses a wrong one.
#include <gtest/gtest.h>

#include "storage/fake_http.h"
#include "storage/read_range.h"
#include "xbak/storage/azure_store.h"
#include "xbak/storage/azure_xml.h"
#include "xbak/storage/md5.h"

namespace xbak::storage {
namespace {

constexpr const char* kKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

class AzureTest : public ::testing::Test {
 protected:
  AzureConfig Config(int port) {
    AzureConfig c;
    c.account = "devstoreaccount1";
    c.container = "backups";
    c.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/devstoreaccount1";
    c.access_key = kKey;
    c.max_retries = 2;
    c.backoff_initial_s = 0.01;
    c.backoff_max_s = 0.02;
    return c;
  }
  std::unique_ptr<ObjectStore> Store(AzureConfig c) {
    auto s = MakeAzureStore(loop_, std::move(c));
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s.value());
  }
  Status Put(ObjectStore& store, const std::string& key, const std::string& body) {
    Status out;
    auto b = std::make_shared<const std::string>(body);
    store.Put(key, b, Md5(body), [&](Status s) {
      out = s;
      loop_.Stop();
    });
    loop_.Run();
    return out;
  }
  Result<std::string> Get(ObjectStore& store, const std::string& key) {
    Result<std::string> out = Status();
    store.Get(key, [&](Result<std::string> r) {
      out = std::move(r);
      loop_.Stop();
    });
    loop_.Run();
    return out;
  }
  EventLoop loop_;
};

HttpAnswer ErrorReply(int status, const std::string& code) {
  std::string body =
      "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>m\nRequestId:1</Message></Error>";
  return {"HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()),
          body};
}

TEST_F(AzureTest, PutSendsABlockBlobWithItsMd5SignedWithTheSharedKey) {
  const std::string body = "hello azure";
  FakeHttp server([&](const HttpRequest&, int) {
    return HttpAnswer{
        "HTTP/1.1 201 Created\r\nContent-MD5: " + Md5Base64(Md5(body)) + "\r\nContent-Length: 0", ""};
  });
  auto store = Store(Config(server.port()));
  ASSERT_TRUE(Put(*store, "n/a b+c.0", body).ok());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].line, "PUT /devstoreaccount1/backups/n/a%20b%2Bc.0 HTTP/1.1");
  EXPECT_EQ(Header(reqs[0].head, "x-ms-blob-type"), "BlockBlob");
  EXPECT_EQ(Header(reqs[0].head, "content-md5"), Md5Base64(Md5(body)));
  EXPECT_EQ(Header(reqs[0].head, "x-ms-version"), "2023-11-03");
  EXPECT_EQ(Header(reqs[0].head, "x-ms-date").size(), 29u);  // "Fri, 27 Nov 2026 03:35:11 GMT"
  EXPECT_TRUE(Header(reqs[0].head, "authorization").starts_with("SharedKey devstoreaccount1:"));
  EXPECT_EQ(reqs[0].body, body);
}

TEST_F(AzureTest, APutWhoseAnswerIsAnotherMd5IsSentAgainThenFails) {
  FakeHttp server([&](const HttpRequest&, int) {
    return HttpAnswer{"HTTP/1.1 201 Created\r\nContent-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==\r\nContent-Length: 0",
                      ""};
  });
  auto store = Store(Config(server.port()));
  Status s = Put(*store, "k", "body");
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("not the MD5 of what was sent"), std::string::npos) << s.message();
  EXPECT_EQ(server.requests().size(), 3u);  // max_retries 2
}

TEST_F(AzureTest, BusyIsRetriedAndMissingThingsAreNamed) {
  FakeHttp server([&](const HttpRequest& r, int n) {
    if (r.line.find("/busy") != std::string::npos) {
      return n == 0 ? ErrorReply(503, "ServerBusy")
                    : HttpAnswer{"HTTP/1.1 200 OK\r\nContent-Length: 2", "ok"};
    }
    if (r.line.find("/gone") != std::string::npos) return ErrorReply(404, "BlobNotFound");
    if (r.line.find("/nocontainer") != std::string::npos) return ErrorReply(404, "ContainerNotFound");
    return ErrorReply(403, "AuthorizationFailure");
  });
  auto store = Store(Config(server.port()));
  auto busy = Get(*store, "busy");
  ASSERT_TRUE(busy.ok()) << busy.status().message();
  EXPECT_EQ(*busy, "ok");
  EXPECT_EQ(Get(*store, "gone").status().code(), ErrorCode::kNotFound);
  auto nc = Get(*store, "nocontainer");
  EXPECT_EQ(nc.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(nc.status().message().find("container 'backups' does not exist"), std::string::npos);
  auto denied = Get(*store, "denied");
  EXPECT_EQ(denied.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(denied.status().message().find("AuthorizationFailure"), std::string::npos);
  EXPECT_EQ(denied.status().message().find(kKey), std::string::npos);
}

TEST_F(AzureTest, DeletingAMissingBlobIsNoErrorAndEachKeyIsItsOwnRequest) {
  FakeHttp server([&](const HttpRequest& r, int) {
    if (r.line.find("/b ") != std::string::npos) return ErrorReply(404, "BlobNotFound");
    return HttpAnswer{"HTTP/1.1 202 Accepted\r\nContent-Length: 0", ""};
  });
  auto store = Store(Config(server.port()));
  Status out;
  store->Delete({"a", "b", "c"}, [&](Status s) {
    out = s;
    loop_.Stop();
  });
  loop_.Run();
  EXPECT_TRUE(out.ok()) << out.message();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& r : reqs) EXPECT_TRUE(r.line.starts_with("DELETE /devstoreaccount1/backups/"));
}

TEST_F(AzureTest, ACutRangeResumesOnTheSameBlobWithIfMatch) {
  const std::string object = Object(50 << 10);
  FakeHttp server([&](const HttpRequest& req, int n) {
    HttpAnswer a = Partial(object, req, "0x8DA1");
    if (n == 0) a.cut = 20000;
    return a;
  });
  auto store = Store(Config(server.port()));
  auto r = testing::ReadRange(loop_, *store, "obj", {0, object.size()}, 16 << 10);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.Bytes(), object);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].if_match, "");
  EXPECT_EQ(reqs[1].if_match, "\"0x8DA1\"");      // the ETag as the service sent it
  EXPECT_EQ(reqs[1].range, "bytes=20000-51199");  // from the first byte not received
}

TEST_F(AzureTest, ASasTokenGoesWithEveryRequestInsteadOfASignature) {
  FakeHttp server([&](const HttpRequest&, int) {
    std::string xml = "<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>";
    return HttpAnswer{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(xml.size()), xml};
  });
  AzureConfig c = Config(server.port());
  c.access_key.clear();
  c.sas_token = "?sv=2021-08-06&sp=rl&sig=abc%2B";
  auto store = Store(c);
  Result<ListResult> page = Status();
  store->List({"p/", "", true}, [&](Result<ListResult> r) {
    page = std::move(r);
    loop_.Stop();
  });
  loop_.Run();
  ASSERT_TRUE(page.ok()) << page.status().message();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(
      reqs[0].line,
      "GET /devstoreaccount1/backups?restype=container&comp=list&prefix=p%2F&maxresults=5000&delimiter=%2F&"
      "sv=2021-08-06&sp=rl&sig=abc%2B HTTP/1.1");
  EXPECT_EQ(Header(reqs[0].head, "authorization"), "");
}

TEST_F(AzureTest, BadConfigurationsAreRefusedByName) {
  AzureConfig c = Config(1);
  c.container = "No_Such";
  EXPECT_NE(MakeAzureStore(loop_, c).status().message().find("--azure-container-name"), std::string::npos);
  c = Config(1);
  c.access_key.clear();
  EXPECT_NE(MakeAzureStore(loop_, c).status().message().find("SAS token"), std::string::npos);
  c = Config(1);
  c.access_key = "not base64!";
  EXPECT_NE(MakeAzureStore(loop_, c).status().message().find("not base64"), std::string::npos);
  c = Config(1);
  c.tier = "Frozen";
  EXPECT_NE(MakeAzureStore(loop_, c).status().message().find("--azure-tier-class"), std::string::npos);
  c = Config(1);
  c.endpoint = "ftp://x";
  EXPECT_NE(MakeAzureStore(loop_, c).status().message().find("--azure-endpoint"), std::string::npos);
}

TEST(AzureXml, BlobListWithPrefixesFirstAndEscapedNames) {
  auto page = ParseBlobList(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><EnumerationResults "
      "ServiceEndpoint=\"x\" "
      "ContainerName=\"c\"><Prefix>a/</Prefix><Marker/><MaxResults>2</MaxResults><Delimiter>/</"
      "Delimiter><Blobs>"
      "<BlobPrefix><Name>a/b/</Name></BlobPrefix><Blob><Name>a/x&amp;y</Name><Properties><Last-Modified>Fri, "
      "27 "
      "Nov 2026 03:35:11 GMT</Last-Modified><Etag>0x1</Etag><Content-Length>8</Content-Length><Content-MD5>"
      "/19k1DajZ0qVQw8QOO4kAg==</Content-MD5></Properties></Blob><Blob><Name>a/1</Name><Properties>"
      "<Content-Length>0</Content-Length></Properties></Blob></Blobs><NextMarker>a/2</NextMarker>"
      "</EnumerationResults>");
  ASSERT_TRUE(page.ok()) << page.status().message();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "a/1");
  EXPECT_FALSE(page->objects[0].md5.has_value());
  EXPECT_EQ(page->objects[1].key, "a/x&y");
  EXPECT_EQ(page->objects[1].size, 8u);
  ASSERT_TRUE(page->objects[1].md5.has_value());
  EXPECT_EQ(Md5Base64(*page->objects[1].md5), "/19k1DajZ0qVQw8QOO4kAg==");
  EXPECT_EQ(page->objects[1].modified, 1795750511);
  EXPECT_EQ(page->prefixes, std::vector<std::string>{"a/b/"});
  EXPECT_EQ(page->next_token, "a/2");
}

TEST(AzureXml, ShapesTheDriverReliesOnAreChecked) {
  EXPECT_EQ(
      ParseBlobList("<EnumerationResults><Blobs><Blob><Properties/></Blob></Blobs></EnumerationResults>")
          .status()
          .code(),
      ErrorCode::kCorrupt);
  auto r = ParseBlobList(
      "<EnumerationResults><Blobs><Blob><Name>k</Name><Properties><Content-Length>-1</Content-Length>"
      "</Properties></Blob></Blobs></EnumerationResults>");
  EXPECT_NE(r.status().message().find("not a decimal"), std::string::npos) << r.status().message();
  EXPECT_EQ(ParseBlobList("<Error><Code>X</Code></Error>").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseBlobList("<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>")->next_token, "");
}

TEST(AzureXml, HttpDates) {
  EXPECT_EQ(ParseHttpDate("Fri, 27 Nov 2026 03:35:11 GMT"), 1795750511);
  EXPECT_EQ(FormatHttpDate(1795750511), "Fri, 27 Nov 2026 03:35:11 GMT");
  EXPECT_EQ(ParseHttpDate("Mon, 30 Feb 2026 03:35:11 GMT"), 0);
  EXPECT_EQ(ParseHttpDate("Fri, 27 Nov 2026 03:35:11 UTC"), 0);
  EXPECT_EQ(ParseHttpDate("2026-11-27T03:35:11Z"), 0);
}

}  // namespace
}  // namespace xbak::storage
