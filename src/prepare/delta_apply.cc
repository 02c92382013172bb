#include "xbak/prepare/delta_apply.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>

#include "xbak/backupdir/layout.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/prepare/applied_delta.h"
#include "xbak/util/copy_file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"

namespace xbak::prepare {
namespace {

// CopyReplace compares files up to this size with the base's copy (and leaves an equal one).
constexpr uint64_t kCompareBytes = 1 << 20;

const char* const kOtherExtensions[] = {".frm", ".MYD", ".MYI", ".MAD", ".MAI", ".MRG", ".TRG",
                                        ".TRN", ".ARM", ".ARZ", ".CSM", ".CSV", ".opt", ".par"};

}  // namespace

bool IsOtherTableFile(const std::string& n) {
  for (const char* e : kOtherExtensions) {
    if (n.ends_with(e)) return true;
  }
  return false;
}

namespace {
Status Classify(const std::string& inc, const std::string& rel, bool applied_records, IncScan* s) {
  const std::string path = util::JoinPath(inc, rel);
  if (rel.ends_with(".delta")) {
    DeltaJob j;  // its .meta and size: ReadDeltaMeta
    j.rel = rel.substr(0, rel.size() - 6);
    j.delta = path;
    s->deltas.push_back(std::move(j));
  } else if (rel.ends_with(kAppliedDeltaSuffix)) {
    if (!applied_records) {
      return Error(ErrorCode::kCorrupt,
                   path + ": a name xbak keeps for its own records, not part of a backup");
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path, errno);
    if (st.st_size == 0) return Status::Ok();  // staged as NAME.delta after all
    DeltaJob j;
    j.rel = rel.substr(0, rel.size() - kAppliedDeltaSuffix.size());
    j.delta = path;
    j.applied = true;
    s->deltas.push_back(std::move(j));
  } else if (rel.ends_with(".new")) {
    s->news.push_back(rel.substr(0, rel.size() - 4));
  } else if (rel.ends_with(".del")) {
    s->dels.push_back(rel.substr(0, rel.size() - 4));
  } else if (rel.ends_with(".ren")) {
    XBAK_ASSIGN_OR_RETURN(std::string to, util::ReadSmallFile(path, 4096));
    if (!backupdir::IsSafeSpaceName(to)) {
      return Error(ErrorCode::kCorrupt, path + ": rename target '" + to + "' is not a db/table name");
    }
    s->rens.emplace_back(rel.substr(0, rel.size() - 4), to);
  } else if (IsOtherTableFile(rel) || rel.rfind("aria_log", 0) == 0) {
    s->others.push_back(rel);
  }
  return Status::Ok();
}

Status ReadDeltaMeta(const std::string& inc, DeltaJob& j) {
  std::string meta_path = util::JoinPath(inc, j.rel + ".meta");
  auto text = util::ReadSmallFile(meta_path, 4096);
  if (!text.ok()) return text.status().With("delta " + j.delta + " has no readable .meta");
  XBAK_ASSIGN_OR_RETURN(j.meta, innodb::ParseDeltaMeta(text.value(), meta_path));
  if (j.applied) {
    XBAK_ASSIGN_OR_RETURN(uint32_t space, ReadAppliedDeltaSpace(j.delta));
    if (space != j.meta.space_id) {
      return Error(ErrorCode::kCorrupt, j.delta + ": written into space " + std::to_string(space) +
                                            " but the .meta says space " + std::to_string(j.meta.space_id) +
                                            "; refusing to mix two tablespaces");
    }
  }
  struct stat st {};
  if (::stat(j.delta.c_str(), &st) != 0) return ErrnoError("stat", j.delta, errno);
  j.size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

}  // namespace

Result<IncScan> ScanIncremental(const std::string& inc, int parallel, bool applied_records) {
  IncScan s;
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(inc));
  for (const auto& n : top) {
    if (util::IsDirectory(util::JoinPath(inc, n))) {
      XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(util::JoinPath(inc, n)));
      for (const auto& f : files) XBAK_RETURN_IF_ERROR(Classify(inc, n + "/" + f, applied_records, &s));
    } else if (n.ends_with(".delta") || n.rfind("aria_log", 0) == 0) {
      XBAK_RETURN_IF_ERROR(Classify(inc, n, applied_records, &s));
    }
  }
  const std::set<std::string> news(s.news.begin(), s.news.end()), dels(s.dels.begin(), s.dels.end());
  const std::map<std::string, std::string> renamed(s.rens.begin(), s.rens.end());
  for (auto& j : s.deltas) {
    j.target = j.rel;
    if (!j.rel.ends_with(".ibd")) continue;  // ibdata*, undo*: never a marker's
    const std::string table = j.rel.substr(0, j.rel.size() - 4);
    auto ren = renamed.find(table);
    if (news.count(table) && ren != renamed.end()) {
      j.target = ren->second + ".ibd";
    } else {
      j.is_void = news.count(table) || dels.count(table);
    }
  }
  // Tens of thousands of small .meta files: read on all threads, and asked of the disk ahead of
  // them (cold, one read per thread at a time leaves the disk idle).
  std::vector<util::PrefetchRange> metas;
  metas.reserve(s.deltas.size());
  for (const auto& j : s.deltas) metas.push_back({util::JoinPath(inc, j.rel + ".meta"), 0});
  util::Prefetcher ahead(std::move(metas));
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(util::RunParallel(
      s.deltas.size(), parallel, [&](size_t i) { return ReadDeltaMeta(inc, s.deltas[i]); }, &cancel));
  return s;
}

