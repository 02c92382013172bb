// The AWS credential chain without a network: the shared files, the JSON and
// XML answers, the order of the sources, renewal.
#include "xbak/storage/aws_credentials.h"

#include <gtest/gtest.h>

#include <ctime>
#include <map>

#include "util/temp_dir.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/util/file.h"

namespace xbak::storage {
namespace {

TEST(AwsIni, SectionsKeysCommentsAndNesting) {
  auto ini = ParseAwsIni(
      "# comment\n[default]\naws_access_key_id = AK\nAWS_Secret_Access_Key=SK \n; other\n"
      "[profile backup]\nrole_arn = arn:aws:iam::1:role/r\ns3 =\n  max_concurrent_requests = 20\n"
      "credential_process = /bin/echo \"a b\"\n",
      "f");
  ASSERT_TRUE(ini.ok()) << ini.status().message();
  EXPECT_EQ((*ini)["default"]["aws_access_key_id"], "AK");
  EXPECT_EQ((*ini)["default"]["aws_secret_access_key"], "SK");
  EXPECT_EQ((*ini)["profile backup"]["credential_process"], "/bin/echo \"a b\"");
  EXPECT_EQ((*ini)["profile backup"].count("max_concurrent_requests"), 0u);
  EXPECT_NE(ParseAwsIni("key = v\n", "f").status().message().find("f line 1"), std::string::npos);
  EXPECT_FALSE(ParseAwsIni("[open\n", "f").ok());
  EXPECT_FALSE(ParseAwsIni("[p]\nno equals sign\n", "f").ok());
}

TEST(AwsAnswers, JsonOfImdsAndCredentialProcess) {
  auto c = ParseJsonCredentials(
      R"({"Version": 1, "AccessKeyId": "AK", "SecretAccessKey": "SK", "SessionToken": "T",
          "Expiration": "2026-11-26T22:43:51Z"})",
      "p");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->access_key, "AK");
  EXPECT_EQ(c->session_token, "T");
  EXPECT_EQ(c->expiration, 1795733031);
  auto imds = ParseJsonCredentials(
      R"({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "AK", "SecretAccessKey": "SK", "Token": "T2",
          "Expiration": "2026-11-26T22:43:51Z"})",
      "imds");
  ASSERT_TRUE(imds.ok());
  EXPECT_EQ(imds->session_token, "T2");
  auto no_expiry =
      ParseJsonCredentials(R"({"Version": 1, "AccessKeyId": "AK", "SecretAccessKey": "SK"})", "p");
  ASSERT_TRUE(no_expiry.ok());
  EXPECT_EQ(no_expiry->expiration, 0);
  for (const char* bad : {"", "[]", "{", R"({"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "S"})",
                          R"({"AccessKeyId": "A"})", R"({"AccessKeyId": 5, "SecretAccessKey": "S"})",
                          R"({"AccessKeyId": "A", "SecretAccessKey": "S", "Expiration": "tomorrow"})"}) {
    auto r = ParseJsonCredentials(bad, "proc");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("proc", 0), 0u) << r.status().message();
  }
  auto refused = ParseJsonCredentials(R"({"Code": "AssumeRoleUnauthorizedAccess"})", "imds");
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
}

TEST(AwsAnswers, StsXml) {
  auto c = ParseStsCredentials(
      "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult>"
      "<AssumedRoleUser><Arn></Arn></AssumedRoleUser><Credentials><AccessKeyId>AK</AccessKeyId>"
      "<SecretAccessKey>SK</SecretAccessKey><SessionToken>T</SessionToken>"
      "<Expiration>2026-11-26T22:43:51Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>",
      "sts");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->secret_key, "SK");
  EXPECT_EQ(c->expiration, 1795733031);
  auto err = ParseStsCredentials(
      "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not "
      "allowed</Message></Error>"
      "</ErrorResponse>",
      "sts");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("AccessDenied: not allowed"), std::string::npos)
      << err.status().message();
  EXPECT_EQ(ParseStsCredentials("<AssumeRoleResponse/>", "sts").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseStsCredentials("not xml", "sts").status().code(), ErrorCode::kCorrupt);
}

class ChainTest : public ::testing::Test {
 protected:
  Result<std::shared_ptr<Credentials>> Resolve(AwsCredentialOptions o = {}) {
    o.env = [this](const char* k) {
      auto it = env_.find(k);
      return it == env_.end() ? std::string() : it->second;
    };
    return ResolveAwsCredentials(o);
  }
  AwsCredentials Keys(const std::shared_ptr<Credentials>& c) { return *c->Get(::time(nullptr)); }
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(util::WriteFileAtomic(dir_.path() + "/" + name, text).ok());
  }
  xbak::testing::TempDir dir_;
  std::map<std::string, std::string> env_ = {{"HOME", dir_.path()}, {"AWS_EC2_METADATA_DISABLED", "true"}};
};

