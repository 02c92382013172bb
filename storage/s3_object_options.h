// The headers that carry the S3 options users set on their objects: storage
// class, server-side encryption (SSE-S3, SSE-KMS, SSE-C) and Object Lock.
// Internal to the storage layer (s3_dialect.cc).
#pragma once

#include <string>
#include <vector>

#include "xbak/storage/s3_store.h"
#include "xbak/util/status.h"

namespace xbak::storage::s3 {

// Checks the options (values S3 accepts, SSE-C key length, a lock date in
// the future) before anything is sent.
Status CheckObjectOptions(const S3Config& config);
// Headers of a PUT.
std::vector<std::string> PutHeaders(const S3Config& config);
// Headers of a GET (SSE-C only: the key again).
std::vector<std::string> GetHeaders(const S3Config& config);
// The options as text for ObjectStore::ObjectOptions (the SSE-C key as its MD5).
std::string ObjectOptionsText(const S3Config& config);
// Whether a PUT's ETag is the MD5 of its body (not with SSE-KMS or SSE-C).
bool EtagIsMd5(const S3Config& config);

}  // namespace xbak::storage::s3
