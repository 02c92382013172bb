// The engine every HTTP object store runs on: an ObjectStore driven by
// libcurl's multi interface on a libev EventLoop (any number of requests in
// flight on one thread, connections reused), which retries what is worth
// retrying and reads ranges in pieces with flow control. What a protocol
// says is its dialect's (http_dialect.h). Internal to the storage layer.
#pragma once

#include <memory>

#include "http_dialect.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/http_options.h"
#include "xbak/storage/object_store.h"

namespace xbak::storage::http {

std::unique_ptr<ObjectStore> MakeHttpStore(EventLoop& loop, const HttpOptions& options,
                                           std::unique_ptr<HttpDialect> dialect);

}  // namespace xbak::storage::http
