// The sources of the AWS credential chain (aws_credentials.h), each able to
// fetch its credentials again: keys as given, a credential_process, STS
// AssumeRole and AssumeRoleWithWebIdentity, the EC2 instance metadata
// service. Internal to the storage layer.
//
// Their requests are blocking libcurl calls: a source is asked at start and
// then once per renewal (every hour or so), and a renewal that waits a
// second on the store's loop costs less than a thread to run it on.
#pragma once

#include <memory>
#include <string>

#include "xbak/storage/aws_credentials.h"

namespace xbak::storage::aws {

// Where STS and IMDS are, and how to trust them.
struct Endpoints {
  std::string sts;     // "https://sts.REGION.amazonaws.com" or AWS_ENDPOINT_URL_STS
  std::string region;  // signs STS requests
  std::string imds;    // "http://169.254.169.254" or AWS_EC2_METADATA_SERVICE_ENDPOINT
  std::string cacert;
  bool insecure = false;
};

std::unique_ptr<CredentialSource> StaticSource(AwsCredentials c, std::string what);
// `command` runs with /bin/sh -c; its stdout is the JSON of
// ParseJsonCredentials (Version 1), its stderr goes to ours.
std::unique_ptr<CredentialSource> ProcessSource(std::string command, std::string what);
// STS AssumeRole, signed with what `base` gives.
std::unique_ptr<CredentialSource> AssumeRoleSource(std::unique_ptr<CredentialSource> base,
                                                   std::string role_arn, std::string session_name,
                                                   std::string external_id, Endpoints endpoints,
                                                   std::string what);
// STS AssumeRoleWithWebIdentity with the token read from `token_file` at
// each fetch (Kubernetes rotates it).
std::unique_ptr<CredentialSource> WebIdentitySource(std::string token_file, std::string role_arn,
                                                    std::string session_name, Endpoints endpoints,
                                                    std::string what);
// IMDSv2: a session token, the instance role's name, its credentials.
std::unique_ptr<CredentialSource> ImdsSource(Endpoints endpoints);

}  // namespace xbak::storage::aws
