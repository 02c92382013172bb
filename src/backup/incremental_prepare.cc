#include "xbak/backup/incremental_prepare.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "xbak/backup/export.h"
#include "xbak/backup/layout.h"
#include "xbak/backup/metadata.h"
#include "xbak/backup/prepare.h"
#include "xbak/backup/redo_apply.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/phase_clock.h"
#include "xbak/util/progress.h"

namespace xbak {
namespace {

// Present while an incremental is being applied. It holds the incremental's
// identity and the base's original xtrabackup_checkpoints (which is removed
// meanwhile, so that nothing can take a half-applied base for a good one).
constexpr const char* kInProgressFile = "xbak_incremental_in_progress";

const char* const kOtherExtensions[] = {".frm", ".MYD", ".MYI", ".MAD", ".MAI", ".MRG", ".TRG",
                                        ".TRN", ".ARM", ".ARZ", ".CSM", ".CSV", ".opt", ".par"};

bool IsOtherTableFile(const std::string& n) {
  for (const char* e : kOtherExtensions) {
    if (n.ends_with(e)) return true;
  }
  return false;
}

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

struct IncScan {
  std::vector<DeltaJob> deltas;
  std::vector<std::string> news;                          // "db/t" of db/t.new
  std::vector<std::string> dels;                          // "db/t"
  std::vector<std::pair<std::string, std::string>> rens;  // old, new space names
  std::vector<std::string> others;                        // non-InnoDB files (rel)
};

Status Classify(const std::string& inc, const std::string& rel, IncScan* s) {
  const std::string path = JoinPath(inc, rel);
  if (rel.ends_with(".delta")) {
    DeltaJob j;  // its .meta and size: ReadDeltaMeta
    j.rel = rel.substr(0, rel.size() - 6);
    j.delta = path;
    s->deltas.push_back(std::move(j));
  } else if (rel.ends_with(".new")) {
    s->news.push_back(rel.substr(0, rel.size() - 4));
  } else if (rel.ends_with(".del")) {
    s->dels.push_back(rel.substr(0, rel.size() - 4));
  } else if (rel.ends_with(".ren")) {
    XBAK_ASSIGN_OR_RETURN(std::string to, ReadSmallFile(path, 4096));
    if (!IsSafeSpaceName(to)) {
      return Error(ErrorCode::kCorrupt, path + ": rename target '" + to + "' is not a db/table name");
    }
    s->rens.emplace_back(rel.substr(0, rel.size() - 4), to);
  } else if (IsOtherTableFile(rel) || rel.rfind("aria_log", 0) == 0) {
    s->others.push_back(rel);
  }
  return Status::Ok();
}

Status ReadDeltaMeta(const std::string& inc, DeltaJob& j) {
  std::string meta_path = JoinPath(inc, j.rel + ".meta");
  auto text = ReadSmallFile(meta_path, 4096);
  if (!text.ok()) return text.status().With("delta " + j.delta + " has no readable .meta");
  XBAK_ASSIGN_OR_RETURN(j.meta, innodb::ParseDeltaMeta(text.value(), meta_path));
  struct stat st {};
  if (::stat(j.delta.c_str(), &st) != 0) return ErrnoError("stat", j.delta, errno);
  j.size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Result<IncScan> ScanIncremental(const std::string& inc, int parallel) {
  IncScan s;
  XBAK_ASSIGN_OR_RETURN(auto top, ListDir(inc));
  for (const auto& n : top) {
    if (IsDirectory(JoinPath(inc, n))) {
      XBAK_ASSIGN_OR_RETURN(auto files, ListDir(JoinPath(inc, n)));
      for (const auto& f : files) XBAK_RETURN_IF_ERROR(Classify(inc, n + "/" + f, &s));
    } else if (n.ends_with(".delta") || n.rfind("aria_log", 0) == 0) {
      XBAK_RETURN_IF_ERROR(Classify(inc, n, &s));
    }
  }
  // Tens of thousands of small .meta files: read on all threads.
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(RunParallel(
      s.deltas.size(), parallel, [&](size_t i) { return ReadDeltaMeta(inc, s.deltas[i]); }, &cancel));
  return s;
}

// `special`, when given: set when the redo step would look closer at this
// tablespace (PAGE_COMPRESSED, or crypt data), see CheckRedoApplicable.
Result<innodb::SpaceHeader> ReadPage0(const std::string& path, uint32_t page_size, bool* special = nullptr) {
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(path));
  f.AdviseRandom();
  std::vector<uint8_t> p(page_size);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(p.data(), p.size(), 0));
  if (n < p.size()) return Error(ErrorCode::kCorrupt, path + ": shorter than one page");
  auto h = innodb::ParseSpaceHeader(p.data(), p.size());
  if (!h.ok()) return h.status().With(path + " page 0");
  if (special) {
    *special = h->flags.page_compressed || h->flags.logical_size != page_size ||
               innodb::ReadCryptData(p.data(), h->flags).has_value();
  }
  return h;
}

// Walks a whole delta, checking its structure and every page's checksum,
// without writing anything.
// `base_page0`: the base file's page 0 header when the caller read it already
// (tens of thousands of tables: each file is opened once less).
Status ValidateDelta(DeltaJob& j, const std::string& base_path, bool base_exists,
                     const innodb::SpaceHeader* base_page0) {
  XBAK_ASSIGN_OR_RETURN(File f, File::OpenRead(j.delta));
  const uint32_t ps = j.meta.page_size;
  std::optional<innodb::SpaceFlags> flags = j.system_flags;
  if (base_exists && j.first_page == 0) {
    auto h = base_page0 ? Result<innodb::SpaceHeader>(*base_page0) : ReadPage0(base_path, ps);
    if (h.ok()) {
      if (h->space_id != j.meta.space_id) {
        j.replace = true;  // confirmed below by the delta's own page 0
      }
      flags = h->flags;
    }
  }
  innodb::DeltaReader r(f, ps);
  bool first = true;
  j.blocks.clear();
  for (;;) {
    const uint64_t block_at = r.offset();
    XBAK_ASSIGN_OR_RETURN(bool more, r.Next());
    if (!more) break;
    j.blocks.push_back(block_at);
    for (size_t i = 0; i < r.page_numbers().size(); i++) {
      const uint32_t no = r.page_numbers()[i] + j.first_page;  // in the tablespace
      const uint8_t* page = r.page(i);
      if (no == 0) {
        auto h = innodb::ParseSpaceHeader(page, ps);
        if (!h.ok()) return h.status().With(j.delta + ": page 0");
        if (h->space_id != j.meta.space_id) {
          return Error(ErrorCode::kCorrupt, j.delta + ": page 0 says space id " +
                                                std::to_string(h->space_id) + " but the .meta says " +
                                                std::to_string(j.meta.space_id));
        }
        j.has_page0 = true;
        j.want_size = uint64_t{h->size_in_pages} * ps;
        // Delta pages go in as they were copied (encrypted or not); only the
        // redo step decrypts, so its keys are checked before anything is written.
        if (auto c = innodb::ReadCryptData(page, h->flags); c && c->MayEncrypt()) j.crypt = c;
        if (first || !flags || j.replace) flags = h->flags;
      }
      first = false;
      if (!flags) {
        return Error(ErrorCode::kCorrupt, j.delta + ": page " + std::to_string(no) +
                                              " of a tablespace that is " + "neither in the base (" +
                                              base_path + ") nor created by this delta");
      }
      // The doublewrite buffer of the system tablespace holds copies of
      // other pages (their numbers, not its own): copied, not validated.
      if (innodb::InDoublewriteArea(j.meta.space_id, no, ps)) continue;
      innodb::PageCheck c = innodb::CheckPage(page, *flags, no);
      if (c.verdict == innodb::PageVerdict::kCorrupt) {
        return Error(ErrorCode::kCorrupt, j.delta + ": page " + std::to_string(no) + " (block at byte " +
                                              std::to_string(block_at) + "): " + c.detail);
      }
    }
  }
  if (j.replace && !j.has_page0) {
    auto h = ReadPage0(base_path, ps);
    return Error(ErrorCode::kCorrupt, j.delta + ": its .meta says space id " +
                                          std::to_string(j.meta.space_id) + " but " + base_path +
                                          " is space " + std::to_string(h.ok() ? h->space_id : 0) +
                                          "; refusing to mix two tablespaces");
  }
  if (!base_exists && !j.has_page0) {
    return Error(ErrorCode::kCorrupt,
                 j.delta + ": " + base_path +
                     " does not exist in the base and the delta does not create it (no page 0)");
  }
  return Status::Ok();
}

// Creates the data file if needed, empties it for a re-created table and
// extends it to the delta's FSP_SIZE (never shrinks it): done once per file,
// before any of its pieces is written.
Status PrepareTarget(const DeltaJob& j, const std::string& target) {
  XBAK_RETURN_IF_ERROR(MakeDirs(target.substr(0, target.rfind('/'))));
  XBAK_ASSIGN_OR_RETURN(File out, File::OpenWrite(target));
  if (j.replace) XBAK_RETURN_IF_ERROR(out.Truncate(0));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, out.Size());
  if (j.want_size > size) XBAK_RETURN_IF_ERROR(out.Truncate(j.want_size));
  return out.Close();
}

