// What MakeS3Store checks of its configuration, and where requests go.
#include "s3_address.h"

namespace xbak::storage {

namespace s3 {
namespace {

bool ValidBucketName(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return b.front() != '-' && b.front() != '.' && b.back() != '-' && b.back() != '.';
}

}  // namespace

Result<Address> ResolveAddress(S3Config* cfg) {
  S3Config& config = *cfg;
  if (!ValidBucketName(config.bucket)) {
    return Error(ErrorCode::kInvalidArgument, config.bucket.empty()
                                                  ? "no bucket given (--s3-bucket)"
                                                  : "--s3-bucket: '" + config.bucket +
                                                        "' is not a valid bucket name (3-63 of a-z 0-9 . -)");
  }
  if (config.credentials == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "no S3 credentials (see ResolveAwsCredentials)");
  }
  if (config.region.empty()) config.region = "us-east-1";
  if (config.endpoint.empty()) config.endpoint = "https://s3." + config.region + ".amazonaws.com";
  std::string ep = config.endpoint;
  while (!ep.empty() && ep.back() == '/') ep.pop_back();
  if (ep.find("://") == std::string::npos) ep = "https://" + ep;
  size_t scheme_end = ep.find("://");
  std::string scheme = ep.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Error(ErrorCode::kInvalidArgument,
                 "--s3-endpoint: '" + config.endpoint + "' is not an http(s) URL");
  }
  std::string host = ep.substr(scheme_end + 3);
  if (host.empty() || host.find('/') != std::string::npos || host.find('@') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 "--s3-endpoint: '" + config.endpoint + "' must be scheme://host[:port] without a path");
  }
  config.endpoint = ep;
  bool dns = config.lookup == S3Config::Lookup::kDns ||
             (config.lookup == S3Config::Lookup::kAuto && host.ends_with(".amazonaws.com") &&
              config.bucket.find('.') == std::string::npos);
  std::string base = dns ? scheme + "://" + config.bucket + "." + host : ep;
  std::string prefix = dns ? "/" : "/" + config.bucket + "/";
  return Address{std::move(base), std::move(prefix)};
}

}  // namespace s3
}  // namespace xbak::storage
