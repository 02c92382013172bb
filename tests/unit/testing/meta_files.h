// The metadata file names the unit tests write and look for: mariabackup
// 10.x's (xtrabackup_*), which xbak writes for a MariaDB 10.11 server.
// meta_names_test covers the other scheme.
#pragma once

#include <string>

#include "xbak/backupdir/meta_names.h"

namespace xbak::meta_files {

inline const std::string kCheckpoints =
    backupdir::MetaName(backupdir::Meta::kCheckpoints, backupdir::MetaScheme::kXtrabackup);
inline const std::string kInfo =
    backupdir::MetaName(backupdir::Meta::kInfo, backupdir::MetaScheme::kXtrabackup);

}  // namespace xbak::meta_files