// Writes the pages of blocks [first_block, end_block) of a delta. Nothing is
// fsync'ed here: the caller makes the whole apply durable with one syncfs().
Status ApplyPiece(const Piece& piece, const std::string& target, Progress& progress) {
  const DeltaJob& j = *piece.job;
  if (piece.whole_file) XBAK_RETURN_IF_ERROR(PrepareTarget(j, target));
  XBAK_ASSIGN_OR_RETURN(File in, File::OpenRead(j.delta));
  XBAK_ASSIGN_OR_RETURN(File out, File::OpenWrite(target));
  const uint32_t ps = j.meta.page_size;
  innodb::DeltaReader r(in, ps);
  for (size_t b = piece.first_block; b < piece.end_block; b++) {
    r.Seek(j.blocks[b]);
    XBAK_ASSIGN_OR_RETURN(bool more, r.Next());
    if (!more)
      return Error(ErrorCode::kCorrupt,
                   j.delta + ": block at byte " + std::to_string(j.blocks[b]) + " vanished");
    // Pages of a block are usually consecutive: write runs with one pwrite.
    size_t i = 0;
    const auto& nos = r.page_numbers();
    while (i < nos.size()) {
      size_t k = i + 1;
      while (k < nos.size() && nos[k] == nos[k - 1] + 1) k++;
      XBAK_RETURN_IF_ERROR(out.PWrite(r.page(i), (k - i) * size_t{ps}, uint64_t{nos[i]} * ps));
      progress.AddDone((k - i) * uint64_t{ps});
      i = k;
    }
  }
  return out.Close();
}

