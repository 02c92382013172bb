#include "xbak/backup/ddl_watch.h"

#include <sys/stat.h>

#include <cerrno>

#include "xbak/backupdir/layout.h"

namespace xbak::backup {
namespace {

// Files that hold table definitions rather than rows: the server rewrites
// them on DDL only.
bool IsDefinition(const std::string& rel) {
  static const char* const kExt[] = {".frm", ".par", ".TRG", ".TRN", ".MRG", "/db.opt"};
  for (const char* e : kExt) {
    if (rel.ends_with(e)) return true;
  }
  return false;
}

std::string OpText(const innodb::FileOp& op) {
  switch (op.type) {
    case innodb::FileOp::Type::kCreate:
      return op.name + " was created";
    case innodb::FileOp::Type::kDelete:
      return op.name + " was dropped";
    case innodb::FileOp::Type::kRename:
      return op.name + " was renamed to " + op.new_name;
    case innodb::FileOp::Type::kModify:
      break;
  }
  return op.name + " was changed";
}

}  // namespace

void DdlWatch::OnFileOp(const innodb::FileOp& op, uint64_t lsn) {
  if (op.type == innodb::FileOp::Type::kModify) return;
  // Undo and system tablespaces are truncated or extended in place by the
  // server itself; only a table's own file is DDL.
  const std::string rel = op.name.rfind("./", 0) == 0 ? op.name.substr(2) : op.name;
  if (rel.find('/') == std::string::npos || backupdir::IsUndoTablespaceName(rel)) return;
  std::lock_guard<std::mutex> l(mu_);
  // Whatever the copier read before Arm was written before Arm's LSN.
  if (!armed_ || lsn < from_lsn_ || ops_.size() >= 16) return;
  ops_.emplace_back(lsn, op);
}

Result<DdlWatch::Stamps> DdlWatch::StampDefinitions(const backupdir::ServerLayout& layout,
                                                    const backupdir::TableFilter& filter) {
  XBAK_ASSIGN_OR_RETURN(auto files, backupdir::ListOtherFiles(layout, filter));
  Stamps out;
  for (const auto& f : files) {
    if (!IsDefinition(f.rel)) continue;
    struct stat st {};
    if (::stat(f.path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // dropped between the listing and now: the next listing lacks it
      return ErrnoError("cannot stat", f.path, errno);
    }
    out[f.rel] = Stamp{st.st_ino, static_cast<int64_t>(st.st_size),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                       static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
  }
  return out;
}

Status DdlWatch::Arm(uint64_t lsn, const backupdir::ServerLayout& layout,
                     const backupdir::TableFilter& filter) {
  {
    // Armed first: the copier may read records from `lsn` on while the
    // files are stamped (seconds at tens of thousands of tables).
    std::lock_guard<std::mutex> l(mu_);
    from_lsn_ = lsn;
    armed_ = true;
  }
  XBAK_ASSIGN_OR_RETURN(Stamps s, StampDefinitions(layout, filter));
  std::lock_guard<std::mutex> l(mu_);
  before_ = std::move(s);
  return Status::Ok();
}

Status DdlWatch::Check(const backupdir::ServerLayout& layout, const backupdir::TableFilter& filter) const {
  XBAK_ASSIGN_OR_RETURN(Stamps now, StampDefinitions(layout, filter));
  std::string seen;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!ops_.empty()) seen = OpText(ops_.front().second) + " at LSN " + std::to_string(ops_.front().first);
  }
  for (auto it = before_.begin(); seen.empty() && it != before_.end(); ++it) {
    auto n = now.find(it->first);
    if (n == now.end())
      seen = it->first + " was removed";
    else if (!(n->second == it->second))
      seen = it->first + " was changed";
  }
  for (auto it = now.begin(); seen.empty() && it != now.end(); ++it) {
    // An ALTER's #sql file there at both listings is not taken for DDL:
    // datadirs keep orphans of crashed ALTERs for years, and they would fail
    // every backup. (An in-place ALTER that began before Arm and whose .frm
    // rename follows its InnoDB commit by milliseconds across Check is the
    // window left; a copying ALTER's rename is in the redo log.)
    if (!before_.count(it->first)) seen = it->first + " was created";
  }
  if (seen.empty()) return Status::Ok();
  if (seen.find("#sql") != std::string::npos) seen += ", an ALTER TABLE's temporary file";
  return Error(ErrorCode::kServer,
               "DDL ran during a --no-lock backup (" + seen +
                   "): without BACKUP STAGE locks nothing stops it, and the backup's table definitions might "
                   "not match its data. Take the backup again without --no-lock (BACKUP STAGE locks block "
                   "DDL, not writes; they need the RELOAD privilege), or at a time no DDL runs");
}

}  // namespace xbak::backup
