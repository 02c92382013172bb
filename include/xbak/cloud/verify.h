// `xbcloud verify NAME`: checks a backup in an object store without
// restoring it:
//  * the completion manifest is there, parses, and every object it lists
//    exists with the size it gives; no data object is missing from it;
//  * every data object has its .md5 sidecar; every object is downloaded
//    (`parallel` GETs in flight, MD5s on a pool of threads) and its MD5 must
//    match both its sidecar and the manifest;
//  * every object is a well-formed piece of xbstream: whole chunks of the one
//    file it is named after, each payload's CRC-32 right.
// Each problem is one line naming the object; memory holds at most
// parallel + threads objects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct CloudVerifyOptions {
  std::string name;
  int parallel = 4;     // GETs in flight
  int md5_threads = 2;  // threads computing MD5s and chunk CRCs
};

struct CloudVerifyResult {
  uint64_t objects = 0;               // data objects checked
  uint64_t bytes = 0;                 // their bytes
  std::vector<std::string> problems;  // one line each, sorted
  bool sound() const { return problems.empty(); }
  // "verify: N objects, B bytes, K problems"
  std::string Summary() const;
};

// Fails (kNotFound) only when the backup has no object at all, or when the
// store cannot be listed; everything wrong with the objects is a problem.
Result<CloudVerifyResult> CloudVerify(storage::EventLoop& loop, storage::ObjectStore& store,
                                      const CloudVerifyOptions& options);

// Checks that `body` is whole xbstream chunks, all of file `path`, with right
// payload CRCs. Returns "" or what is wrong (with the byte offset).
std::string CheckObjectChunks(const std::string& body, const std::string& path);

}  // namespace xbak::cloud
