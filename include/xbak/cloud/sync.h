// One object-store operation run to completion: for the few sequential steps
// of the cloud commands (check a name, read the manifest, delete a page).
// Called on the thread that owns `loop`, while the loop is not running.
#pragma once

#include <string>
#include <vector>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"

namespace xbak::cloud {

Result<storage::ListResult> ListSync(storage::EventLoop& loop, storage::ObjectStore& store,
                                     const std::string& prefix, const std::string& token,
                                     bool delimit = false);
Result<std::string> GetSync(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& key);
// Every key starting with `prefix`, all pages of the listing, in key order.
Result<std::vector<storage::ObjectInfo>> ListAllSync(storage::EventLoop& loop, storage::ObjectStore& store,
                                                     const std::string& prefix);
// Stores a small object (a marker).
Status PutSync(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& key,
               const std::string& text);
Status DeleteSync(storage::EventLoop& loop, storage::ObjectStore& store,
                  const std::vector<std::string>& keys);

}  // namespace xbak::cloud
