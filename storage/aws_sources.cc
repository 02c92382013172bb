#include "aws_sources.h"

#include <ctime>
#include <memory>
#include <vector>

#include "http_call.h"
#include "xbak/storage/s3_store.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/storage/sigv4.h"
#include "xbak/util/file.h"
#include "xbak/util/process.h"

namespace xbak::storage::aws {
namespace {

// A request to STS is signed (SigV4, every header we send) with `sign`.
Result<http::Answer> Call(http::Call c, const std::string& what, const AwsCredentials* sign = nullptr,
                          const std::string& region = "") {
  if (sign != nullptr) {
    const size_t start = c.url.find("://") + 3;
    const size_t slash = c.url.find('/', start);
    const std::string host = c.url.substr(start, slash - start);
    SigV4Input in{c.method, c.url.substr(slash), "", {{"Host", host}}, Sha256Hex(c.body)};
    for (const auto& header : c.headers) {
      const size_t colon = header.find(':');
      in.headers.emplace_back(header.substr(0, colon), header.substr(colon + 2));
    }
    c.headers.push_back("Host: " + host);
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    for (auto& h : SignV4(in, {sign->access_key, sign->secret_key, region, "sts"}, now))
      c.headers.push_back(h);
  }
  return http::Perform(c, what);
}

class Static final : public CredentialSource {
 public:
  Static(AwsCredentials c, std::string what) : c_(std::move(c)), what_(std::move(what)) {}
  Result<AwsCredentials> Fetch() override { return c_; }
  std::string Describe() const override { return what_; }

 private:
  AwsCredentials c_;
  std::string what_;
};

class Process final : public CredentialSource {
 public:
  Process(std::string command, std::string what) : command_(std::move(command)), what_(std::move(what)) {}
  Result<AwsCredentials> Fetch() override {
    auto out = util::RunAndCaptureStdout({"/bin/sh", "-c", command_});
    if (!out.ok()) return Error(ErrorCode::kInvalidArgument, what_ + " failed: " + out.status().message());
    return ParseJsonCredentials(*out, what_);
  }
  std::string Describe() const override { return what_; }

 private:
  std::string command_, what_;
};

// Form fields of an STS request (application/x-www-form-urlencoded).
std::string Field(const std::string& name, const std::string& value) {
  return "&" + name + "=" + UriEncode(value, false);
}

Result<AwsCredentials> AskSts(const Endpoints& ep, const std::string& body, const AwsCredentials* sign,
                              const std::string& what) {
  http::Call c;
  c.method = "POST";
  c.url = ep.sts + "/";
  c.body = body;
  c.headers = {"Content-Type: application/x-www-form-urlencoded"};
  if (sign != nullptr && !sign->session_token.empty())
    c.headers.push_back("X-Amz-Security-Token: " + sign->session_token);
  c.cacert = ep.cacert;
  c.insecure = ep.insecure;
  XBAK_ASSIGN_OR_RETURN(http::Answer a, Call(c, what, sign, ep.region));
  auto creds =
      ParseStsCredentials(a.body, what + " (STS at " + ep.sts + ", HTTP " + std::to_string(a.status) + ")");
  if (!creds.ok() && a.status / 100 != 2 && creds.status().code() == ErrorCode::kCorrupt) {
    return Error(ErrorCode::kInvalidArgument,
                 what + ": STS at " + ep.sts + " answered HTTP " + std::to_string(a.status));
  }
  return creds;
}

class AssumeRole final : public CredentialSource {
 public:
  AssumeRole(std::unique_ptr<CredentialSource> base, std::string role, std::string session,
             std::string external, Endpoints ep, std::string what)
      : base_(std::move(base)),
        role_(std::move(role)),
        session_(std::move(session)),
        external_(std::move(external)),
        ep_(std::move(ep)),
        what_(std::move(what)) {}
  Result<AwsCredentials> Fetch() override {
    XBAK_ASSIGN_OR_RETURN(AwsCredentials base, base_->Fetch());
    std::string body = "Action=AssumeRole" + Field("DurationSeconds", "3600") + Field("RoleArn", role_) +
                       Field("RoleSessionName", session_) + Field("Version", "2011-06-15");
    if (!external_.empty()) body += Field("ExternalId", external_);
    return AskSts(ep_, body, &base, what_);
  }
  std::string Describe() const override { return what_; }