TEST_F(ChainTest, FirstSourceWins) {
  env_["AWS_ACCESS_KEY_ID"] = "envAK";
  env_["AWS_SECRET_ACCESS_KEY"] = "envSK";
  AwsCredentialOptions given;
  given.secret_key = "givenSK";  // the access key from the environment
  auto c = Resolve(given);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(Keys(*c).access_key, "envAK");
  EXPECT_EQ(Keys(*c).secret_key, "givenSK");
  c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Keys(*c).secret_key, "envSK");
  EXPECT_EQ((*c)->Describe(), "the environment (AWS_ACCESS_KEY_ID)");
}

TEST_F(ChainTest, ProfilesFromTheSharedFiles) {
  Write("creds",
        "[default]\naws_access_key_id = dAK\naws_secret_access_key = dSK\n[backup]\n"
        "aws_access_key_id = bAK\naws_secret_access_key = bSK\naws_session_token = bT\n");
  Write("config",
        "[profile proc]\ncredential_process = printf '{\"Version\": 1, \"AccessKeyId\": \"pAK\", "
        "\"SecretAccessKey\": \"pSK\"}'\n[profile broken]\ncredential_process = exit 3\n"
        "[profile role]\nrole_arn = arn:r\n");
  env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_.path() + "/creds";
  env_["AWS_CONFIG_FILE"] = dir_.path() + "/config";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(Keys(*c).access_key, "dAK");
  env_["AWS_PROFILE"] = "backup";
  c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Keys(*c).session_token, "bT");
  AwsCredentialOptions o;
  o.profile = "proc";  // --s3-profile wins over AWS_PROFILE
  c = Resolve(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(Keys(*c).access_key, "pAK");
  o.profile = "broken";
  auto r = Resolve(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("AWS profile broken (credential_process) failed"), std::string::npos)
      << r.status().message();
  o.profile = "role";
  r = Resolve(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("role_arn without source_profile"), std::string::npos);
  o.profile = "nobody";
  r = Resolve(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("AWS profile 'nobody' is not in"), std::string::npos);
}

TEST_F(ChainTest, NothingFoundSaysWhereItLooked) {
  auto r = Resolve();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no S3 credentials"), std::string::npos);
  EXPECT_NE(r.status().message().find("AWS_PROFILE"), std::string::npos);
}

TEST_F(ChainTest, ExpiredCredentialsAreRefused) {
  Write("config",
        "[default]\ncredential_process = printf '{\"Version\": 1, \"AccessKeyId\": \"A\", "
        "\"SecretAccessKey\": \"secret-not-to-print\", \"Expiration\": \"2020-01-01T00:00:00Z\"}'\n");
  env_["AWS_CONFIG_FILE"] = dir_.path() + "/config";
  auto r = Resolve();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expired"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("secret-not-to-print"), std::string::npos);
}

// Renewed when they come within the margin of their expiry; a failed
// renewal keeps the old ones until they expire.
TEST(CredentialsTest, RenewedBeforeTheyExpire) {
  struct Counting : CredentialSource {
    int* fetches;
    bool* fail;
    explicit Counting(int* f, bool* x) : fetches(f), fail(x) {}
    Result<AwsCredentials> Fetch() override {
      ++*fetches;
      if (*fail) return Error(ErrorCode::kIo, "down");
      return AwsCredentials{"AK" + std::to_string(*fetches), "SK", "T", 1000 + 100 * *fetches};
    }
    std::string Describe() const override { return "counting"; }
  };
  int fetches = 0;
  bool fail = false;
  Credentials c(std::make_unique<Counting>(&fetches, &fail), {"AK0", "SK", "T", 1000}, 60);
  EXPECT_EQ(c.Get(900)->access_key, "AK0");
  EXPECT_EQ(c.Get(950)->access_key, "AK1");  // within 60 s of 1000: renewed, now until 1100
  EXPECT_EQ(c.Get(1000)->access_key, "AK1");
  fail = true;
  EXPECT_EQ(c.Get(1060)->access_key, "AK1");  // renewal failed, still valid
  const int before = fetches;
  EXPECT_EQ(c.Get(1061)->access_key, "AK1");  // no new attempt for 30 s
  EXPECT_EQ(fetches, before);
  auto gone = c.Get(1100);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("renewing the S3 credentials from counting"), std::string::npos);
  EXPECT_EQ(c.renewals(), 1u);
}

}  // namespace
}  // namespace xbak::storage
