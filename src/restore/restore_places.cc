#include "xbak/restore/restore_places.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/table_filter.h"
#include "xbak/innodb/isl.h"
#include "xbak/prepare/export.h"
#include "xbak/restore/restore.h"
#include "xbak/util/copy_file.h"
#include "xbak/util/file.h"

namespace xbak::restore {
namespace {

Status Walk(const std::string& root, const std::string& rel,
            std::vector<std::pair<std::string, uint64_t>>* out) {
  std::string dir = rel.empty() ? root : util::JoinPath(root, rel);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) return ErrnoError("cannot read backup directory", dir, errno);
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st {};
    if (::lstat(util::JoinPath(root, r).c_str(), &st) != 0)
      return ErrnoError("stat", util::JoinPath(root, r), errno);
    if (S_ISLNK(st.st_mode)) {
      return Error(ErrorCode::kInvalidArgument,
                   "backup contains a symbolic link " + util::JoinPath(root, r) + "; refusing to follow it");
    }
    if (S_ISDIR(st.st_mode)) {
      if (!rel.empty()) {
        return Error(ErrorCode::kInvalidArgument,
                     "unexpected nested directory " + util::JoinPath(root, r) + " in backup");
      }
      XBAK_RETURN_IF_ERROR(Walk(root, r, out));
      out->push_back({r + "/", 0});  // the directory itself, even if empty
    } else if (S_ISREG(st.st_mode)) {
      out->push_back({r, static_cast<uint64_t>(st.st_size)});
    }
  }
  return Status::Ok();
}

}  // namespace

RestoreDirs RestoreDirs::Resolved() const {
  RestoreDirs r = *this;
  // A relative directory is the server's, relative to its datadir (the server
  // runs in it): innodb_undo_directory=./ is the datadir itself.
  for (std::string* d : {&r.log_dir, &r.data_home_dir, &r.undo_dir, &r.aria_log_dir}) {
    if (d->empty() || *d == "." || *d == "./") {
      *d = datadir;
    } else if ((*d)[0] != '/') {
      *d = util::JoinPath(datadir, d->starts_with("./") ? d->substr(2) : *d);
    }
  }
  r.system_paths.clear();
  if (auto files = backupdir::ParseDataFiles(data_file_path); !data_file_path.empty() && files.ok()) {
    for (const auto& f : *files) {
      const size_t slash = f.name.rfind('/');
      const std::string base = slash == std::string::npos ? f.name : f.name.substr(slash + 1);
      r.system_paths[base] = f.name.starts_with("/") ? f.name : util::JoinPath(r.data_home_dir, f.name);
    }
  }
  return r;
}

Status ListBackupTree(const std::string& root, std::vector<std::pair<std::string, uint64_t>>* out) {
  return Walk(root, "", out);
}

bool IsBackupMetadataFile(const std::string& name) {
  return name == backupdir::kBackupCnfFile || name == backupdir::kTableFilterFile ||
         name == prepare::kExportedFile || backupdir::IsToolFile(name) || name.ends_with(".qp") ||
         name.ends_with(".pmap") || name.ends_with(".tmp") || name.ends_with(".delta") ||
         name.ends_with(".meta") || name.ends_with(".xbpartial");
}

Result<std::map<std::string, std::string>> RemoteTablespaces(
    const std::string& dir, const std::vector<std::pair<std::string, uint64_t>>& entries) {
  std::map<std::string, std::string> out;
  for (const auto& [rel, size] : entries) {
    if (rel.find('/') == std::string::npos || !rel.ends_with(innodb::kIslSuffix)) continue;
    const std::string path = util::JoinPath(dir, rel);
    XBAK_ASSIGN_OR_RETURN(std::string content, util::ReadSmallFile(path, 64 * 1024));
    XBAK_ASSIGN_OR_RETURN(std::string ibd, innodb::ParseIsl(content, path));
    out[rel.substr(0, rel.size() - 4) + ".ibd"] = ibd;
  }
  return out;
}

