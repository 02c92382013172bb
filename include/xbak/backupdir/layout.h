// Where a server keeps its files, and which of them a backup takes. Built
// from SHOW GLOBAL VARIABLES (or overridden by options), then used to list
// the InnoDB tablespaces and the other files to copy.
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xbak/backupdir/table_filter.h"
#include "xbak/util/status.h"

namespace xbak::backupdir {

struct ServerLayout {
  std::string datadir;        // absolute, no trailing '/'
  std::string log_dir;        // directory of ib_logfile0
  std::string data_home_dir;  // directory of the ibdata files
  std::string undo_dir;
  std::string aria_log_dir;
  std::vector<std::string> system_files;  // ibdata1, ibdata2, ... (names as in data_file_path)
  std::string data_file_path;             // innodb_data_file_path, verbatim
  uint32_t page_size = 16384;
  uint64_t log_file_size = 0;
  uint32_t undo_tablespaces = 0;
  std::string checksum_algorithm;
  std::string compression_level;
  std::string version;  // @@version
  // @@ignore_db_dirs: directories of the datadir the server does not take for
  // databases, which a backup leaves out as mariabackup does.
  std::set<std::string> ignore_db_dirs;
};

// Builds the layout from the server's variables; `datadir_override` (from
// --datadir) wins over @@datadir. Relative directories are resolved against
// the datadir, as the server does.
Result<ServerLayout> LayoutFromVariables(const std::map<std::string, std::string>& vars,
                                         const std::string& datadir_override);

// One file of innodb_data_file_path.
struct DataFileSpec {
  std::string name;
  uint64_t size = 0;  // bytes, as the server reads it: whole megabytes (K/M/G suffix, else bytes)
};
// Parses "ibdata1:12M;ibdata2:50M:autoextend".
Result<std::vector<DataFileSpec>> ParseDataFiles(const std::string& spec);
// The page number of each file's first page in the system tablespace: the
// sizes of the files before it (only the last may autoextend).
std::vector<uint32_t> FirstPages(const std::vector<DataFileSpec>& files, uint32_t page_size);
// When `name` is a later file of the system tablespace (ibdata2, ...), its
// first page (from FirstPages): the page its .delta's page 0 stands for, as
// such a delta numbers pages within the file. Nothing for ibdata1 or any
// other file.
std::optional<uint32_t> LaterSystemFileFirstPage(const std::vector<std::string>& system_files,
                                                 const std::vector<uint32_t>& first_pages,
                                                 const std::string& name);
// ParseDataFiles(spec), the names only.
Result<std::vector<std::string>> ParseDataFilePath(const std::string& spec);

// What tells one file from another across renames: its inode, and the
// inode's birth time, since a filesystem may give a dropped table's inode
// number to the next file created (XFS at once; ext4 once the deletion is a
// minute old), which would otherwise pass for the dropped table renamed.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t birth_ns = 0;  // 0 where the filesystem does not record it
  auto operator<=>(const FileIdentity&) const = default;
};

// One file the backup copies. `rel` is its path inside the backup.
struct SourceFile {
  std::string path;  // absolute path on the server
  std::string rel;   // path inside the backup, '/'-separated
  uint64_t size = 0;
  FileIdentity id;
};

struct InnodbFiles {
  std::vector<SourceFile> system;       // ibdata*, in order (page numbers continue across them)
  std::vector<SourceFile> undo;         // undo001...
  std::vector<SourceFile> tablespaces;  // db/t.ibd (file-per-table)
};

// Lists the InnoDB data files: system tablespace, undo tablespaces and every
// db/*.ibd under the datadir. A table created with DATA DIRECTORY (db/t.isl)
// is listed at the path its .isl names, as db/t.ibd inside the backup.
// `filter` leaves out the tables a partial backup does not take.
Result<InnodbFiles> ListInnodbFiles(const ServerLayout& layout, const TableFilter& filter = {});

// The database directories of the datadir a backup takes whole (all of them
// without a filter), empty ones included: a directory is a database to the
// server. @@ignore_db_dirs are not databases.
Result<std::vector<std::string>> ListDatabaseDirs(const ServerLayout& layout, const TableFilter& filter = {});

// Lists the non-InnoDB files a backup must copy: table definitions and
// non-transactional engines' files in each database directory, and the Aria
// control file and logs.
Result<std::vector<SourceFile>> ListOtherFiles(const ServerLayout& layout, const TableFilter& filter = {});

// True for the database directory names a backup skips.
bool IsSkippedDatabaseDir(const std::string& name);

// "undo001".."undo127": an undo tablespace's file name.
bool IsUndoTablespaceName(const std::string& name);

// The files (`rel`: "mysql/table_stats.MAI") the server still writes under
// BACKUP STAGE BLOCK_DDL, since it still commits: the statistics tables, the
// general and slow log tables and the Aria log. A backup copies them under
// BLOCK_COMMIT, as mariabackup does.
bool ChangesUnderBlockDdl(const std::string& rel);
// "db/t": a tablespace name of a DDL marker (.ren content), with no way out of
// the backup directory (no "..", not absolute, exactly one '/', no NUL).
bool IsSafeSpaceName(const std::string& name);

}  // namespace xbak::backupdir
