// `xbcloud list`'s output: a catalog as a table for people (chains drawn as
// a tree under their full backups) or as JSON for scripts (docs/xbcloud.md
// names every field).
#pragma once

#include <string>

#include "xbak/cloud/catalog.h"

namespace xbak::cloud {

std::string FormatCatalogTable(const Catalog& catalog);
std::string FormatCatalogJson(const Catalog& catalog);

// Unix time as "YYYY-MM-DD HH:MM:SS" in UTC; "-" for 0.
std::string UtcTime(int64_t unix_time);

}  // namespace xbak::cloud
