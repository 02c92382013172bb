#include "xbak/backupdir/layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "xbak/innodb/isl.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/size.h"

namespace xbak::backupdir {
namespace {

std::string StripSlash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string Resolve(const std::string& datadir, const std::string& p) {
  if (p.empty() || p == "." || p == "./") return datadir;
  if (p[0] == '/') return StripSlash(p);
  std::string rel = p;
  if (rel.rfind("./", 0) == 0) rel = rel.substr(2);
  return StripSlash(util::JoinPath(datadir, rel));
}

Result<SourceFile> Stat(const std::string& path, const std::string& rel) {
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BASIC_STATS | STATX_BTIME, &st) != 0)
    return ErrnoError("stat", path, errno);
  FileIdentity id{makedev(st.stx_dev_major, st.stx_dev_minor), st.stx_ino, 0};
  if (st.stx_mask & STATX_BTIME)
    id.birth_ns = st.stx_btime.tv_sec * int64_t{1000000000} + st.stx_btime.tv_nsec;
  return SourceFile{path, rel, st.stx_size, id};
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Table definitions and non-transactional engines' files: the same list of
// extensions mariabackup copies, so restores look the same.
const char* const kOtherExtensions[] = {".isl", ".frm", ".MYD", ".MYI", ".MAD", ".MAI", ".MRG", ".TRG",
                                        ".TRN", ".ARM", ".ARZ", ".CSM", ".CSV", ".opt", ".par"};

// The table of a trigger's .TRN file as a file name ("trigger_table=t-1" ->
// "t@002d1": the server's filename encoding, for ASCII names); empty if
// unreadable or not ASCII (the caller then decides by the database).
std::string TriggerTable(const std::string& path) {
  auto text = util::ReadSmallFile(path);
  if (!text.ok()) return "";
  const std::string key = "\ntrigger_table=";
  size_t p = text->find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  const std::string name = text->substr(p, text->find('\n', p) - p);
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '_') {
      out += static_cast<char>(c);
    } else if (c < 0x80) {
      char b[8];
      std::snprintf(b, sizeof b, "@%04x", c);
      out += b;
    } else {
      return "";
    }
  }
  return out;
}

}  // namespace

bool IsSkippedDatabaseDir(const std::string& name) {
  return name.empty() || name[0] == '.' || name == "lost+found" || name[0] == '#';
}

Result<std::vector<std::string>> ParseDataFilePath(const std::string& spec) {
  XBAK_ASSIGN_OR_RETURN(auto files, ParseDataFiles(spec));
  std::vector<std::string> names;
  for (auto& f : files) names.push_back(std::move(f.name));
  return names;
}

std::vector<uint32_t> FirstPages(const std::vector<DataFileSpec>& files, uint32_t page_size) {
  std::vector<uint32_t> out;
  uint64_t first = 0;
  for (const auto& f : files) {
    out.push_back(static_cast<uint32_t>(first));
    first += f.size / page_size;
  }
  return out;
}

std::optional<uint32_t> LaterSystemFileFirstPage(const std::vector<std::string>& system_files,
                                                 const std::vector<uint32_t>& first_pages,
                                                 const std::string& name) {
  for (size_t i = 1; i < system_files.size() && i < first_pages.size(); i++) {
    if (name == system_files[i]) return first_pages[i];
  }
  return std::nullopt;
}

Result<std::vector<DataFileSpec>> ParseDataFiles(const std::string& spec) {
  std::vector<DataFileSpec> files;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t semi = spec.find(';', pos);
    std::string item = spec.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
    pos = semi == std::string::npos ? spec.size() + 1 : semi + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == 0 || colon == std::string::npos) {
      return Error(ErrorCode::kInvalidArgument,
                   "innodb_data_file_path '" + spec + "' has no file size in '" + item + "'");
    }
    std::string name = item.substr(0, colon);
    if (item.find(":raw") != std::string::npos || item.find("newraw") != std::string::npos) {
      return Error(ErrorCode::kUnsupported, "raw device system tablespace '" + name + "' is not supported");
    }
    // As the server reads it (SysTablespace::parse_units): a number with K,
    // M or G, or bytes without; kept in whole megabytes. Any size that fits
    // in 64 bits, not just the 1 TiB of our own size options.
    const std::string size = item.substr(colon + 1, item.find(':', colon + 1) - colon - 1);
    const std::optional<uint64_t> bytes = util::ParseSize(size, UINT64_MAX);
    if (!bytes) {
      return Error(ErrorCode::kInvalidArgument,
                   "innodb_data_file_path '" + spec + "': '" + size + "' is not a size");
    }
    files.push_back(DataFileSpec{name, *bytes >> 20 << 20});
  }
  if (files.empty()) return Error(ErrorCode::kInvalidArgument, "innodb_data_file_path is empty");
  return files;
}

