// The link file of an InnoDB table created with DATA DIRECTORY: datadir/db/t.isl
// holds the absolute path of the table's .ibd, "<DATA DIRECTORY>/db/t.ibd".
// MariaDB 10.11 writes the path without a newline and, reading it, drops
// trailing bytes <= 0x20; it treats a path with fewer than two '/' as no link.
// The server finds a table by its .isl target or by ./db/t.ibd (the DATA_DIR
// flag is not needed to open it), so a restore may put the .ibd back where the
// .isl points, or into the datadir without the .isl.
#pragma once

#include <string>

#include "xbak/util/status.h"

namespace xbak::innodb {

inline constexpr const char* kIslSuffix = ".isl";

// The .ibd path a link file holds. `origin` names the file in errors. Refuses
// what the server would not follow and what could lead a restore astray: a
// relative path, "..", a NUL, a name not ending in ".ibd".
Result<std::string> ParseIsl(const std::string& content, const std::string& origin);

// The content of a link file pointing at `ibd_path` (no newline, as the server
// writes it).
std::string FormatIsl(const std::string& ibd_path);

}  // namespace xbak::innodb
