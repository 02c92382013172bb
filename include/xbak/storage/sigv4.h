// AWS Signature Version 4 for the requests the storage drivers send.
//
// Why our own and not libcurl's (CURLOPT_AWS_SIGV4): before curl 8.10 it
// sorts the canonical headers as whole "name:value" lines, so a header whose
// name is the start of another's gets a signature S3 rejects; SSE-C sends
// x-amz-server-side-encryption-customer-key and ...-customer-key-MD5, and
// Debian 12 ships curl 7.88. The algorithm is AWS's (docs.aws.amazon.com,
// "Signature Version 4 signing process"), checked against its published
// examples in tests/unit/storage/sigv4_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xbak::storage {

struct SigV4Input {
  std::string method;  // "GET", "PUT", "POST"
  std::string path;    // canonical URI: each segment URI-encoded (UriEncode(key, true))
  std::string query;   // canonical query string: parameters sorted, names and values encoded
  // Every header to sign, host included (name in any case, value as sent).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash;  // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

struct SigV4Keys {
  std::string access_key, secret_key;
  std::string region, service;  // "us-east-1", "s3" or "sts"
};

// The two headers to send beside the signed ones: "x-amz-date: ..." and
// "Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=...". `now` is Unix time.
std::vector<std::string> SignV4(const SigV4Input& in, const SigV4Keys& keys, int64_t now);

// HMAC-SHA256 of `data` under `key`, as raw bytes (SigV4's key chain,
// Azure's Shared Key and SAS signatures).
std::string HmacSha256(const std::string& key, const std::string& data);

// Hex SHA-256, for payload hashes.
std::string Sha256Hex(const std::string& data);

}  // namespace xbak::storage
