// libFuzzer target: arbitrary bytes as the metadata files of a backup that
// xbak reads back: xtrabackup_checkpoints, a .meta, backup-my.cnf (option-file
// syntax) and innodb_data_file_path. Each parser must accept or reject
// cleanly; accepted checkpoints and .meta must survive Format -> Parse
// unchanged.
#include <cstdint>
#include <string>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/delta.h"
#include "xbak/util/options_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  auto c = xbak::backupdir::ParseCheckpoints(in, "fuzz");
  if (c.ok()) {
    auto again = xbak::backupdir::ParseCheckpoints(xbak::backupdir::FormatCheckpoints(*c), "again");
    if (!again.ok() || again->backup_type != c->backup_type || again->from_lsn != c->from_lsn ||
        again->to_lsn != c->to_lsn || again->last_lsn != c->last_lsn ||
        again->recover_binlog_info != c->recover_binlog_info) {
      __builtin_trap();
    }
  }
  auto m = xbak::innodb::ParseDeltaMeta(in, "fuzz");
  if (m.ok()) {
    auto again = xbak::innodb::ParseDeltaMeta(xbak::innodb::FormatDeltaMeta(*m), "again");
    if (!again.ok() || again->page_size != m->page_size || again->zip_size != m->zip_size ||
        again->space_id != m->space_id) {
      __builtin_trap();
    }
  }
  (void)xbak::util::ParseOptionText(in, "fuzz", {"mysqld", "xbak", "client"});
  (void)xbak::backupdir::ParseDataFilePath(in);
  return 0;
}