Result<ServerLayout> LayoutFromVariables(const std::map<std::string, std::string>& vars,
                                         const std::string& datadir_override) {
  auto get = [&](const char* k) -> std::string {
    auto it = vars.find(k);
    return it == vars.end() ? std::string() : it->second;
  };
  ServerLayout l;
  l.datadir = StripSlash(datadir_override.empty() ? get("datadir") : datadir_override);
  if (l.datadir.empty()) return Error(ErrorCode::kInvalidArgument, "cannot tell the datadir: use --datadir");
  l.log_dir = Resolve(l.datadir, get("innodb_log_group_home_dir"));
  l.data_home_dir = Resolve(l.datadir, get("innodb_data_home_dir"));
  l.undo_dir = Resolve(l.datadir, get("innodb_undo_directory"));
  l.aria_log_dir = Resolve(l.datadir, get("aria_log_dir_path"));
  l.data_file_path = get("innodb_data_file_path");
  if (l.data_file_path.empty()) l.data_file_path = "ibdata1:12M:autoextend";
  XBAK_ASSIGN_OR_RETURN(l.system_files, ParseDataFilePath(l.data_file_path));
  std::string ps = get("innodb_page_size");
  l.page_size = ps.empty() ? 16384 : static_cast<uint32_t>(std::stoul(ps));
  if (l.page_size < 4096 || l.page_size > 65536 || (l.page_size & (l.page_size - 1)) != 0) {
    return Error(ErrorCode::kInvalidArgument, "unexpected innodb_page_size " + ps);
  }
  std::string lfs = get("innodb_log_file_size");
  l.log_file_size = lfs.empty() ? 0 : std::stoull(lfs);
  std::string ut = get("innodb_undo_tablespaces");
  l.undo_tablespaces = ut.empty() ? 0 : static_cast<uint32_t>(std::stoul(ut));
  l.checksum_algorithm = get("innodb_checksum_algorithm");
  if (l.checksum_algorithm.empty()) l.checksum_algorithm = "full_crc32";
  l.compression_level = get("innodb_compression_level");
  if (l.compression_level.empty()) l.compression_level = "6";
  l.version = get("version");
  const std::string ignored = get("ignore_db_dirs");
  for (size_t b = 0; b < ignored.size();) {
    size_t e = std::min(ignored.find(',', b), ignored.size());
    if (e > b) l.ignore_db_dirs.insert(ignored.substr(b, e - b));
    b = e + 1;
  }
  return l;
}

Result<InnodbFiles> ListInnodbFiles(const ServerLayout& layout, const TableFilter& filter) {
  InnodbFiles out;
  for (const auto& name : layout.system_files) {
    std::string path = name[0] == '/' ? name : util::JoinPath(layout.data_home_dir, name);
    std::string rel = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
    XBAK_ASSIGN_OR_RETURN(SourceFile f, Stat(path, rel));
    out.system.push_back(f);
  }
  XBAK_ASSIGN_OR_RETURN(auto undo_names, util::ListDir(layout.undo_dir));
  for (const auto& n : undo_names) {
    if (IsUndoTablespaceName(n)) {
      XBAK_ASSIGN_OR_RETURN(SourceFile f, Stat(util::JoinPath(layout.undo_dir, n), n));
      out.undo.push_back(f);
    }
  }
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(layout.datadir));
  for (const auto& db : top) {
    std::string dbdir = util::JoinPath(layout.datadir, db);
    if (IsSkippedDatabaseDir(db) || layout.ignore_db_dirs.count(db) || !filter.TakesDatabase(db) ||
        !IsDir(dbdir))
      continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(dbdir));
    std::set<std::string> remote;  // tables whose .ibd an .isl points at
    for (const auto& n : files) {
      if (!n.ends_with(innodb::kIslSuffix)) continue;
      const std::string table = n.substr(0, n.size() - 4);
      if (!filter.TakesTable(db, table)) continue;
      auto content = util::ReadSmallFile(util::JoinPath(dbdir, n));
      if (!content.ok()) {
        if (content.status().code() == ErrorCode::kNotFound) continue;  // dropped meanwhile
        return content.status();
      }
      XBAK_ASSIGN_OR_RETURN(std::string ibd, innodb::ParseIsl(*content, util::JoinPath(dbdir, n)));
      // Stored as db/t.ibd in the backup, as mariabackup does; the .isl is
      // copied with the table definitions and says where it came from.
      auto f = Stat(ibd, db + "/" + table + ".ibd");
      if (!f.ok()) {
        if (f.status().code() == ErrorCode::kNotFound) continue;  // dropped meanwhile: redo says so
        return f.status().With("table " + db + "/" + table + " (DATA DIRECTORY, " + util::JoinPath(dbdir, n) +
                               ")");
      }
      out.tablespaces.push_back(f.value());
      remote.insert(table + ".ibd");
    }
    for (const auto& n : files) {
      if (!n.ends_with(".ibd") || !filter.TakesTable(db, n.substr(0, n.find('.')))) continue;
      if (remote.count(n) != 0) {
        // The server refuses to open a table found in two places; the copy
        // the .isl names is the one it used.
        util::LogWarning(
            util::JoinPath(dbdir, n) + " is ignored: " + db + "/" + n.substr(0, n.size() - 4) +
            ".isl points elsewhere (a stale copy; the server does not open a table found in two places)");
        continue;
      }
      auto f = Stat(util::JoinPath(dbdir, n), db + "/" + n);
      if (!f.ok()) {
        if (f.status().code() == ErrorCode::kNotFound) continue;  // dropped meanwhile: redo says so
        return f.status();
      }
      out.tablespaces.push_back(f.value());
    }
  }
  return out;
}

