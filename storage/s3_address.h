// Where an S3 store's requests go: the bucket name and endpoint checked, the
// addressing style (path or virtual-hosted) chosen. Internal to the storage
// layer (s3_dialect.cc).
#pragma once

#include <string>

#include "xbak/storage/s3_store.h"
#include "xbak/util/status.h"

namespace xbak::storage::s3 {

struct Address {
  std::string base_url;     // scheme://host[:port], or scheme://bucket.host[:port]
  std::string path_prefix;  // "/bucket/" (path style) or "/" (virtual-hosted)
};

// Checks the bucket name, the endpoint and that credentials are given;
// fills in the defaults (region, endpoint) in *config.
Result<Address> ResolveAddress(S3Config* config);

}  // namespace xbak::storage::s3
