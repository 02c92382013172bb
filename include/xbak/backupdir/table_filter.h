// Which tables a partial backup takes: mariabackup's --databases,
// --databases-file, --databases-exclude, --tables, --tables-file and
// --tables-exclude. Names are as the server stores them on disk ("db.t", the
// filename encoding of MariaDB for other characters); a partition is its
// table's file stem ("db.t#P#p0") and is matched with its suffix first, then
// as its table. The system tablespace, undo tablespaces, the redo log and the
// Aria logs are always taken; the rules below decide everything in the
// database directories.
//
// A table db.t is taken unless:
//  1. db is excluded whole (--databases-exclude=db), or an include list of
//     databases exists (--databases, --databases-file, --tables-file) and
//     db is not on it;
//  2. db.t matches --tables-exclude or is named by --databases-exclude=db.t;
//  3. an include list exists for tables (--tables, --tables-file, or
//     --databases naming some tables of db) that it does not match, and db is
//     not included whole.
// Regexes are POSIX extended, matched anywhere in "db.t" as mariabackup does
// (anchor them with ^ and $). One difference, deliberate: mariabackup treats
// --databases-exclude=db.t alone as excluding all of db; here it excludes
// db.t only.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::backupdir {

struct TableFilterOptions {
  std::string databases;          // "db db2.t ..." (spaces or tabs)
  std::string databases_file;     // a file of such names, one per line
  std::string databases_exclude;  // "db db2.t ..."
  std::string tables;             // "regex,regex"
  std::string tables_file;        // a file of "db.t", one per line
  std::string tables_exclude;     // "regex,regex"
};

// The file in a partial backup that records its filter, so that prepare
// does not bring back, from the redo log, tables the backup left out.
inline constexpr const char* kTableFilterFile = "xbak_table_filter";

class TableFilter;
// The filter a backup directory records (kTableFilterFile); a backup without
// that file took every table.
Result<TableFilter> ReadTableFilter(const std::string& dir);

class TableFilter {
 public:
  TableFilter() = default;  // takes everything
  // Errors name the option or file (and line) at fault.
  static Result<TableFilter> Make(const TableFilterOptions& o);
  // Reads what Serialize wrote; `origin` names it in errors.
  static Result<TableFilter> Parse(const std::string& text, const std::string& origin);
  std::string Serialize() const;

  bool TakesAll() const;
  // False when no table of `db` can be taken (rule 1).
  bool TakesDatabase(const std::string& db) const;
  // `stem` is the file name up to its first '.' ("t", "t#P#p0").
  bool TakesTable(const std::string& db, const std::string& stem) const;
  // True if `db` is taken with all its tables (bar exclusions): included
  // whole, or taken while no include list names tables.
  bool TakesDatabaseWhole(const std::string& db) const;
  // A file of a database directory, "db/name.ext": its table's verdict;
  // db.opt when the database is taken whole (ListOtherFiles also takes it
  // when any table of the database is taken); a trigger's .TRN with the
  // table named in it (`trn_table`: its file name, read by the caller;
  // empty if unknown: the database's verdict).
  bool TakesFile(const std::string& rel, const std::string& trn_table = "") const;
  // "db/t" (a tablespace name as the redo log and DDL markers have it).
  bool TakesSpace(const std::string& space_name) const;

 private:
  class Regex;
  enum class Match { kNone, kInclude, kExclude };
  Match MatchName(const std::string& name) const;
  Status AddEntry(const std::string& name, bool include, const std::string& where);
  Status AddRegex(const std::string& re, bool include, const std::string& where);

  std::set<std::string> include_db_;       // databases included whole
  std::set<std::string> include_some_db_;  // databases some of whose tables are named
  std::set<std::string> exclude_db_;       // databases excluded whole
  std::set<std::string> include_table_;    // "db.t"
  std::set<std::string> exclude_table_;    // "db.t"
  std::vector<std::shared_ptr<const Regex>> include_re_, exclude_re_;
};

}  // namespace xbak::backupdir