 private:
  std::unique_ptr<CredentialSource> base_;
  std::string role_, session_, external_;
  Endpoints ep_;
  std::string what_;
};

class WebIdentity final : public CredentialSource {
 public:
  WebIdentity(std::string token_file, std::string role, std::string session, Endpoints ep, std::string what)
      : token_file_(std::move(token_file)),
        role_(std::move(role)),
        session_(std::move(session)),
        ep_(std::move(ep)),
        what_(std::move(what)) {}
  Result<AwsCredentials> Fetch() override {
    auto token = util::ReadSmallFile(token_file_, 64 << 10);
    if (!token.ok()) return token.status().With(what_ + ": the web identity token file");
    std::string t = *token;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    std::string body = "Action=AssumeRoleWithWebIdentity" + Field("DurationSeconds", "3600") +
                       Field("RoleArn", role_) + Field("RoleSessionName", session_) +
                       Field("Version", "2011-06-15") + Field("WebIdentityToken", t);
    return AskSts(ep_, body, nullptr, what_);
  }
  std::string Describe() const override { return what_; }

 private:
  std::string token_file_, role_, session_;
  Endpoints ep_;
  std::string what_;
};

class Imds final : public CredentialSource {
 public:
  explicit Imds(Endpoints ep) : ep_(std::move(ep)) {}
  Result<AwsCredentials> Fetch() override {
    http::Call c;
    c.timeout_s = 2;  // off EC2 nothing answers: fail fast
    c.method = "PUT";
    c.url = ep_.imds + "/latest/api/token";
    c.headers = {"X-aws-ec2-metadata-token-ttl-seconds: 21600"};
    XBAK_ASSIGN_OR_RETURN(http::Answer token, Call(c, Describe()));
    if (token.status != 200) return Refused("a session token", token.status);
    c.method = "GET";
    c.headers = {"X-aws-ec2-metadata-token: " + token.body};
    c.url = ep_.imds + "/latest/meta-data/iam/security-credentials/";
    XBAK_ASSIGN_OR_RETURN(http::Answer role, Call(c, Describe()));
    if (role.status != 200) return Refused("the instance's role (has it one?)", role.status);
    std::string name = role.body.substr(0, role.body.find('\n'));
    if (name.empty() || name.find('/') != std::string::npos)
      return Error(ErrorCode::kCorrupt, Describe() + ": no role name in its answer");
    c.url += name;
    XBAK_ASSIGN_OR_RETURN(http::Answer creds, Call(c, Describe()));
    if (creds.status != 200) return Refused("the credentials of role " + name, creds.status);
    return ParseJsonCredentials(creds.body, Describe() + " (role " + name + ")");
  }
  std::string Describe() const override { return "the instance metadata service at " + ep_.imds; }

 private:
  Status Refused(const std::string& what, long status) const {
    return Error(ErrorCode::kInvalidArgument,
                 Describe() + " did not give " + what + " (HTTP " + std::to_string(status) + ")");
  }
  Endpoints ep_;
};

}  // namespace

std::unique_ptr<CredentialSource> StaticSource(AwsCredentials c, std::string what) {
  return std::make_unique<Static>(std::move(c), std::move(what));
}
std::unique_ptr<CredentialSource> ProcessSource(std::string command, std::string what) {
  return std::make_unique<Process>(std::move(command), std::move(what));
}
std::unique_ptr<CredentialSource> AssumeRoleSource(std::unique_ptr<CredentialSource> base,
                                                   std::string role_arn, std::string session_name,
                                                   std::string external_id, Endpoints endpoints,
                                                   std::string what) {
  return std::make_unique<AssumeRole>(std::move(base), std::move(role_arn), std::move(session_name),
                                      std::move(external_id), std::move(endpoints), std::move(what));
}
std::unique_ptr<CredentialSource> WebIdentitySource(std::string token_file, std::string role_arn,
                                                    std::string session_name, Endpoints endpoints,
                                                    std::string what) {
  return std::make_unique<WebIdentity>(std::move(token_file), std::move(role_arn), std::move(session_name),
                                       std::move(endpoints), std::move(what));
}
std::unique_ptr<CredentialSource> ImdsSource(Endpoints endpoints) {
  return std::make_unique<Imds>(std::move(endpoints));
}

}  // namespace xbak::storage::aws
