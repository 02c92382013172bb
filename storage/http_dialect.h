// What one object store's HTTP protocol says, behind the one engine that
// moves the bytes (http_store.cc: libcurl multi on the event loop, retries,
// ranged reads in pieces, flow control): where each request goes, how it is
// authenticated, what its answers mean. One dialect per protocol: S3
// (s3_dialect.cc), Azure Blob Storage (azure_dialect.cc), Google Cloud
// Storage's JSON API (gcs_dialect.cc). Internal to the storage layer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "http_request.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::storage::http {

// What a finished attempt came to: success (err ok), a final error, or an
// error worth another attempt (retry).
struct Outcome {
  Status err;
  bool retry = false;
};

// One attempt's address and headers, filled by HttpDialect::Prepare.
struct Attempt {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
};

class HttpDialect {
 public:
  virtual ~HttpDialect() = default;

  // For messages: "s3://bucket at https://host" (no secret).
  virtual std::string Describe() const = 0;
  // The endpoint a failed connection names ("https://host:port").
  virtual std::string Endpoint() const = 0;
  // ObjectStore::ObjectOptions.
  virtual std::string ObjectOptions() const { return ""; }

  // The operation-specific parts of a new request (its method, name, query
  // and body); the engine has set op, key, body and md5 before.
  virtual void ShapePut(Request& r) const = 0;
  virtual void ShapeList(Request& r, const ListQuery& q) const = 0;
  // How many keys one delete request takes: S3's DeleteObjects 1000 (one
  // POST); a store without a batch delete 1, and the engine sends one
  // request per key.
  virtual size_t DeleteBatch() const = 0;
  virtual void ShapeDelete(Request& r, const std::vector<std::string>& keys) const = 0;

  // One attempt's URL and every header it needs (authentication included;
  // credentials are renewed here when they are about to expire). The engine
  // sets the body and the Range (r.RangeSpec(), sent as "Range: bytes=..."),
  // which a signature covering it must include.
  virtual Status Prepare(const Request& r, Attempt* out) = 0;

  // A 2xx answer: does it show the store kept what was sent (a PUT's
  // checksum)?
  virtual Outcome Answered(const Request& r) const = 0;
  // Any other answer, from its status and error body: final or worth another
  // attempt, and in the caller's words (kNotFound for a missing object,
  // kInvalidArgument for a missing bucket or refused credentials).
  virtual Outcome Failed(const Request& r, long http) const = 0;
  // A 2xx delete answer may still report keys it could not delete (S3's
  // DeleteObjects). (A single key already gone is no error: Failed says
  // so for its 404.)
  virtual Status DeleteAnswered(const Request& r) const = 0;
  // A list page's body.
  virtual Result<ListResult> ParseList(const std::string& body) const = 0;
};

}  // namespace xbak::storage::http
