// The pages an incremental backup's deltas hold, read from the deltas' block
// headers only (slot 0 of each block: no page image is read).
//
// `xbak --restore` gives them to the redo apply of the step before (redo_apply.h,
// RedoApplyOptions::superseded): the next step writes each of these pages
// whole, so a record of the step before that changes one would be undone at
// once. Only what certainly replaces a page is listed: a delta whose table the
// incremental also brings as a whole new file (.new) is left out.
#pragma once

#include <string>

#include "xbak/prepare/redo_apply.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// Page numbers are in the tablespace (ibdata2's from its first page on).
// Reads INC's .meta files and every delta's block headers on
// `parallel` threads; a delta it cannot read is an error naming it and the
// byte offset.
// `applied_records`: as for ScanIncremental.
Result<PageSetPtr> DeltaPages(const std::string& inc, int parallel, bool applied_records = false);

}  // namespace xbak::prepare
