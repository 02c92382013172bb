// `xbcloud delete`: removes every object of a backup and nothing else.
//
// The completion marker goes first, so a backup that is half deleted (the
// command was interrupted) is never mistaken for a complete one; then the
// keys under "NAME/" are listed and deleted in batches of up to 1000, until
// none is left. A prefix that also holds another backup's marker
// ("NAME/x/xbcloud.manifest": the backup "NAME/x") is refused.
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
