// ObjectStore on an S3-compatible server (AWS S3, MinIO, Google Cloud
// Storage's XML API with HMAC keys, ...), on the HTTP engine every object
// store shares (storage/http_store.h: libcurl's multi interface on a libev
// EventLoop, any number of requests in flight on one thread, connections
// reused).
//
// Signing is our own SigV4 (sigv4.h; curl 7.88's mis-sorts SSE-C's headers)
// over requests whose path and query are in canonical form (keys and
// parameters URI-encoded the AWS way, parameters sorted). Bodies are sent as
// UNSIGNED-PAYLOAD with a Content-MD5 that the server verifies, so a body is
// never hashed twice.
//
// Retries (up to max_retries, exponential backoff with equal jitter): connection
// failures and resets, timeouts and stalls, HTTP 5xx, 408, 429 (SlowDown),
// 400 BadDigest/RequestTimeout, and a PUT whose returned ETag is not the MD5
// of what we sent. A retried PUT resends its own buffer.
#pragma once

#include <memory>
#include <string>

#include "xbak/storage/aws_credentials.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/http_options.h"
#include "xbak/storage/object_store.h"
#include "xbak/storage/uri.h"  // UriEncode, once declared here

namespace xbak::storage {

struct S3Config : HttpOptions {
  std::string endpoint;  // "https://host[:port]"; empty: https://s3.<region>.amazonaws.com
  std::string region = "us-east-1";
  std::string bucket;
  // Where the keys come from, renewed as they expire (aws_credentials.h).
  std::shared_ptr<Credentials> credentials;
  enum class Lookup { kAuto, kPath, kDns } lookup = Lookup::kAuto;

  // What every object put gets (s3_object_options.cc):
  std::string storage_class;   // x-amz-storage-class ("": the bucket's default)
  std::string sse;             // server-side encryption: "", "AES256" (SSE-S3) or "aws:kms" (SSE-KMS)
  std::string sse_kms_key_id;  // with aws:kms ("": the account's default key)
  // SSE-C: the customer's 32-byte key, sent with every PUT and GET (the
  // store keeps only its MD5; without it an object cannot be read).
  std::string sse_c_key;
  std::string lock_mode;   // S3 Object Lock: "", "GOVERNANCE" or "COMPLIANCE"
  int64_t lock_until = 0;  // with lock_mode: Unix time before which no version can be deleted
};

// Checks the configuration (bucket name, endpoint scheme, credentials present)
// and builds the store. Nothing is sent yet.
Result<std::unique_ptr<ObjectStore>> MakeS3Store(EventLoop& loop, S3Config config);

}  // namespace xbak::storage
