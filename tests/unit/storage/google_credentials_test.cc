// Google credentials: a service account's JWT checked with its public key
// as Google's token endpoint would (a loopback server stands in for it), an
// authorized user's refresh, the metadata server, caching and renewal.
#include "xbak/storage/google_credentials.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <nlohmann/json.hpp>

#include "storage/fake_http.h"
#include "util/temp_dir.h"
#include "xbak/storage/md5.h"
#include "xbak/util/file.h"

namespace xbak::storage {
namespace {

std::string FromBase64Url(std::string s) {
  for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4 != 0) s += '=';
  return Base64Decode(s).value_or("?");
}

// The form's value of `name` (x-www-form-urlencoded; our values need only %XX).
std::string FormValue(const std::string& form, const std::string& name) {
  size_t at = form.find(name + "=");
  if (at == std::string::npos) return "";
  std::string v = form.substr(at + name.size() + 1, form.find('&', at) - at - name.size() - 1), out;
  for (size_t i = 0; i < v.size(); i++) {
    if (v[i] == '%' && i + 2 < v.size()) {
      out += static_cast<char>(std::stoi(v.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

class GoogleCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_.reset(EVP_RSA_gen(2048));
    ASSERT_TRUE(key_);
    std::unique_ptr<BIO, void (*)(BIO*)> bio(BIO_new(BIO_s_mem()), BIO_free_all);
    PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    pem_.assign(data, static_cast<size_t>(n));
  }
  std::string Write(const nlohmann::json& j) {
    std::string path = dir_.path() + "/creds.json";
    EXPECT_TRUE(util::WriteFileAtomic(path, j.dump()).ok());
    return path;
  }
  GoogleCredentialOptions Options(const std::string& file) {
    GoogleCredentialOptions o;
    o.file = file;
    o.env = [](const char*) { return std::string(); };
    return o;
  }
  bool Verify(const std::string& signing, const std::string& sig) {
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    return EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) == 1 &&
           EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                            reinterpret_cast<const unsigned char*>(signing.data()), signing.size()) == 1;
  }
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> key_{nullptr, EVP_PKEY_free};
  std::string pem_;
  xbak::testing::TempDir dir_;
};

HttpAnswer Token(const std::string& token, int expires_in) {
  std::string body = R"({"access_token":")" + token + R"(","expires_in":)" + std::to_string(expires_in) +
                     R"(,"token_type":"Bearer"})";
  return {
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()),
      body};
}

TEST_F(GoogleCredentialsTest, AServiceAccountSignsAJwtTheTokenEndpointCanVerify) {
  FakeHttp server([&](const HttpRequest&, int n) { return Token("ya29.t" + std::to_string(n), 3600); });
  const std::string uri = "http://127.0.0.1:" + std::to_string(server.port()) + "/token";
  auto tokens = ResolveGoogleCredentials(Options(Write({{"type", "service_account"},
                                                        {"client_email", "backup@p.iam.gserviceaccount.com"},
                                                        {"private_key", pem_},
                                                        {"private_key_id", "kid1"},
                                                        {"token_uri", uri}})));
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_NE((*tokens)->Describe().find("backup@p.iam.gserviceaccount.com"), std::string::npos);
  const int64_t now = 1795750000;
  auto t = (*tokens)->Get(now);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, "ya29.t0");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].line, "POST /token HTTP/1.1");
  EXPECT_EQ(FormValue(reqs[0].body, "grant_type"), "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const std::string jwt = FormValue(reqs[0].body, "assertion");
  const size_t dot1 = jwt.find('.'), dot2 = jwt.rfind('.');
  ASSERT_NE(dot1, dot2);
  auto header = nlohmann::json::parse(FromBase64Url(jwt.substr(0, dot1)));
  auto claims = nlohmann::json::parse(FromBase64Url(jwt.substr(dot1 + 1, dot2 - dot1 - 1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["kid"], "kid1");
  EXPECT_EQ(claims["iss"], "backup@p.iam.gserviceaccount.com");
  EXPECT_EQ(claims["aud"], uri);
  EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/devstorage.read_write");
  EXPECT_EQ(claims["iat"], now);
  EXPECT_EQ(claims["exp"], now + 3600);
  EXPECT_TRUE(Verify(jwt.substr(0, dot2), FromBase64Url(jwt.substr(dot2 + 1))));
  EXPECT_FALSE(Verify(jwt.substr(0, dot2) + "x", FromBase64Url(jwt.substr(dot2 + 1))));
  // Kept while it has more than five minutes left, then renewed.
  EXPECT_EQ(*(*tokens)->Get(now + 3000), "ya29.t0");
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(*(*tokens)->Get(now + 3400), "ya29.t1");
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(GoogleCredentialsTest, AFailedFetchIsNotRepeatedForThirtySecondsAndShortTokensAreKept) {
  FakeHttp server([&](const HttpRequest&, int n) {
    if (n == 0) return HttpAnswer{"HTTP/1.1 503 X\r\nContent-Length: 0", ""};
    return Token("short", 120);
  });
  auto tokens = ResolveGoogleCredentials(
      Options(Write({{"type", "service_account"},
                     {"client_email", "a@b"},
                     {"private_key", pem_},
                     {"token_uri", "http://127.0.0.1:" + std::to_string(server.port()) + "/token"}})));
  ASSERT_TRUE(tokens.ok());
  const int64_t now = 1795750000;
  EXPECT_FALSE((*tokens)->Get(now).ok());
  EXPECT_FALSE((*tokens)->Get(now + 29).ok());  // the same error, not asked again
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(*(*tokens)->Get(now + 30), "short");
  EXPECT_EQ(*(*tokens)->Get(now + 89), "short");  // a 2-minute token: renewed halfway, not every time
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(*(*tokens)->Get(now + 90), "short");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST_F(GoogleCredentialsTest, ARefusedRefreshIsNamedWithoutItsSecrets) {
  FakeHttp server([&](const HttpRequest&, int) {
    std::string body =
        R"({"error":"invalid_grant","error_description":"Token has been expired or revoked."})";
    return HttpAnswer{"HTTP/1.1 400 Bad Request\r\nContent-Length: " + std::to_string(body.size()), body};
  });
  auto tokens = ResolveGoogleCredentials(
      Options(Write({{"type", "authorized_user"},
                     {"client_id", "id.apps.googleusercontent.com"},
                     {"client_secret", "SECRET-abc"},
                     {"refresh_token", "1//REFRESH-xyz"},
                     {"token_uri", "http://127.0.0.1:" + std::to_string(server.port()) + "/token"}})));
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  auto t = (*tokens)->Get(1795750000);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("invalid_grant"), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().message().find("SECRET-abc"), std::string::npos);
  EXPECT_EQ(t.status().message().find("REFRESH-xyz"), std::string::npos);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(FormValue(reqs[0].body, "grant_type"), "refresh_token");
  EXPECT_EQ(FormValue(reqs[0].body, "refresh_token"), "1//REFRESH-xyz");
}

TEST_F(GoogleCredentialsTest, TheMetadataServerIsAskedWithItsHeader) {
  FakeHttp server([&](const HttpRequest&, int) { return Token("vm-token", 1800); });
  GoogleCredentialOptions o;
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  o.env = [&](const char* name) { return std::string(name) == "GCE_METADATA_HOST" ? host : std::string(); };
  auto tokens = ResolveGoogleCredentials(o);
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_EQ(*(*tokens)->Get(1795750000), "vm-token");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].line, "GET /computeMetadata/v1/instance/service-accounts/default/token HTTP/1.1");
  EXPECT_EQ(Header(reqs[0].head, "metadata-flavor"), "Google");
}

TEST_F(GoogleCredentialsTest, WrongFilesAreRefusedByName) {
  auto r = ResolveGoogleCredentials(Options(Write({{"type", "external_account"}})));
  EXPECT_NE(r.status().message().find("'external_account' is not supported"), std::string::npos);
  r = ResolveGoogleCredentials(Options(Write({{"type", "service_account"}, {"client_email", "x"}})));
  EXPECT_NE(r.status().message().find("private_key"), std::string::npos);
  r = ResolveGoogleCredentials(Options(dir_.path() + "/missing.json"));
  EXPECT_NE(r.status().message().find("missing.json"), std::string::npos);
  GoogleCredentialOptions o;
  o.env = [](const char* name) { return std::string(name) == "NO_GCE_CHECK" ? "true" : ""; };
  EXPECT_NE(ResolveGoogleCredentials(o).status().message().find("no Google credentials"), std::string::npos);
  auto bad_key =
      ResolveGoogleCredentials(Options(Write({{"type", "service_account"},
                                              {"client_email", "x"},
                                              {"private_key", "-----BEGIN PRIVATE KEY-----\nno"}})));
  ASSERT_TRUE(bad_key.ok());
  EXPECT_NE((*bad_key)->Get(1).status().message().find("not a PEM private key"), std::string::npos);
}

TEST(Base64Test, DecodesStrictly) {
  EXPECT_EQ(Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(Base64Decode("aGVsbA=="), "hell");
  EXPECT_EQ(Base64Decode(""), "");
  EXPECT_FALSE(Base64Decode("aGVsbG8").has_value());
  EXPECT_FALSE(Base64Decode("aGV sbG8=").has_value());
  EXPECT_FALSE(Base64Decode("a===").has_value());
  EXPECT_EQ(Md5Base64(*Md5FromBase64("XrY7u+Ae7tCTyyK7j1rNww==")), "XrY7u+Ae7tCTyyK7j1rNww==");
  EXPECT_FALSE(Md5FromBase64("aGVsbG8=").has_value());
  EXPECT_EQ(Base64Url("\xfb\xff"), "-_8");
}

}  // namespace
}  // namespace xbak::storage
