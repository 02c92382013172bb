// The names of a backup's metadata files. xtrabackup and mariabackup up to
// MariaDB 11.0 write xtrabackup_*; mariadb-backup from 11.1 writes the same
// files as mariadb_backup_* (and still reads the old names). xbak writes the
// names of the server's own tool for that version (server.h says which) and
// reads either, so a backup keeps the names it was made with: a prepare
// rewrites the checkpoints under the name the backup holds.
#pragma once

#include <string>
#include <string_view>

namespace xbak::backupdir {

enum class Meta {
  kCheckpoints,  // backup type and LSNs; written last: its presence means complete
  kInfo,         // who/when/what
  kBinlogInfo,   // binlog file, position and GTID at the copy point
  kSlaveInfo,    // --slave-info: CHANGE MASTER for a new replica
  kGaleraInfo,   // --galera-info: "<wsrep_local_state_uuid>:<wsrep_last_committed> <domain id>\n"
};

enum class MetaScheme {
  kXtrabackup,     // xtrabackup_checkpoints ...
  kMariadbBackup,  // mariadb_backup_checkpoints ...
};

// The file name of `m` under `scheme`.
std::string MetaName(Meta m, MetaScheme scheme);

// Which scheme DIR's backup uses: the one its checkpoints file has (the new
// one if, oddly, both), else the one of any other metadata file present,
// else kXtrabackup.
MetaScheme SchemeOf(const std::string& dir);

// DIR/<name of m>: the name DIR holds it under, else under SchemeOf(dir).
std::string MetaPath(const std::string& dir, Meta m);
// The name of `m` that DIR holds a file NAME + suffix of (".xbenc": as an
// encrypted backup stores it), the new scheme's first; "" when neither.
std::string StoredMetaName(const std::string& dir, Meta m, std::string_view suffix = {});

// Whether a path relative to a backup's top is `m` under either scheme
// ("xtrabackup_checkpoints" or "mariadb_backup_checkpoints").
bool IsMeta(std::string_view rel, Meta m);
// Whether it is any of the tools' own files at a backup's top that are not
// the server's: the metadata files above, and the others both tools write
// there (xtrabackup_binlog_pos_innodb, mariadb_backup_tablespaces ...).
bool IsToolFile(std::string_view rel);

}  // namespace xbak::backupdir