// Makes dst a copy of src. An incremental carries a copy of every .frm,
// .MYI, db.opt, ...: thousands of small files that are mostly identical to the
// base's. Those are left alone, which spares creating thousands of inodes
// (on ext4 the slowest part of an apply over many small tables).
Status CopyReplace(const std::string& src, const std::string& dst) {
  constexpr size_t kSmall = 1 << 20;
  struct stat ss, ds;
  if (::stat(src.c_str(), &ss) != 0) return ErrnoError("stat", src, errno);
  if (static_cast<size_t>(ss.st_size) <= kSmall && ::stat(dst.c_str(), &ds) == 0 &&
      ds.st_size == ss.st_size) {
    XBAK_ASSIGN_OR_RETURN(std::string a, ReadSmallFile(src, kSmall + 1));
    XBAK_ASSIGN_OR_RETURN(std::string b, ReadSmallFile(dst, kSmall + 1));
    if (a == b) return Status::Ok();
  }
  XBAK_RETURN_IF_ERROR(MakeDirs(dst.substr(0, dst.rfind('/'))));
  std::string tmp = dst + ".xbtmp";
  ::unlink(tmp.c_str());
  XBAK_ASSIGN_OR_RETURN(File in, File::OpenRead(src));
  XBAK_ASSIGN_OR_RETURN(File out, File::CreateNew(tmp));
  // Not zero-filled: sized to the file, up to 4 MiB.
  const size_t cap = std::clamp<size_t>(static_cast<size_t>(ss.st_size), 1, 4 << 20);
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(cap);
  uint64_t off = 0;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.get(), cap, off));
    if (n == 0) break;
    XBAK_RETURN_IF_ERROR(out.Write(buf.get(), n));
    off += n;
  }
  // Not fsync'ed here: RunIncrementalPrepare ends with one syncfs().
  XBAK_RETURN_IF_ERROR(out.Close());
  if (::rename(tmp.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + tmp + " to", dst, errno);
  return Status::Ok();
}

}  // namespace

