// How an HTTP object store (S3, Azure Blob, Google Cloud Storage) connects
// and retries: the same for every driver, set from xbcloud's --insecure,
// --cacert, --max-retries and --max-backoff.
#pragma once

#include <string>

namespace xbak::storage {

struct HttpOptions {
  bool insecure = false;  // TLS without certificate verification
  std::string cacert;     // CA bundle file (default: the system's)
  // Retries: up to max_retries, exponential backoff with equal jitter.
  int max_retries = 10;
  double backoff_initial_s = 0.2;
  double backoff_max_s = 20;
  long connect_timeout_s = 10;
  long stall_timeout_s = 30;  // a transfer that moves no byte for this long is retried
};

}  // namespace xbak::storage
