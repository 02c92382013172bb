// Applies the redo log copied into a backup (its ib_logfile0) to the backup's
// tablespace files, the way MariaDB 10.11's crash recovery does: parse from
// the checkpoint to the end, group the records by page, and replay on each
// page only the mini-transactions that started at or after its FIL_PAGE_LSN.
//
// The log is scanned twice: first to check every mtr (framing, CRC-32C) and
// to learn every tablespace name it mentions, without writing anything; then
// to apply it in batches bounded by `use_memory`, each batch spread over
// `parallel` threads by page. A page is read once per batch, patched in
// memory, given its new LSN and checksum, and written once.
//
// Idempotent: running it again (after a crash or kill at any point) skips
// what was applied, by page LSN, and gives the same files; a page the kill
// left torn is first written back whole from the doublewrite file
// (RedoApplyOptions::doublewrite).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "xbak/backupdir/table_filter.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/trx_sys.h"
#include "xbak/prepare/page_set.h"
#include "xbak/prepare/prepare_crypt.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// What the first pass over a log learnt (opaque): CheckRedoApplicable hands
// it out so that the apply of the same log does not read it all again.
struct CheckedLog;
using CheckedLogPtr = std::shared_ptr<const CheckedLog>;
using PageSetPtr = std::shared_ptr<const PageSet>;

// The tablespaces a log does more to than change pages: FILE_CREATE,
// FILE_RENAME (both names), FILE_DELETE, TRIM_PAGES, new crypt data or flags
// on page 0. By id, and by name in the backup ("db/t.ibd").
struct LogDdl {
  std::set<uint32_t> spaces;
  std::set<std::string> names;
};

struct RedoApplyOptions {
  std::string dir;  // backup directory: ibdata1, undo*, db/*.ibd, backup-my.cnf
  // Where ib_logfile0 is read (default: `dir`). `xbak --restore` applies the
  // log where the backup keeps it, to the files it wrote into the datadir.
  std::string log_dir;
  int parallel = 1;
  uint64_t use_memory = 256ull << 20;  // parsed log of one batch (log bytes + index)
  // The log must reach this LSN (xtrabackup_checkpoints' last_lsn), or the
  // backup is incomplete and nothing is written.
  uint64_t required_lsn = 0;
  // Pages whose records are not applied, asked for once the log is checked,
  // the catalog built and the DDL markers carried out (before_write), before
  // the first record is applied. `xbak --restore` returns the pages of the
  // next incremental's deltas, which replace these pages whole right after
  // this log (restore.cc); it learns from `ddl` which tablespaces this log
  // creates, renames, drops, truncates or re-encrypts: the next incremental's
  // deltas of the others may go in before this log (restore/direct_delta.h).
  // Everything else is as without it (the whole log checked; FILE_ and
  // TRIM_PAGES records, page 0 of every tablespace, freed pages, file sizes),
  // so the files are the same bytes. Not asked at all if no record of the log
  // changes a page: the caller then opens the next deltas' gate itself once
  // the step is done.
  std::function<Result<PageSetPtr>(const LogDdl& ddl)> superseded;
  // From CheckRedoApplicable of this same log and required_lsn: its first
  // pass is not made again (any other log's is ignored).
  CheckedLogPtr checked;
  std::chrono::milliseconds progress_interval{2000};
  // A kill is followed by a run of the same apply, which must give the same
  // bytes: every page goes through the doublewrite file first
  // (doublewrite.h). Off for `xbak --restore` from streams, which starts
  // over instead.
  bool doublewrite = false;
  // Runs once the whole log has been checked, before anything is written
  // (prepare carries out the backup's DDL markers there).
  std::function<Status()> before_write;
  // A partial backup's filter: tables it left out are not brought back from
  // the log (created or re-created during the backup).
  backupdir::TableFilter filter;
  // Where the keys of an encrypted backup are, over what backup-my.cnf says.
  KeyOptions keys;
  // --innodb-force-recovery=1 (the server's SRV_FORCE_IGNORE_CORRUPT): a page the log cannot be
  // applied to (corrupt, or records that do not fit it) is left as it was, named in a warning,
  // instead of failing the apply. The log itself must still be whole.
  bool ignore_corrupt_pages = false;
};

struct RedoApplyStats {
  uint64_t checkpoint_lsn = 0;
  uint64_t end_lsn = 0;             // LSN after the last complete mtr
  uint64_t superseded_records = 0;  // of RedoApplyOptions::superseded pages, not applied
  uint64_t mtrs = 0;
  uint64_t records = 0;
  uint64_t pages_written = 0;
  uint64_t batches = 0;
  uint64_t ignored_records = 0;       // records of tablespaces with no file (dropped during the backup)
  std::set<uint32_t> ignored_spaces;  // their ids
  uint64_t corrupt_pages_left = 0;    // RedoApplyOptions::ignore_corrupt_pages: pages left as they were
  // The binary log position InnoDB recorded with its last commit, read
  // from the applied files (prepare/recorded_binlog.h); nullopt: none.
  std::optional<innodb::RecordedBinlog> recorded_binlog;
};

// Checks the whole log first; a corrupt or short log, a log of another
// format, an encrypted log or tablespace whose key is not at hand, and
// tablespaces xbak cannot apply to are errors before the first byte is
// written. Encrypted pages are decrypted to apply the log and written back
// encrypted as the server would.
Result<RedoApplyStats> ApplyRedoLog(const RedoApplyOptions& o);

// The checks ApplyRedoLog makes before writing, on their own: the log of
// `log_dir` (up to `required_lsn`) and the data files of `data_dir`. An
// incremental's apply runs them (its log, the base's files) before it writes
// its first delta; `incoming` names the encrypted tablespaces its deltas
// bring (their crypt data), whose keys are checked with the others.
// `only_tables`: when the caller read every file-per-table page 0 already, the
// ones (rel paths) that need a look (PAGE_COMPRESSED, or crypt data); the
// others are not opened again. Null: every file.
// `checked` (may be null): in, a CheckRedoLog of this same log, taken instead
// of reading the log again; out, the pass over the log, for ApplyRedoLog.
Status CheckRedoApplicable(const std::string& log_dir, const std::string& data_dir, uint64_t required_lsn,
                           const KeyOptions& keys, int parallel,
                           const std::vector<std::pair<std::string, innodb::CryptData>>& incoming = {},
                           const std::set<std::string>* only_tables = nullptr,
                           CheckedLogPtr* checked = nullptr);

// The log half of CheckRedoApplicable alone: it reads only the log of
// `log_dir` and `data_dir`'s backup-my.cnf and keys, so it can run while
// other threads read the data files (an incremental's apply runs it while
// the deltas are validated).
Result<CheckedLogPtr> CheckRedoLog(const std::string& log_dir, const std::string& data_dir,
                                   uint64_t required_lsn, const KeyOptions& keys);

}  // namespace xbak::prepare
