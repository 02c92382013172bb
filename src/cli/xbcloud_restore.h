// xbcloud restore: a point-in-time restore from what the store holds under a
// prefix, the backups and the archived binary logs (pitr/point_restore.h).
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <string>

#include "xbak/pitr/point_restore.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"

namespace xbak::cli {

void DescribeRestoreOptions(boost::program_options::options_description* visible);
// Checks them for `command`; an exit status when they are wrong.
std::optional<int> CheckRestoreOptions(const boost::program_options::variables_map& vm,
                                       const std::string& command, pitr::PointRestoreOptions* out);
// Runs restore PREFIX; its exit status.
int RunPointRestore(storage::EventLoop& loop, storage::ObjectStore& store, pitr::PointRestoreOptions o);

}  // namespace xbak::cli