Result<std::vector<std::string>> ListDatabaseDirs(const ServerLayout& layout, const TableFilter& filter) {
  std::vector<std::string> out;
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(layout.datadir));
  for (const auto& db : top) {
    // A table filter takes a database's directory with the tables it takes;
    // only a database taken whole is taken even when it has none.
    if (IsSkippedDatabaseDir(db) || layout.ignore_db_dirs.count(db) || !filter.TakesDatabaseWhole(db) ||
        !IsDir(util::JoinPath(layout.datadir, db)))
      continue;
    out.push_back(db);
  }
  return out;
}

Result<std::vector<SourceFile>> ListOtherFiles(const ServerLayout& layout, const TableFilter& filter) {
  std::vector<SourceFile> out;
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(layout.datadir));
  for (const auto& db : top) {
    std::string dbdir = util::JoinPath(layout.datadir, db);
    if (IsSkippedDatabaseDir(db) || layout.ignore_db_dirs.count(db) || !filter.TakesDatabase(db) ||
        !IsDir(dbdir))
      continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(dbdir));
    bool any_table = false;
    for (const auto& n : files) {
      if (n != "db.opt" && (n.ends_with(".frm") || n.ends_with(".ibd")) &&
          filter.TakesTable(db, n.substr(0, n.find('.')))) {
        any_table = true;
        break;
      }
    }
    for (const auto& n : files) {
      bool wanted = false;
      for (const char* ext : kOtherExtensions) wanted = wanted || n.ends_with(ext);
      if (!wanted) continue;
      if (!filter.TakesAll()) {
        // A trigger's .TRN file is named after the trigger; it goes with the
        // table it names. db.opt goes with a database any table of which is
        // taken (its default character set and collation).
        std::string trn_table;
        if (n.ends_with(".TRN")) trn_table = TriggerTable(util::JoinPath(dbdir, n));
        if (!filter.TakesFile(db + "/" + n, trn_table) && !(n == "db.opt" && any_table)) continue;
      }
      auto f = Stat(util::JoinPath(dbdir, n), db + "/" + n);
      if (!f.ok()) {
        if (f.status().code() == ErrorCode::kNotFound) continue;
        return f.status();
      }
      out.push_back(f.value());
    }
  }
  XBAK_ASSIGN_OR_RETURN(auto aria, util::ListDir(layout.aria_log_dir));
  for (const auto& n : aria) {
    if (n == "aria_log_control" || (n.rfind("aria_log.", 0) == 0 && n.size() == 17)) {
      XBAK_ASSIGN_OR_RETURN(SourceFile f, Stat(util::JoinPath(layout.aria_log_dir, n), n));
      out.push_back(f);
    }
  }
  return out;
}

bool IsUndoTablespaceName(const std::string& name) {
  return name.size() == 7 && name.rfind("undo", 0) == 0 &&
         std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool IsSafeSpaceName(const std::string& n) {
  return !n.empty() && n[0] != '/' && n.back() != '/' && n.find("..") == std::string::npos &&
         n.find('\0') == std::string::npos && std::count(n.begin(), n.end(), '/') == 1;
}

bool ChangesUnderBlockDdl(const std::string& rel) {
  static const char* const kLate[] = {"mysql/table_stats.", "mysql/column_stats.", "mysql/index_stats.",
                                      "mysql/general_log.", "mysql/slow_log.",     "aria_log"};
  for (const char* p : kLate) {
    if (rel.rfind(p, 0) == 0) return true;
  }
  return false;
}

}  // namespace xbak::backupdir
