// ObjectStore on Google Cloud Storage through its JSON API (or
// fake-gcs-server, its emulator), on the HTTP engine every object store
// shares (storage/http_store.h): multipart uploads whose metadata carries
// the object's MD5 (the service refuses a body that does not match it),
// ranged media downloads pinned to the generation first read, object
// listings with a delimiter and page tokens, one delete per object.
// Authentication: an OAuth 2.0 bearer token (google_credentials.h).
//
// Google's other mode, the XML API with HMAC keys, is S3's protocol: xbcloud
// runs it on the S3 driver (s3_store.h) at https://storage.googleapis.com.
#pragma once

#include <memory>
#include <string>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/google_credentials.h"
#include "xbak/storage/http_options.h"
#include "xbak/storage/object_store.h"

namespace xbak::storage {

struct GcsConfig : HttpOptions {
  std::string bucket;    // must exist
  std::string endpoint;  // "https://storage.googleapis.com" when empty
  // Where tokens come from; null: no Authorization header (an emulator,
  // STORAGE_EMULATOR_HOST, as Google's client libraries do).
  std::shared_ptr<GoogleTokens> tokens;
  std::string storage_class;  // put: STANDARD, NEARLINE, COLDLINE, ARCHIVE ("": the bucket's)
};

// Google's bucket names: 3-222 of a-z 0-9 - _ . (the XML API's too);
// kInvalidArgument naming --google-bucket otherwise.
Status CheckGcsBucketName(const std::string& bucket);

// Checks the configuration (bucket name, endpoint) and builds the store.
// Nothing is sent yet.
Result<std::unique_ptr<ObjectStore>> MakeGcsStore(EventLoop& loop, GcsConfig config);

// The JSON API's documents, parsed strictly (untrusted bytes; fuzzed):
// an objects.list page ({"items": [{"name", "size", "md5Hash", "updated"}],
// "prefixes": [...], "nextPageToken"}), each "size" a decimal string.
Result<ListResult> ParseGcsList(std::string_view json);
// An object resource's md5Hash (base64), as an upload answers it.
std::optional<Md5Digest> GcsObjectMd5(std::string_view json);
// {"error": {"code", "message", "errors": [{"reason"}]}}: reason and
// message, empty when the body is not such a document.
struct GcsError {
  std::string reason, message;
};
GcsError ParseGcsError(std::string_view json);

}  // namespace xbak::storage