Result<innodb::SpaceHeader> ReadPage0(const std::string& path, uint32_t page_size, bool* special) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  f.AdviseRandom();
  std::vector<uint8_t> p(page_size);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(p.data(), p.size(), 0));
  if (n < p.size()) return Error(ErrorCode::kCorrupt, path + ": shorter than one page");
  auto h = innodb::ParseSpaceHeader(p.data(), p.size());
  if (!h.ok()) return h.status().With(path + " page 0");
  if (special) {
    // Pages larger than the ones read (a damaged header, another server's file): not looked into.
    const bool fits = h->flags.physical_size <= page_size;
    *special = !fits || h->flags.page_compressed || h->flags.logical_size != page_size ||
               innodb::ReadCryptData(p.data(), h->flags).has_value();
  }
  return h;
}

namespace {
// One page of a delta, in the format its tablespace has (`flags`).
Status CheckDeltaPage(const DeltaJob& j, const innodb::SpaceFlags& flags, const uint8_t* page, uint32_t no,
                      uint64_t block_at) {
  const uint32_t ps = j.meta.page_size;
  // The doublewrite buffer of the system tablespace holds copies of
  // other pages (their numbers, not its own): copied, not validated.
  if (innodb::InDoublewriteArea(j.meta.space_id, no, ps)) return Status::Ok();
  // The pages are read at the .meta's size: a format of another page size (a
  // damaged .meta or page 0, or a base of another server) would be checked
  // past the page's end.
  if (flags.physical_size != ps) {
    return Error(ErrorCode::kCorrupt, j.delta + ": page " + std::to_string(no) + " is in a tablespace of " +
                                          std::to_string(flags.physical_size) +
                                          "-byte pages but the .meta says page_size " + std::to_string(ps));
  }
  innodb::PageCheck c = innodb::CheckPage(page, flags, no);
  if (c.verdict == innodb::PageVerdict::kCorrupt) {
    return Error(ErrorCode::kCorrupt, j.delta + ": page " + std::to_string(no) + " (block at byte " +
                                          std::to_string(block_at) + "): " + c.detail);
  }
  return Status::Ok();
}
}  // namespace

Status ValidateDelta(DeltaJob& j, const std::string& base_path, bool base_exists,
                     const innodb::SpaceHeader* base_page0) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(j.delta));
  // Read whole, front to back: its first 64 MiB asked of the disk at once (the
  // kernel's own readahead, 128 KiB at a time, kept a cold restore of 2.4 MB
  // deltas at half the disk's speed), then the kernel's sequential readahead.
  util::AdviseSequential(f);
  (void)::posix_fadvise(f.fd(), 0, 64 << 20, POSIX_FADV_WILLNEED);
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
        if (h->flags.physical_size != ps) {  // before anything reads the page at its flags' size
          return Error(ErrorCode::kCorrupt,
                       j.delta + ": page 0 says " + std::to_string(h->flags.physical_size) +
                           "-byte pages but the .meta says page_size " + std::to_string(ps));
        }
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
      XBAK_RETURN_IF_ERROR(CheckDeltaPage(j, *flags, page, no, block_at));
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