static Status FinishRedo(const IncrementalPrepareOptions& o) {
  PrepareOptions po;
  po.target_dir = o.target_dir;
  po.parallel = o.parallel;
  po.use_memory = o.use_memory;
  po.progress_interval = o.progress_interval;
  po.keys = o.keys;
  if (o.log_from_incremental) po.log_dir = o.incremental_dir;
  po.prepared_log = o.prepared_log;
  po.sync_data = o.sync_data;
  return ApplyLogAndMarkPrepared(po);
}

Status RunIncrementalPrepare(const IncrementalPrepareOptions& o) {
  PhaseClock clock;
  const std::string& full = o.target_dir;
  const std::string& inc = o.incremental_dir;
  const std::string marker = JoinPath(full, kInProgressFile);

  // 1. The chain, before anything is written.
  std::string icp_path = JoinPath(inc, kCheckpointsFile);
  auto itext = ReadSmallFile(icp_path);
  if (!itext.ok())
    return Error(ErrorCode::kInvalidArgument, inc + " is not a complete backup: " + itext.status().message());
  XBAK_ASSIGN_OR_RETURN(Checkpoints icp, ParseCheckpoints(itext.value(), icp_path));
  if (icp.backup_type != "incremental") {
    return Error(ErrorCode::kInvalidArgument,
                 inc + " is not an incremental backup (backup_type = " + icp.backup_type + ")");
  }
  if (PathExists(JoinPath(full, kExportedFile))) {
    // The export server wrote into the base (rollback, purge) past its
    // to_lsn: pages an incremental holds would land on pages it changed.
    return Error(ErrorCode::kUnsupported,
                 full +
                     " was exported (xbak --prepare --export started a server on it): "
                     "it can no longer take incrementals; apply them to another copy of "
                     "the base, then export");
  }
  {
    // A table in one and not the other would be half a table after the apply.
    XBAK_ASSIGN_OR_RETURN(TableFilter ifilter, ReadTableFilter(inc));
    XBAK_ASSIGN_OR_RETURN(TableFilter ffilter, ReadTableFilter(full));
    if (ifilter.Serialize() != ffilter.Serialize()) {
      return Error(ErrorCode::kUnsupported,
                   inc + " was taken with other --databases/--tables options than " + full +
                       " (compare their " + kTableFilterFile +
                       " files): an incremental applies only to a base of the same tables");
    }
  }
  const std::string identity = "incremental " + inc + " from_lsn " + std::to_string(icp.from_lsn) +
                               " to_lsn " + std::to_string(icp.to_lsn) + "\n";
  std::string base_cp_text;
  bool resuming = false;
  if (PathExists(marker)) {
    XBAK_ASSIGN_OR_RETURN(std::string m, ReadSmallFile(marker));
    if (m.rfind(identity, 0) != 0) {
      return Error(ErrorCode::kInvalidArgument,
                   "an earlier apply of another incremental into " + full + " was interrupted (" + marker +
                       " says: " + m.substr(0, m.find('\n')) +
                       "); finish it by re-running that one, or restore the base");
    }
    base_cp_text = m.substr(identity.size());
    resuming = true;
    LogWarning(
        "an earlier apply of this incremental was interrupted; applying it again (deltas are idempotent)");
  } else {
    std::string fcp_path = JoinPath(full, kCheckpointsFile);
    auto ftext = ReadSmallFile(fcp_path);
    if (!ftext.ok())
      return Error(ErrorCode::kInvalidArgument,
                   full + " is not a complete backup: " + ftext.status().message());
    base_cp_text = ftext.value();
  }
  XBAK_ASSIGN_OR_RETURN(Checkpoints fcp, ParseCheckpoints(base_cp_text, JoinPath(full, kCheckpointsFile)));
  if (!resuming && fcp.backup_type == "full-backuped" && fcp.to_lsn == icp.to_lsn &&
      fcp.last_lsn == icp.last_lsn) {
    // The deltas went in, the redo step was interrupted: finish it.
    LogInfo("the deltas of " + inc + " are already in " + full + "; applying its redo log");
    return FinishRedo(o);
  }
  if (fcp.backup_type != "log-applied") {
    return Error(ErrorCode::kInvalidArgument, "the full backup in " + full +
                                                  " is not prepared (backup_type = " + fcp.backup_type +
                                                  "); run xbak --prepare --target-dir=" + full + " first");
  }
  XBAK_RETURN_IF_ERROR(CheckChainLink(fcp, full, icp, inc));
  XBAK_ASSIGN_OR_RETURN(BackupCnf fcnf, ReadBackupCnf(full));
  const uint32_t fps = fcnf.page_size;
  XBAK_ASSIGN_OR_RETURN(uint32_t ips, BackupPageSize(inc));
  if (fps != ips) {
    return Error(ErrorCode::kInvalidArgument, "innodb_page_size differs: " + std::to_string(fps) + " in " +
                                                  full + ", " + std::to_string(ips) + " in " + inc);
  }

  // 2. Validate every delta against the base as it will be after the markers.
  XBAK_ASSIGN_OR_RETURN(IncScan scan, ScanIncremental(inc, o.parallel));
  clock.Mark("listing");
  std::map<std::string, std::string> renamed_from;  // new rel -> old rel
  for (auto& [from, to] : scan.rens) renamed_from[to + ".ibd"] = from + ".ibd";
  std::set<std::string> deleted;
  for (auto& d : scan.dels) deleted.insert(d + ".ibd");
  std::set<std::string> newfiles;
  for (auto& n : scan.news) newfiles.insert(n + ".ibd");
  // The base's file-per-table tablespaces by space id: a table renamed between
  // the two backups has its delta under the new name (as in mariabackup, the
  // space id, not the name, says which file a delta belongs to).
  std::map<uint32_t, std::string> base_by_id;
  std::map<std::string, innodb::SpaceHeader> base_page0;  // rel in the base -> its page 0
  std::set<std::string> base_special;                     // what CheckRedoApplicable must open again
  std::vector<std::string> base_ibds;
  XBAK_ASSIGN_OR_RETURN(auto base_top, ListDir(full));
  for (const auto& db : base_top) {
    if (!IsDirectory(JoinPath(full, db))) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, ListDir(JoinPath(full, db)));
    for (const auto& f : files) {
      std::string rel = db + "/" + f;
      // NAME.ibd.xbmove: a rename of step 4 that an interrupted run left
      // half done; it is found by its space id and finished like the others.
      if (!(f.ends_with(".ibd") || f.ends_with(".ibd.xbmove")) || deleted.count(rel)) continue;
      base_ibds.push_back(rel);
    }
  }
  {
    // Thousands of small tables: their first pages are read on all threads.
    std::vector<std::optional<innodb::SpaceHeader>> heads(base_ibds.size());
    std::vector<char> special(base_ibds.size(), 0);
    std::atomic<bool> cancel{false};
    XBAK_RETURN_IF_ERROR(RunParallel(
        base_ibds.size(), o.parallel,
        [&](size_t i) {
          bool s = true;
          auto h = ReadPage0(JoinPath(full, base_ibds[i]), fps, &s);
          if (h.ok()) heads[i] = *h;
          special[i] = s;  // unreadable: the redo step's check looks at it too
          return Status::Ok();
        },
        &cancel));
    for (size_t i = 0; i < base_ibds.size(); i++) {
      if (special[i]) base_special.insert(base_ibds[i]);
      if (!heads[i]) continue;
      base_by_id[heads[i]->space_id] = base_ibds[i];
      base_page0.emplace(base_ibds[i], *heads[i]);
    }
  }
  clock.Mark("base page 0s");
  for (auto& [to, from] : renamed_from) {
    for (auto& [id, rel] : base_by_id) {
      if (rel == from) rel = to;  // the marker renames it first
    }
  }
  std::map<std::string, std::string> moves;  // base rel -> new rel, for renames between the backups
  Progress progress("incremental apply", o.progress_interval);
  struct Validation {
    DeltaJob* job;
    std::string base_path;
    bool base_exists;
    const innodb::SpaceHeader* base_page0;  // read in the loop above, or null
  };
  std::vector<Validation> to_validate;
  DeltaJob* system_head = nullptr;  // ibdata1's delta, when the system tablespace has several files
  for (auto& j : scan.deltas) {
    for (size_t i = 1; i < fcnf.system_files.size(); i++) {
      if (j.rel != fcnf.system_files[i]) continue;
      j.first_page = fcnf.system_first_page[i];
      auto h = ReadPage0(JoinPath(full, fcnf.system_files[0]), fps);
      if (!h.ok()) return h.status().With("the system tablespace's first file in " + full);
      j.system_flags = h->flags;
    }
    if (fcnf.system_files.size() > 1 && j.rel == fcnf.system_files[0]) system_head = &j;
  }
  for (auto& j : scan.deltas) {
    if (newfiles.count(j.rel)) continue;  // replaced wholesale by the .new copy
    std::string base_rel = renamed_from.count(j.rel) ? renamed_from[j.rel] : j.rel;
    bool per_table = j.rel.find('/') != std::string::npos;
    if (per_table) {
      auto it = base_by_id.find(j.meta.space_id);
      if (it != base_by_id.end()) {
        std::string cur = it->second;
        for (auto& [to, from] : renamed_from) {
          if (to == cur) cur = from;
        }
        base_rel = cur;
        if (it->second != j.rel) moves[it->second] = j.rel;
      }
    }
    std::string base_path = JoinPath(full, base_rel);
    // Read above (and not renamed since): it exists, and its page 0 is known.
    auto known = renamed_from.count(j.rel) ? base_page0.end() : base_page0.find(base_rel);
    if (known != base_page0.end()) {
      to_validate.push_back({&j, base_path, true, &known->second});
      continue;
    }
    bool exists = !deleted.count(base_rel) && PathExists(base_path);
    to_validate.push_back({&j, base_path, exists, nullptr});
  }
  {
    std::atomic<bool> cancel{false};
    XBAK_RETURN_IF_ERROR(RunParallel(
        to_validate.size(), o.parallel,
        [&](size_t i) {
          const auto& v = to_validate[i];
          XBAK_RETURN_IF_ERROR(ValidateDelta(*v.job, v.base_path, v.base_exists, v.base_page0));
          progress.AddTotal(v.job->size, 1);
          return Status::Ok();
        },
        &cancel));
  }
  LogInfo("validated " + std::to_string(scan.deltas.size()) + " delta files of " + inc);
  clock.Mark("validation");
  // Page 0's FSP_SIZE is the size of the whole system tablespace: only its
  // last file grows (the others have the sizes innodb_data_file_path gives).
  uint64_t system_last_size = 0;
  if (system_head && system_head->has_page0) {
    const uint64_t pages = system_head->want_size / fps;
    const uint64_t before = fcnf.system_first_page.back();
    system_last_size = pages > before ? (pages - before) * fps : 0;
    system_head->want_size = 0;
  }

  // What the redo step after the deltas would refuse (an encrypted log or
  // tablespace, an algorithm this build lacks) is refused now, before the
  // first delta goes in.
  if (!resuming) {
    std::vector<std::pair<std::string, innodb::CryptData>> incoming;
    for (const auto& j : scan.deltas) {
      if (j.crypt) incoming.emplace_back(j.delta, *j.crypt);
    }
    XBAK_RETURN_IF_ERROR(CheckRedoApplicable(inc, full, std::max(icp.to_lsn, icp.last_lsn), o.keys,
                                             o.parallel, incoming, &base_special));
  }

  clock.Mark("redo check");
  // 3. From here FULL changes: first make it unmistakably "in progress".
  if (!resuming) {
    XBAK_RETURN_IF_ERROR(WriteFileAtomic(marker, identity + base_cp_text));
    if (::unlink(JoinPath(full, kCheckpointsFile).c_str()) != 0) {
      return ErrnoError("remove", JoinPath(full, kCheckpointsFile), errno);
    }
    XBAK_RETURN_IF_ERROR(SyncDir(full));
  }

  // 4. DDL markers, in mariabackup's order: .del, .ren, .new.
  for (auto& d : deleted) {
    if (::unlink(JoinPath(full, d).c_str()) != 0 && errno != ENOENT)
      return ErrnoError("remove", JoinPath(full, d), errno);
  }
  for (auto& [to, from] : renamed_from) {
    std::string src = JoinPath(full, from), dst = JoinPath(full, to);
    // Done by an interrupted run; or a table newer than the base, renamed
    // during the incremental: its delta (under the old name) creates it and
    // the redo log's FILE_RENAME moves it.
    if (!PathExists(src)) continue;
    if (PathExists(dst)) {
      return Error(ErrorCode::kUnsupported, "rename of " + from + " to " + to + ": " + dst +
                                                " exists already (circular renames are not supported yet)");
    }
    XBAK_RETURN_IF_ERROR(MakeDirs(dst.substr(0, dst.rfind('/'))));
    if (::rename(src.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + src + " to", dst, errno);
  }
  // Renames between the backups: via temporary names, so that swaps work.
  for (auto& [from, to] : moves) {
    std::string src = JoinPath(full, from), tmp = JoinPath(full, to) + ".xbmove";
    if (src == tmp) continue;  // moved there by an interrupted run
    XBAK_RETURN_IF_ERROR(MakeDirs(tmp.substr(0, tmp.rfind('/'))));
    if (::rename(src.c_str(), tmp.c_str()) != 0) return ErrnoError("rename " + src + " to", tmp, errno);
  }
  for (auto& [from, to] : moves) {
    std::string tmp = JoinPath(full, to) + ".xbmove", dst = JoinPath(full, to);
    if (::rename(tmp.c_str(), dst.c_str()) != 0) return ErrnoError("rename " + tmp + " to", dst, errno);
  }
  for (auto& n : newfiles) {
    XBAK_RETURN_IF_ERROR(CopyReplace(JoinPath(inc, n.substr(0, n.size() - 4) + ".new"), JoinPath(full, n)));
  }

  // 5. The deltas on `parallel` threads, in pieces of about o.piece_bytes
  // (whole blocks), largest first. Files cut into several pieces are created
  // and sized before any piece runs.
  std::vector<const DeltaJob*> jobs;
  for (auto& j : scan.deltas) {
    if (!newfiles.count(j.rel)) jobs.push_back(&j);
  }
  std::vector<Piece> pieces;
  std::vector<const DeltaJob*> split;
  for (const DeltaJob* j : jobs) {
    size_t first = 0, n = j->blocks.size();
    const size_t before = pieces.size();
    for (size_t b = 0; b < n; b++) {
      uint64_t end = b + 1 < n ? j->blocks[b + 1] : j->size;
      if (end - j->blocks[first] >= o.piece_bytes || b + 1 == n) {
        pieces.push_back(Piece{j, first, b + 1, end - j->blocks[first], false});
        first = b + 1;
      }
    }
    if (pieces.size() - before == 1) {
      pieces.back().whole_file = true;
    } else {
      split.push_back(j);
    }
  }
  for (const DeltaJob* j : split) XBAK_RETURN_IF_ERROR(PrepareTarget(*j, JoinPath(full, j->rel)));
  if (system_last_size > 0) {
    const std::string last = JoinPath(full, fcnf.system_files.back());
    XBAK_ASSIGN_OR_RETURN(File f, File::OpenWrite(last));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    if (system_last_size > size) XBAK_RETURN_IF_ERROR(f.Truncate(system_last_size));
    XBAK_RETURN_IF_ERROR(f.Close());
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.bytes > b.bytes; });
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(RunParallel(
      pieces.size(), o.parallel,
      [&](size_t i) {
        const Piece& p = pieces[i];
        XBAK_RETURN_IF_ERROR(
            ApplyPiece(p, JoinPath(full, p.job->rel), progress).With("applying " + p.job->delta));
        if (p.end_block == p.job->blocks.size()) progress.FileDone();
        return Status::Ok();
      },
      &cancel));
  clock.Mark("deltas");
  // 6. Tables dropped between the backups; non-InnoDB files as of the incremental.
  std::set<std::string> known(newfiles.begin(), newfiles.end());
  for (auto& j : scan.deltas) known.insert(j.rel);
  std::set<std::string> others(scan.others.begin(), scan.others.end());
  XBAK_ASSIGN_OR_RETURN(auto top, ListDir(full));
  for (const auto& db : top) {
    std::string dbdir = JoinPath(full, db);
    if (!IsDirectory(dbdir)) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, ListDir(dbdir));
    for (const auto& f : files) {
      std::string rel = db + "/" + f;
      bool drop = (f.ends_with(".ibd") && !known.count(rel)) || (IsOtherTableFile(f) && !others.count(rel));
      if (drop && ::unlink(JoinPath(full, rel).c_str()) != 0)
        return ErrnoError("remove", JoinPath(full, rel), errno);
    }
  }
  XBAK_RETURN_IF_ERROR(RunParallel(
      scan.others.size(), o.parallel,
      [&](size_t i) { return CopyReplace(JoinPath(inc, scan.others[i]), JoinPath(full, scan.others[i])); },
      &cancel));
  // backup-my.cnf stays the full backup's, as mariabackup keeps it: the
  // settings the chain's pages are written back with (innodb_encrypt_tables,
  // innodb_compression_level) are the same whichever tool prepares it.
  for (const char* meta : {kBinlogInfoFile, kInfoFile, "ib_logfile0"}) {
    if (o.log_from_incremental && std::string_view(meta) == "ib_logfile0") continue;
    if (PathExists(JoinPath(inc, meta)))
      XBAK_RETURN_IF_ERROR(CopyReplace(JoinPath(inc, meta), JoinPath(full, meta)));
  }
  clock.Mark("other files");
  // One syncfs for every file written above, instead of one fsync per file
  // (tens of thousands of small tables would make that a storm); only then
  // is the apply declared done. Until here the in-progress marker makes a
  // crash redo the whole apply, so the order of the writes does not matter.
  if (o.sync_data) XBAK_RETURN_IF_ERROR(SyncFilesystem(full));
  for (const auto& db : top) {
    if (IsDirectory(JoinPath(full, db))) XBAK_RETURN_IF_ERROR(SyncDir(JoinPath(full, db)));
  }

  // 7. FULL is now a full backup at the incremental's point, with the
  // incremental's log: a restartable state (copy-back refuses it). Then the
  // log is applied as for a full backup.
  Checkpoints out{"full-backuped", 0, icp.to_lsn, icp.last_lsn, false};
  XBAK_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(full, kCheckpointsFile), FormatCheckpoints(out)));
  if (::unlink(marker.c_str()) != 0) return ErrnoError("remove", marker, errno);
  XBAK_RETURN_IF_ERROR(SyncDir(full));
  progress.Finish(true);
  clock.Mark("sync");
  const double delta_step = clock.Total();
  LogInfo("applied " + std::to_string(jobs.size()) + " deltas and " + std::to_string(newfiles.size()) +
          " new tables of " + inc + " with " + std::to_string(o.parallel) + " threads (" + clock.Summary() +
          ")");
  XBAK_RETURN_IF_ERROR(FinishRedo(o));
  char b[128];
  std::snprintf(b, sizeof b, "incremental prepare done in %.2f s: delta step %.2f s, redo step %.2f s",
                clock.Total(), delta_step, clock.Total() - delta_step);
  LogInfo(b);
  return Status::Ok();
}

}  // namespace xbak
