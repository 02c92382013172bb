// The few S3 XML documents xbcloud reads and writes: ListObjectsV2 pages,
// error bodies, multi-object delete requests and their results. Response
// bodies are untrusted bytes (a proxy, a buggy server, a cut-off transfer), so
// the parsers check the shape they rely on and fail with kCorrupt naming the
// byte offset instead of guessing. Keys round-trip exactly, whatever bytes
// they hold (entities, character references, UTF-8, control characters).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/storage/aws_credentials.h"
#include "xbak/storage/object_store.h"
#include "xbak/storage/xml.h"  // XmlEscape, XmlUnescape
#include "xbak/util/status.h"

namespace xbak::storage {

struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;      // quotes stripped, lowercase; empty if the server sent none
  int64_t modified = 0;  // LastModified as Unix time; 0 if absent or not ISO 8601 UTC
};

struct ListPage {
  std::vector<ListedObject> objects;
  std::vector<std::string> prefixes;  // CommonPrefixes/Prefix (a listing with a delimiter)
  bool truncated = false;
  std::string next_token;  // NextContinuationToken; never empty when truncated
};

// A ListObjectsV2 response (<ListBucketResult>): Contents/Key, Contents/Size,
// Contents/ETag, Contents/LastModified, CommonPrefixes/Prefix, IsTruncated, NextContinuationToken. Every
// Contents must have a Key and a decimal Size; a truncated page must carry a continuation token (or the
// caller would list the first page forever).
Result<ListPage> ParseListObjectsV2(std::string_view xml);
// An STS answer (AssumeRoleResponse, AssumeRoleWithWebIdentityResponse):
// Credentials/AccessKeyId, SecretAccessKey, SessionToken, Expiration. An
// <ErrorResponse> becomes kInvalidArgument with its code and message.
Result<AwsCredentials> ParseStsCredentials(std::string_view xml, const std::string& origin);

// ISO 8601 in UTC as AWS writes it ("2026-11-26T21:50:54.000Z",
// "2026-11-26T21:50:54Z") as Unix time; 0 for anything else.
int64_t ParseIsoUtc(std::string_view text);
// Unix time as "2026-11-26T21:50:54Z".
std::string FormatIsoUtc(int64_t unix_time);

// As the ObjectStore interface hands it on: an ETag of 32 hex digits becomes
// the object's MD5 (another is a multipart or encrypted object's).
ListResult ListResultFrom(ListPage page);

struct S3ErrorBody {
  std::string code, message;
};

// <Error><Code>..</Code><Message>..</Message>...</Error>. Returns empty fields,
// not an error, when the body is not such a document (an HTML page from a
// proxy, an empty body of a HEAD response): the HTTP status still says enough.
S3ErrorBody ParseErrorBody(std::string_view xml);

struct DeleteFailure {
  std::string key, code, message;
};

// The <DeleteResult> of POST ?delete: its <Error> entries (Key/Code/Message).
// <Deleted> entries are ignored: with Quiet mode the server omits them anyway.
Result<std::vector<DeleteFailure>> ParseDeleteResult(std::string_view xml);

// <?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>
// <Object><Key>..</Key></Object>...</Delete>. S3 accepts at most 1000 keys per
// request; splitting larger sets is the caller's job.
std::string BuildDeleteRequest(const std::vector<std::string>& keys);

}  // namespace xbak::storage
