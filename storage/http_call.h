// One blocking HTTP request, for what is asked rarely and before a store's
// requests can go: credentials (STS, the instance metadata services, an
// OAuth token endpoint). A renewal that waits a second on the store's loop
// once an hour costs less than a thread to run it on. Internal to the
// storage layer.
#pragma once

#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::storage::http {

struct Call {
  std::string method = "GET";  // GET, POST, PUT
  std::string url;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
  std::string cacert;
  bool insecure = false;
  long timeout_s = 10;
};

struct Answer {
  long status = 0;
  std::string body;  // at most 1 MiB: no credential answer is larger
};

// Fails (kIo) only when no HTTP answer came; errors name `what` and the URL
// (never put a secret in a URL).
Result<Answer> Perform(const Call& c, const std::string& what);

}  // namespace xbak::storage::http
