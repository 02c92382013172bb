#include "xbak/backupdir/table_filter.h"

#include <regex.h>

#include <sstream>

#include "xbak/util/file.h"

namespace xbak::backupdir {

// POSIX extended regexes through libc's regcomp/regexec, as mariabackup
// matches them: a user's --tables pattern means the same to both tools
// (std::regex's "extended" grammar differs in corners such as collating
// elements and leftmost-longest matching).
class TableFilter::Regex {
 public:
  static Result<std::shared_ptr<const Regex>> Compile(const std::string& pattern, const std::string& where) {
    auto r = std::shared_ptr<Regex>(new Regex(pattern));
    int rc = regcomp(&r->re_, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char msg[200];
      regerror(rc, &r->re_, msg, sizeof msg);
      return Error(ErrorCode::kInvalidArgument,
                   where + ": '" + pattern + "' is not a valid regular expression: " + msg);
    }
    r->compiled_ = true;
    return std::shared_ptr<const Regex>(std::move(r));
  }
  ~Regex() {
    if (compiled_) regfree(&re_);
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // glibc's regexec locks the compiled pattern itself: safe from any thread.
  bool Search(const std::string& s) const { return regexec(&re_, s.c_str(), 0, nullptr, 0) == 0; }
  const std::string& pattern() const { return pattern_; }

 private:
  explicit Regex(std::string p) : pattern_(std::move(p)) {}
  std::string pattern_;
  regex_t re_{};
  bool compiled_ = false;
};

namespace {

// The server's identifiers are at most 64 characters, each up to 3 bytes in
// its filename encoding (mariabackup's NAME_LEN check).
constexpr size_t kMaxName = 192;

// One part of "db.t": not empty, not too long (the whole entry was checked
// for path characters by AddEntry).
Status ValidateName(const std::string& name, const std::string& where) {
  if (name.empty()) return Error(ErrorCode::kInvalidArgument, where + ": an empty database or table name");
  if (name.size() > kMaxName)
    return Error(ErrorCode::kInvalidArgument, where + ": name '" + name + "' is too long");
  return Status::Ok();
}

std::vector<std::string> Split(const std::string& s, const char* delims) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find_first_of(delims, pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// The name of a partitioned table's partition without its "#P#..." suffix.
std::string WithoutPartition(const std::string& name) {
  size_t p = name.find("#P#");
  return p == std::string::npos ? name : name.substr(0, p);
}

}  // namespace

Status TableFilter::AddEntry(const std::string& name, bool include, const std::string& where) {
  if (name.find_first_of("/\\~\n") != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 where + ": name '" + name + "' is not valid (it has / \\ or ~)");
  }
  const size_t dot = name.find('.');
  if (dot == std::string::npos) {
    XBAK_RETURN_IF_ERROR(ValidateName(name, where));
    (include ? include_db_ : exclude_db_).insert(name);
    return Status::Ok();
  }
  XBAK_RETURN_IF_ERROR(ValidateName(name.substr(0, dot), where));
  XBAK_RETURN_IF_ERROR(ValidateName(name.substr(dot + 1), where));
  if (include) include_some_db_.insert(name.substr(0, dot));
  (include ? include_table_ : exclude_table_).insert(name);
  return Status::Ok();
}

Status TableFilter::AddRegex(const std::string& re, bool include, const std::string& where) {
  if (re.find('\n') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, where + ": a regular expression may not span lines");
  }
  XBAK_ASSIGN_OR_RETURN(auto r, Regex::Compile(re, where));
  (include ? include_re_ : exclude_re_).push_back(std::move(r));
  return Status::Ok();
}

Result<TableFilter> TableFilter::Make(const TableFilterOptions& o) {
  TableFilter f;
  for (const auto& n : Split(o.databases, " \t")) XBAK_RETURN_IF_ERROR(f.AddEntry(n, true, "--databases"));
  for (const auto& n : Split(o.databases_exclude, " \t")) {
    XBAK_RETURN_IF_ERROR(f.AddEntry(n, false, "--databases-exclude"));
  }
  for (const auto& r : Split(o.tables, ",")) XBAK_RETURN_IF_ERROR(f.AddRegex(r, true, "--tables"));
  for (const auto& r : Split(o.tables_exclude, ","))
    XBAK_RETURN_IF_ERROR(f.AddRegex(r, false, "--tables-exclude"));
  auto read_lines = [&](const std::string& path, const char* option, bool qualified) -> Status {
    auto text = util::ReadSmallFile(path, size_t{64} << 20);
    if (!text.ok()) return text.status().With(std::string(option) + " " + path);
    std::istringstream in(*text);
    std::string line;
    for (int no = 1; std::getline(in, line); no++) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      const std::string where = std::string(option) + " " + path + " line " + std::to_string(no);
      if (qualified && line.find('.') == std::string::npos) {
        return Error(ErrorCode::kInvalidArgument, where + ": '" + line + "' is not a db.table name");
      }
      XBAK_RETURN_IF_ERROR(f.AddEntry(line, true, where));
    }
    return Status::Ok();
  };
  if (!o.databases_file.empty())
    XBAK_RETURN_IF_ERROR(read_lines(o.databases_file, "--databases-file", false));
  if (!o.tables_file.empty()) XBAK_RETURN_IF_ERROR(read_lines(o.tables_file, "--tables-file", true));
  return f;
}

