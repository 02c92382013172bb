// S3 credentials found as every AWS tool finds them (the SDKs' default
// chain), so that xbcloud runs wherever `aws s3` does, and temporary ones
// renewed before they expire, in the middle of a long put.
//
// In order, the first that gives credentials wins:
//   1. keys given to xbcloud (options file, command line), the environment's
//      AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for the one not given;
//   2. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN);
//   3. AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN: STS
//      AssumeRoleWithWebIdentity (Kubernetes service accounts, EKS);
//   4. the profile (--s3-profile, else AWS_PROFILE, else "default") of the
//      shared files AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and
//      AWS_CONFIG_FILE (~/.aws/config): role_arn with source_profile (STS
//      AssumeRole with that profile's credentials) or web_identity_token_file,
//      credential_process, or aws_access_key_id / aws_secret_access_key /
//      aws_session_token;
//   5. the EC2 instance metadata service, IMDSv2 (a session token first),
//      unless AWS_EC2_METADATA_DISABLED=true; AWS_EC2_METADATA_SERVICE_ENDPOINT
//      moves it (tests run it on loopback).
// A profile named on purpose (--s3-profile, AWS_PROFILE) that does not exist
// is an error, not a fall-through. STS is reached at AWS_ENDPOINT_URL_STS, else
// https://sts.REGION.amazonaws.com.
//
// Secrets never appear in messages: errors name the source ("profile backup
// in ~/.aws/config", "credential_process of profile x") and what failed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "xbak/util/status.h"

namespace xbak::storage {

struct AwsCredentials {
  std::string access_key, secret_key, session_token;
  int64_t expiration = 0;  // Unix time they stop working; 0: never
};

struct AwsCredentialOptions {
  // Given to xbcloud (step 1): used when access_key is set.
  std::string access_key, secret_key, session_token;
  std::string profile;  // --s3-profile ("" : AWS_PROFILE, else "default")
  std::string region;   // for STS's default endpoint and signature
  std::string cacert;   // CA bundle for STS and IMDS over TLS ("" : the system's)
  bool insecure = false;
  // The environment (tests give their own); default: getenv.
  std::function<std::string(const char*)> env;
};

// Where credentials come from, able to fetch them again.
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  virtual Result<AwsCredentials> Fetch() = 0;
  // For messages: "the environment (AWS_ACCESS_KEY_ID)", "profile p's credential_process".
  virtual std::string Describe() const = 0;
};

// The credentials in use, renewed from their source when they expire within
// `margin_s` seconds (5 minutes, as the SDKs; XBCLOUD_CREDENTIALS_MARGIN in
// seconds overrides it, for tests). Thread-safe.
class Credentials {
 public:
  Credentials(std::unique_ptr<CredentialSource> source, AwsCredentials first, int64_t margin_s);
  // Current credentials; renews them first when needed. A failed renewal is
  // an error only once they have expired (until then the old ones serve, and
  // the next attempt waits 30 s: requests must not each wait on a source
  // that is down).
  Result<AwsCredentials> Get(int64_t now);
  std::string Describe() const { return source_->Describe(); }
  uint64_t renewals() const;
  int64_t expiration() const;  // of the current ones (0: never)

 private:
  mutable std::mutex mu_;
  std::unique_ptr<CredentialSource> source_;
  AwsCredentials current_;  // guarded by mu_
  const int64_t margin_s_;
  uint64_t renewals_ = 0;     // guarded by mu_
  int64_t next_attempt_ = 0;  // guarded by mu_: after a failed renewal, not before this
};

// Walks the chain and fetches the first credentials (so that a wrong
// profile or an unreachable STS fails before anything is sent).
Result<std::shared_ptr<Credentials>> ResolveAwsCredentials(const AwsCredentialOptions& options);

// The AWS shared files' format: "[section]" lines ("[profile NAME]" in the
// config file, "[NAME]" in the credentials file, "[default]" in both) and
// "key = value" lines; '#' and ';' start comments; keys are lowercased.
// Indented lines (sub-settings such as "s3 =" blocks) are skipped. `origin`
// names the file in errors.
using AwsIni = std::map<std::string, std::map<std::string, std::string>>;
Result<AwsIni> ParseAwsIni(const std::string& text, const std::string& origin);

// What IMDS and credential_process answer (JSON: AccessKeyId,
// SecretAccessKey, Token or SessionToken, Expiration) as credentials (STS's
// XML: s3_xml.h). Untrusted bytes: every error is kCorrupt and names
// `origin`, never a value.
Result<AwsCredentials> ParseJsonCredentials(const std::string& json, const std::string& origin);

}  // namespace xbak::storage
