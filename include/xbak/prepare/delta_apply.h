// The pieces of an incremental apply (incremental_prepare.h runs them in
// order): what an incremental holds, each delta checked against its base
// before anything is written, and the deltas' pages written into the base's
// files by pieces that several threads share. The .delta format itself is
// innodb's (innodb/delta.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/util/prefetch.h"
#include "xbak/util/progress.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// A file of a non-InnoDB engine or of a table's definition (.frm, .MYD, ...),
// which an incremental carries whole.
bool IsOtherTableFile(const std::string& name);

struct DeltaJob {
  std::string rel;    // data file inside the backup, e.g. "db/t.ibd" or "ibdata1"
  std::string delta;  // INC/rel.delta
  innodb::DeltaMeta meta;
  uint64_t size = 0;
  bool has_page0 = false;
  bool replace = false;          // a table dropped and re-created between the backups
  std::vector<uint64_t> blocks;  // byte offset of each block, found by ValidateDelta
  uint64_t want_size = 0;        // FSP_SIZE of the delta's page 0, in bytes (0: no page 0)
  // ibdata2, ibdata3...: the delta numbers pages within the file, whose first
  // page is this page of the system tablespace; its format is ibdata1's.
  uint32_t first_page = 0;
  std::optional<innodb::SpaceFlags> system_flags;
  std::optional<innodb::CryptData> crypt;  // of an encrypted tablespace, from the delta's page 0
  // Set by ScanIncremental from the incremental's DDL markers, the one home of
  // this rule. Void: not applied. Its table was created again during the
  // incremental (replaced wholesale by db/t.new), or dropped during it after
  // it was copied (db/t.del: the delta, pages changed since the base without
  // page 0, has nothing to go into; xtrabackup's prepare deletes such a delta,
  // PXB-3320). Not when the table was renamed after it was copied and a new
  // table took its name (db/t.ren and db/t.new, log rotation: RENAME TABLE t TO
  // t_old; CREATE TABLE t): the delta is the renamed table's, and `target` is
  // the .ren name, where the markers put the base's file. Otherwise `target`
  // is `rel` (a rename during the incremental is the redo log's FILE_RENAME).
  bool is_void = false;
  std::string target;
  // Written into the datadir as its stream arrived (`delta` is then the
  // NAME.xbapplied record, applied_delta.h): counted, never written again.
  bool applied = false;
};

// A run of consecutive blocks of one delta: the unit of work of the apply
// threads. A big delta is cut into several pieces so that one huge file
// (ibdata1, a large table) does not leave one thread working alone at the end.
struct Piece {
  const DeltaJob* job;
  size_t first_block, end_block;
  uint64_t bytes;
  bool whole_file;  // the only piece of its file: it also creates/sizes the file
};

// What an incremental directory holds, by kind.
struct IncScan {
  std::vector<DeltaJob> deltas;
  std::vector<std::string> news;                          // "db/t" of db/t.new
  std::vector<std::string> dels;                          // "db/t"
  std::vector<std::pair<std::string, std::string>> rens;  // old, new space names
  std::vector<std::string> others;                        // non-InnoDB files (rel)
};

// Lists INC, reads every .meta (on `parallel` threads) and sets each delta's
// is_void and target from the DDL markers. `applied_records`: INC is a
// staged incremental of `xbak --restore --from-stream`, whose NAME.xbapplied
// records (applied_delta.h) stand for deltas written as they arrived (their
// space id must be the .meta's); anywhere else such a name is refused.
Result<IncScan> ScanIncremental(const std::string& inc, int parallel, bool applied_records = false);

// Reads and parses page 0 of a tablespace file. `special`, when given: set
// when the redo step would look closer at this tablespace (PAGE_COMPRESSED,
// another page size, or crypt data), see CheckRedoApplicable.
Result<innodb::SpaceHeader> ReadPage0(const std::string& path, uint32_t page_size, bool* special = nullptr);

// Walks a whole delta, checking its structure and every page's checksum
// against the base file's format, without writing anything; fills in the
// job's blocks, page 0 facts and whether it replaces the base file.
// `base_page0`: the base file's page 0 header when the caller read it already
// (tens of thousands of tables: each file is opened once less).
Status ValidateDelta(DeltaJob& j, const std::string& base_path, bool base_exists,
                     const innodb::SpaceHeader* base_page0);

// Creates the data file if needed, empties it for a re-created table and
// extends it to the delta's FSP_SIZE (never shrinks it): done once per file,
// before any of its pieces is written.
Status PrepareTarget(const DeltaJob& j, const std::string& target);

// Writes the pages of blocks [first_block, end_block) of a delta. Nothing is
// fsync'ed here: the caller makes the whole apply durable with one syncfs().
Status ApplyPiece(const Piece& piece, const std::string& target, util::Progress& progress);

// Makes dst a copy of src. An incremental carries a copy of every .frm,
// .MYI, db.opt, ...: thousands of small files that are mostly identical to the
// base's. Those are left alone, which spares creating thousands of inodes
// (on ext4 the slowest part of an apply over many small tables). Not
// fsync'ed: the caller syncs the filesystem once.
Status CopyReplace(const std::string& src, const std::string& dst);

// What a Prefetcher (util/prefetch.h) asks of the disk ahead of the incremental apply's threads:
// page 0 of each of the base's tablespaces (`base_ibds`, relative to `full`), then the first pages
// of each delta (what ValidateDelta reads); and each small file the incremental replaces
// (`others`), with the base's copy it is compared with (CopyReplace).
std::vector<util::PrefetchRange> FirstPagesAhead(const std::string& full,
                                                 const std::vector<std::string>& base_ibds,
                                                 uint32_t page_size, const std::vector<DeltaJob>& deltas);
std::vector<util::PrefetchRange> OtherFilesAhead(const std::string& inc, const std::string& full,
                                                 const std::vector<std::string>& others);

}  // namespace xbak::prepare
