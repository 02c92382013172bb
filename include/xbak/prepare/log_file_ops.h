// What the redo log's FILE_ records say about files, carried out on a
// backup directory (`dir`) once its log is applied: the last name of each
// tablespace, and the tablespaces dropped during the backup.
#pragma once

#include <string>

#include "xbak/prepare/space_catalog.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// FILE_RENAME that the backup's own DDL markers did not already carry out
// (a backup of another tool, or none was needed); the catalog follows.
Status RenameAsTheLogSays(const std::string& dir, const FileNames& names, Catalog& catalog);

// FILE_DELETE, likewise: only a file that still holds that tablespace id.
Status RemoveDroppedFiles(const std::string& dir, const FileNames& names);

}  // namespace xbak::prepare
