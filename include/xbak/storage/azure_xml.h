// The Azure Blob Storage documents the Azure driver reads: List Blobs pages
// (<EnumerationResults>) and error bodies. Untrusted bytes, parsed by the
// shared scanner (xml.h): a shape the driver relies on that is missing is
// kCorrupt with its byte offset.
#pragma once

#include <cstdint>
#include <string_view>

#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::storage {

// <EnumerationResults><Blobs><Blob><Name/><Properties><Content-Length/>
// <Content-MD5/><Last-Modified/></Properties></Blob><BlobPrefix><Name/>
// </BlobPrefix>...</Blobs><NextMarker/></EnumerationResults>. Every Blob
// needs a Name and a decimal Content-Length; Content-MD5 (base64) becomes
// the object's MD5. Objects and prefixes come back sorted (the service may
// interleave them).
Result<ListResult> ParseBlobList(std::string_view xml);

// "Fri, 27 Nov 2026 03:35:11 GMT" (RFC 1123, as HTTP dates are written) as
// Unix time; 0 for anything else.
int64_t ParseHttpDate(std::string_view text);
// Unix time as an HTTP date.
std::string FormatHttpDate(int64_t unix_time);

}  // namespace xbak::storage