std::string RestoreDestination(const std::string& rel, const RestoreDirs& dirs,
                               const std::map<std::string, std::string>& remote) {
  const size_t slash = rel.rfind('/');
  const std::string name = rel.substr(slash == std::string::npos ? 0 : slash + 1);
  const bool top = rel.find('/') == std::string::npos;
  if (top && IsBackupMetadataFile(name)) return "";
  if (!top && (name.ends_with(".delta") || name.ends_with(".meta") || name.ends_with(".xbpartial")))
    return "";
  if (!top && name.ends_with(innodb::kIslSuffix) && dirs.remote_to_datadir) return "";  // the .ibd comes home
  if (top && name == "ib_logfile0") return util::JoinPath(dirs.log_dir, rel);
  if (auto sys = dirs.system_paths.find(name); top && sys != dirs.system_paths.end()) return sys->second;
  if (top && name.rfind("ibdata", 0) == 0) return util::JoinPath(dirs.data_home_dir, rel);
  if (top && backupdir::IsUndoTablespaceName(name)) return util::JoinPath(dirs.undo_dir, rel);
  if (top && (name == "aria_log_control" || name.starts_with("aria_log.")))
    return util::JoinPath(dirs.aria_log_dir, rel);
  if (!dirs.remote_to_datadir) {
    auto r = remote.find(rel);
    if (r != remote.end()) return r->second;  // back to its DATA DIRECTORY
  }
  return util::JoinPath(dirs.datadir, rel);
}

Status PlaceRestoredFiles(const RestoreDirs& dirs, const std::string& staged_log, bool put_log) {
  const std::string& d = dirs.datadir;
  std::vector<std::pair<std::string, uint64_t>> entries;
  XBAK_RETURN_IF_ERROR(ListBackupTree(d, &entries));
  std::map<std::string, std::string> remote;
  if (!dirs.remote_to_datadir) {
    XBAK_ASSIGN_OR_RETURN(remote, RemoteTablespaces(d, entries));
  }
  std::set<std::string> touched{d};
  for (const auto& [rel, size] : entries) {
    if (rel.ends_with("/") || rel == kRestoreMarkerFile || rel == "ib_logfile0" || rel == staged_log)
      continue;
    const std::string src = util::JoinPath(d, rel);
    const std::string dest = RestoreDestination(rel, dirs, remote);
    if (dest.empty() || rel.ends_with(".xbtmp")) {
      if (::unlink(src.c_str()) != 0) return ErrnoError("remove", src, errno);
      continue;
    }
    if (dest == src) continue;
    if (util::PathExists(dest)) {
      return Error(
          ErrorCode::kAlreadyExists,
          dest + " exists already; existing files are never overwritten (" + src + " stays in the datadir)");
    }
    const std::string dir = dest.substr(0, dest.rfind('/'));
    XBAK_RETURN_IF_ERROR(util::MakeDirs(dir));
    XBAK_RETURN_IF_ERROR(util::PlaceFile(src, dest, {true, true}, nullptr));
    touched.insert(dir);
    touched.insert(src.substr(0, src.rfind('/')));
  }
  for (const auto& t : touched) XBAK_RETURN_IF_ERROR(util::SyncDir(t));
  const std::string staged = util::JoinPath(dirs.log_dir, staged_log),
                    log = util::JoinPath(dirs.log_dir, "ib_logfile0");
  if (put_log && util::PathExists(staged)) {
    if (::rename(staged.c_str(), log.c_str()) != 0) return ErrnoError("rename " + staged + " to", log, errno);
    XBAK_RETURN_IF_ERROR(util::SyncDir(dirs.log_dir));
  }
  return Status::Ok();
}

Status DropLoneMarkerTemp(const std::string& datadir, const std::string& marker_name) {
  auto names = util::ListDir(datadir);
  const std::string tmp = marker_name + ".tmp";
  if (!names.ok() || names->size() != 1 || names->front() != tmp) return Status::Ok();
  if (::unlink(util::JoinPath(datadir, tmp).c_str()) != 0)
    return ErrnoError("remove", util::JoinPath(datadir, tmp), errno);
  return Status::Ok();
}

}  // namespace xbak::restore