namespace {
// The target opened for writing, emptied if the delta replaces it, grown to the delta's size.
Result<util::File> OpenTarget(const DeltaJob& j, const std::string& target) {
  XBAK_RETURN_IF_ERROR(util::MakeDirs(target.substr(0, target.rfind('/'))));
  XBAK_ASSIGN_OR_RETURN(util::File out, util::File::OpenWrite(target));
  if (j.replace) XBAK_RETURN_IF_ERROR(out.Truncate(0));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, out.Size());
  if (j.want_size > size) XBAK_RETURN_IF_ERROR(out.Truncate(j.want_size));
  return out;
}
}  // namespace

Status PrepareTarget(const DeltaJob& j, const std::string& target) {
  XBAK_ASSIGN_OR_RETURN(util::File out, OpenTarget(j, target));
  return out.Close();
}

Status ApplyPiece(const Piece& piece, const std::string& target, util::Progress& progress) {
  const DeltaJob& j = *piece.job;
  // A whole file (most of them: small tables) opens its target once; the pieces of a split
  // one find it prepared by PrepareTarget.
  XBAK_ASSIGN_OR_RETURN(util::File out,
                        piece.whole_file ? OpenTarget(j, target) : util::File::OpenWrite(target));
  XBAK_ASSIGN_OR_RETURN(util::File in, util::File::OpenRead(j.delta));
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
  out.StartWriteback();
  return out.Close();
}

Status CopyReplace(const std::string& src, const std::string& dst) {
  struct stat ss, ds;
  if (::stat(src.c_str(), &ss) != 0) return ErrnoError("stat", src, errno);
  if (static_cast<uint64_t>(ss.st_size) <= kCompareBytes && ::stat(dst.c_str(), &ds) == 0 &&
      ds.st_size == ss.st_size) {
    XBAK_ASSIGN_OR_RETURN(std::string a, util::ReadSmallFile(src, kCompareBytes + 1));
    XBAK_ASSIGN_OR_RETURN(std::string b, util::ReadSmallFile(dst, kCompareBytes + 1));
    if (a == b) return Status::Ok();
  }
  XBAK_RETURN_IF_ERROR(util::MakeDirs(dst.substr(0, dst.rfind('/'))));
  // Not fsync'ed here: the incremental apply ends with one syncfs().
  return util::PlaceFile(src, dst, {.sync = false}, nullptr);
}

std::vector<util::PrefetchRange> FirstPagesAhead(const std::string& full,
                                                 const std::vector<std::string>& base_ibds,
                                                 uint32_t page_size, const std::vector<DeltaJob>& deltas) {
  // A delta's header block and its first pages: 128 KiB covers two 64 KiB pages.
  constexpr uint64_t kDeltaHead = 128 << 10;
  std::vector<util::PrefetchRange> out;
  out.reserve(base_ibds.size() + deltas.size());
  for (const auto& rel : base_ibds) out.push_back({util::JoinPath(full, rel), page_size});
  for (const auto& j : deltas) out.push_back({j.delta, kDeltaHead});
  return out;
}

std::vector<util::PrefetchRange> OtherFilesAhead(const std::string& inc, const std::string& full,
                                                 const std::vector<std::string>& others) {
  // What CopyReplace compares (files up to kCompareBytes); a bigger file is copied as a stream,
  // which the kernel reads ahead by itself: asking for all of a large MyISAM table here would
  // only push other files out of the page cache.
  std::vector<util::PrefetchRange> out;
  out.reserve(2 * others.size());
  for (const auto& rel : others) {
    out.push_back({util::JoinPath(inc, rel), kCompareBytes});
    out.push_back({util::JoinPath(full, rel), kCompareBytes});
  }
  return out;
}

}  // namespace xbak::prepare