bool TableFilter::TakesAll() const {
  return include_db_.empty() && include_some_db_.empty() && exclude_db_.empty() && include_table_.empty() &&
         exclude_table_.empty() && include_re_.empty() && exclude_re_.empty();
}

bool TableFilter::TakesDatabase(const std::string& db) const {
  if (exclude_db_.count(db)) return false;
  if (!include_db_.empty() || !include_some_db_.empty())
    return include_db_.count(db) || include_some_db_.count(db);
  return true;
}

TableFilter::Match TableFilter::MatchName(const std::string& name) const {
  if (exclude_table_.count(name)) return Match::kExclude;
  for (const auto& r : exclude_re_) {
    if (r->Search(name)) return Match::kExclude;
  }
  if (include_table_.count(name)) return Match::kInclude;
  for (const auto& r : include_re_) {
    if (r->Search(name)) return Match::kInclude;
  }
  return Match::kNone;
}

bool TableFilter::TakesTable(const std::string& db, const std::string& stem) const {
  if (TakesAll()) return true;
  if (!TakesDatabase(db)) return false;
  const std::string name = db + "." + stem;
  Match m = MatchName(name);
  if (m == Match::kNone && WithoutPartition(name) != name) m = MatchName(WithoutPartition(name));
  if (m != Match::kNone) return m == Match::kInclude;
  if (include_db_.count(db)) return true;
  return include_table_.empty() && include_re_.empty();
}

bool TableFilter::TakesDatabaseWhole(const std::string& db) const {
  return TakesDatabase(db) && (include_db_.count(db) || (include_table_.empty() && include_re_.empty()));
}

bool TableFilter::TakesFile(const std::string& rel, const std::string& trn_table) const {
  const size_t slash = rel.find('/');
  if (slash == std::string::npos) return true;
  const std::string db = rel.substr(0, slash);
  const std::string name = rel.substr(slash + 1);
  if (name == "db.opt") return TakesDatabaseWhole(db);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".TRN") == 0) {
    return trn_table.empty() ? TakesDatabase(db) : TakesTable(db, trn_table);
  }
  return TakesTable(db, name.substr(0, name.find('.')));
}

bool TableFilter::TakesSpace(const std::string& space_name) const {
  const size_t slash = space_name.find('/');
  if (slash == std::string::npos) return true;  // not a file-per-table tablespace
  return TakesTable(space_name.substr(0, slash), space_name.substr(slash + 1));
}

std::string TableFilter::Serialize() const {
  std::string out = "# the table filter of this partial backup (xbak); read by xbak --prepare\n";
  auto put = [&](const char* key, const std::string& v) { out += std::string(key) + " " + v + "\n"; };
  for (const auto& n : include_db_) put("include-database", n);
  for (const auto& n : exclude_db_) put("exclude-database", n);
  for (const auto& n : include_table_) put("include-table", n);
  for (const auto& n : exclude_table_) put("exclude-table", n);
  for (const auto& r : include_re_) put("include-regex", r->pattern());
  for (const auto& r : exclude_re_) put("exclude-regex", r->pattern());
  return out;
}

Result<TableFilter> ReadTableFilter(const std::string& dir) {
  const std::string path = util::JoinPath(dir, kTableFilterFile);
  if (!util::PathExists(path)) return TableFilter();
  XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(path, size_t{64} << 20));
  return TableFilter::Parse(text, path);
}

Result<TableFilter> TableFilter::Parse(const std::string& text, const std::string& origin) {
  TableFilter f;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); no++) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = origin + " line " + std::to_string(no);
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    Status s;
    if (key == "include-database" || key == "exclude-database") {
      if (value.find('.') != std::string::npos)
        s = Error(ErrorCode::kCorrupt, where + ": '" + value + "' is not a database name");
      else
        s = f.AddEntry(value, key[0] == 'i', where);
    } else if (key == "include-table" || key == "exclude-table") {
      if (value.find('.') == std::string::npos)
        s = Error(ErrorCode::kCorrupt, where + ": '" + value + "' is not a db.table name");
      else
        s = f.AddEntry(value, key[0] == 'i', where);
    } else if (key == "include-regex" || key == "exclude-regex") {
      s = f.AddRegex(value, key[0] == 'i', where);
    } else {
      s = Error(ErrorCode::kCorrupt, where + ": unknown entry '" + key + "'");
    }
    if (!s.ok()) return s;
  }
  return f;
}

}  // namespace xbak::backupdir
