// How a put begins (put.cc): before a byte of the stream is read, the store
// must answer and NAME must be free, or hold the leftovers of an interrupted
// put, which the put resumes; then the put's started marker is written.
// Internal to the cloud layer.
#pragma once

#include <map>
#include <string>

#include "xbak/cloud/layout.h"
#include "xbak/cloud/put.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct PutStart {
  std::map<std::string, storage::ObjectInfo> stored;  // under NAME/, by an interrupted put
  bool trust_stored = true;                           // stored under the same object options as this put's
  StartedMarker marker;                               // this put's, written
};

// Refused: a complete NAME, one being deleted, one inside another backup or
// holding one.
Result<PutStart> BeginPut(storage::EventLoop& loop, storage::ObjectStore& store, const PutOptions& options);

}  // namespace xbak::cloud
