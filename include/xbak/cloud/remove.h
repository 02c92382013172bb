// `xbcloud delete`: removes every object of a backup and nothing else.
//
// In an order that a cut at any point leaves visible and finishable: first
// the manifest is replaced by a tombstone (layout.h; get refuses the backup,
// list shows it as being deleted, expire finishes it), then the keys under
// "NAME/" are deleted in batches of up to 1000, and the tombstone last. A prefix that also holds
// another backup's marker ("NAME/x/xbcloud.manifest": the backup "NAME/x")
// is refused before anything is written.
#pragma once

#include <string>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

// kNotFound when there is no object of the backup. *deleted counts objects.
Status CloudDelete(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& name,
                   uint64_t* deleted = nullptr);

}  // namespace xbak::cloud
