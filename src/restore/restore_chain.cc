#include "restore_chain.h"

#include <climits>
#include <cstdlib>

#include "xbak/backupdir/server.h"
#include "xbak/prepare/export.h"
#include "xbak/util/file.h"

namespace xbak::restore {
namespace {

Result<std::string> RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return ErrnoError("cannot open backup directory", p, errno);
  return std::string(buf);
}

Result<Link> ReadLink(const std::string& dir) {
  Link l;
  l.dir = dir;
  XBAK_ASSIGN_OR_RETURN(l.real, RealPath(dir));
  XBAK_ASSIGN_OR_RETURN(l.cp, backupdir::ReadCheckpoints(dir));
  return l;
}

// Files a restore cannot take as they are.
Status RefuseUnusable(const std::string& dir, const std::vector<std::pair<std::string, uint64_t>>& entries) {
  for (const auto& [rel, size] : entries) {
    if (rel.ends_with(".zst") || rel.ends_with(".lz4") || rel.ends_with(".qp")) {
      return Error(ErrorCode::kInvalidArgument,
                   util::JoinPath(dir, rel) + " is compressed: run xbak --decompress --target-dir=" + dir +
                       " first (or restore from the stream, which is decompressed as it is read)");
    }
    if (rel.ends_with(prepare::kHiddenIslSuffix)) {
      return Error(ErrorCode::kInvalidArgument,
                   util::JoinPath(dir, rel) +
                       ": an interrupted xbak --prepare --export set this DATA DIRECTORY link aside; run "
                       "xbak --prepare --export --target-dir=" +
                       dir + " again to finish it");
    }
  }
  return Status::Ok();
}

// What an incremental must be besides continuing the chain: a backup this
// restore can take (see ReadChain).
Result<Link> ReadIncremental(const std::string& dir, std::set<std::string>* seen) {
  XBAK_ASSIGN_OR_RETURN(Link inc, ReadLink(dir));
  if (!seen->insert(inc.real).second) {
    return Error(ErrorCode::kInvalidArgument,
                 dir + " is given twice in the chain (each backup is restored once)");
  }
  if (inc.cp.backup_type != "incremental") {
    return Error(ErrorCode::kInvalidArgument,
                 dir + " is not an incremental backup (backup_type = " + inc.cp.backup_type +
                     "); only the first backup of the chain (--target-dir) is a full one");
  }
  return inc;
}

// The files of a backup of the chain: of a server version the policy allows
// (backupdir/server.h), the same page size and partial filter
// as the full backup's, nothing compressed, the DATA DIRECTORY places its
// .isl files name (into `remote`).
Status CheckBackupFiles(const RestoreOptions& o, const Link& l, uint32_t page_size,
                        const backupdir::TableFilter& filter, std::map<std::string, std::string>* remote) {
  XBAK_RETURN_IF_ERROR(backupdir::CheckBackupServerVersion(l.dir, o.no_server_version_check));
  XBAK_ASSIGN_OR_RETURN(uint32_t ps, backupdir::BackupPageSize(l.dir));
  if (ps != page_size) {
    return Error(ErrorCode::kInvalidArgument, "innodb_page_size differs: " + std::to_string(page_size) +
                                                  " in the full backup, " + std::to_string(ps) + " in " +
                                                  l.dir);
  }
  XBAK_ASSIGN_OR_RETURN(backupdir::TableFilter f, backupdir::ReadTableFilter(l.dir));
  if (f.Serialize() != filter.Serialize()) {
    return Error(ErrorCode::kUnsupported, l.dir +
                                              " was taken with other --databases/--tables options than the "
                                              "full backup (compare their " +
                                              backupdir::kTableFilterFile + " files)");
  }
  std::vector<std::pair<std::string, uint64_t>> entries;
  XBAK_RETURN_IF_ERROR(ListBackupTree(l.dir, &entries));
  XBAK_RETURN_IF_ERROR(RefuseUnusable(l.dir, entries));
  if (!o.dirs.remote_to_datadir) {
    XBAK_ASSIGN_OR_RETURN(auto r, RemoteTablespaces(l.dir, entries));
    remote->insert(r.begin(), r.end());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Link>> ReadChain(const RestoreOptions& o, std::map<std::string, std::string>* remote,
                                    ChainFacts* facts) {
  std::vector<Link> chain;
  XBAK_ASSIGN_OR_RETURN(Link full, ReadLink(o.full_dir));
  if (full.cp.backup_type == "incremental") {
    return Error(ErrorCode::kInvalidArgument, o.full_dir +
                                                  " is an incremental backup: --target-dir names the full "
                                                  "backup of the chain, --incremental-dir each incremental");
  }
  if (full.cp.backup_type != "full-backuped" && full.cp.backup_type != "log-applied") {
    return Error(ErrorCode::kInvalidArgument, backupdir::MetaPath(o.full_dir, backupdir::Meta::kCheckpoints) +
                                                  ": unknown backup_type '" + full.cp.backup_type + "'");
  }
  if (util::PathExists(util::JoinPath(o.full_dir, "xbak_incremental_in_progress"))) {
    return Error(ErrorCode::kInvalidArgument,
                 "an incremental apply into " + o.full_dir +
                     " was interrupted: it is not a backup that can be restored");
  }
  if (!o.incremental_dirs.empty() && util::PathExists(util::JoinPath(o.full_dir, prepare::kExportedFile))) {
    return Error(ErrorCode::kUnsupported,
                 o.full_dir +
                     " was exported (xbak --prepare --export started a server on it): it can no "
                     "longer take incrementals");
  }
  XBAK_ASSIGN_OR_RETURN(facts->page_size, backupdir::BackupPageSize(o.full_dir));
  XBAK_ASSIGN_OR_RETURN(facts->filter, backupdir::ReadTableFilter(o.full_dir));
  facts->seen.insert(full.real);
  XBAK_RETURN_IF_ERROR(CheckBackupFiles(o, full, facts->page_size, facts->filter, remote));
  chain.push_back(std::move(full));
  if (o.await_incremental) return chain;
  std::vector<Link> incs;
  for (const std::string& dir : o.incremental_dirs) {
    XBAK_ASSIGN_OR_RETURN(Link inc, ReadIncremental(dir, &facts->seen));
    incs.push_back(std::move(inc));
  }
  for (size_t i = 0; i < incs.size(); i++) {
    Link& inc = incs[i];
    const std::string& dir = inc.dir;
    if (Status link = backupdir::CheckChainLink(chain.back().cp, chain.back().dir, inc.cp, dir); !link.ok()) {
      // The one that belongs here, given later: say so rather than "a gap".
      for (size_t j = i + 1; j < incs.size(); j++) {
        if (incs[j].cp.from_lsn == chain.back().cp.to_lsn) {
          return Error(ErrorCode::kInvalidArgument, "incrementals in the wrong order: " + incs[j].dir +
                                                        " continues " + chain.back().dir +
                                                        " and must come before " + dir +
                                                        " (--incremental-dir in the order they were taken)");
        }
      }
      return link;
    }
    XBAK_RETURN_IF_ERROR(CheckBackupFiles(o, inc, facts->page_size, facts->filter, remote));
    chain.push_back(std::move(inc));
  }
  return chain;
}

Status AwaitIncremental(const RestoreOptions& o, size_t k, const std::map<std::string, std::string>& remote,
                        ChainFacts* facts_out, std::vector<Link>* chain_out) {
  ChainFacts& facts = *facts_out;
  std::vector<Link>& chain = *chain_out;
  // From a stream: whole once this returns; checked before its pages go in.
  XBAK_RETURN_IF_ERROR(o.await_incremental(k));
  XBAK_ASSIGN_OR_RETURN(Link inc, ReadIncremental(o.incremental_dirs[k - 1], &facts.seen));
  auto name = [&](size_t i) { return i < o.streams.size() ? "the stream " + o.streams[i] : chain[i].dir; };
  XBAK_RETURN_IF_ERROR(backupdir::CheckChainLink(chain.back().cp, name(k - 1), inc.cp, name(k)));
  std::map<std::string, std::string> more;
  XBAK_RETURN_IF_ERROR(CheckBackupFiles(o, inc, facts.page_size, facts.filter, &more));
  for (const auto& [rel, path] : more) {
    if (remote.count(rel) == 0 && util::PathExists(path))
      return Error(ErrorCode::kAlreadyExists, path + " exists already; existing files are never overwritten");
  }
  chain.push_back(std::move(inc));
  return Status::Ok();
}

}  // namespace xbak::restore
