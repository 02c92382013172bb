// ObjectStore on a local directory: key "a/b.000" is the file DIR/a/b.000.
// For tests of the cloud commands without a server, and for users who want a
// backup "bucket" on a mounted filesystem. Operations run synchronously but
// complete through the loop, as the interface promises.
#pragma once

#include <memory>
#include <string>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"

namespace xbak::storage {

std::unique_ptr<ObjectStore> MakePosixStore(EventLoop& loop, std::string root);

}  // namespace xbak::storage
