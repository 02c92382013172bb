#include "xbak/prepare/space_catalog.h"

#include <atomic>
#include <cstring>

#include "xbak/backupdir/layout.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/page_compression.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"

namespace xbak::prepare {
namespace {

// A PAGE_COMPRESSED space xbak can apply the log to: full_crc32 files name
// their algorithm in the flags; older files on each page (the server variable
// at the time of the write), so every page is looked at. Before anything is
// written, so that an algorithm xbak lacks is refused by name.
Status CheckCompressedSpace(const util::File& f, const std::string& path, const innodb::SpaceFlags& flags) {
  if (flags.full_crc32) {
    if (!innodb::CompressionSupported(flags.compression_algo))
      return RefuseCompression(path, flags.compression_algo);
    return Status::Ok();
  }
  const size_t size = flags.logical_size;
  std::vector<uint8_t> buf(size * 64);
  for (uint64_t off = 0;; off += buf.size()) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buf.data(), buf.size(), off));
    for (size_t i = 0; i + size <= n; i += size) {
      const uint32_t algo = innodb::StoredCompression(buf.data() + i, flags);
      if (algo != 0 && !innodb::CompressionSupported(algo)) {
        return RefuseCompression(path + " page " + std::to_string((off + i) / size), algo);
      }
    }
    if (n < buf.size()) break;
  }
  return Status::Ok();
}

std::string KeyId(const innodb::CryptData& c) { return "key id " + std::to_string(c.key_id); }

// The key of a tablespace that needs one (`what` names it), or why there is
// none: the one wording of that refusal, wherever the need is found.
Result<innodb::AesKey> RequireKey(const PrepareCrypt* crypt, const innodb::CryptData& c,
                                  const std::string& what) {
  if (crypt == nullptr) {
    return Error(ErrorCode::kUnsupported,
                 what +
                     ", but backup-my.cnf names no file_key_management key file: give "
                     "--file-key-management-filename (xbak reads the keys of that plugin only); nothing was "
                     "written");
  }
  auto k = crypt->SpaceKey(c, 1);
  if (!k.ok()) return Error(k.status().code(), what + ": " + k.status().message() + "; nothing was written");
  return k;
}

Status RefuseEncryptedOlderPageCompressed(const std::string& where) {
  return Error(ErrorCode::kUnsupported,
               where +
                   ": an encrypted PAGE_COMPRESSED tablespace in the older page format "
                   "(innodb_checksum_algorithm other than full_crc32 when it was created): not supported "
                   "by xbak --prepare (use mariabackup --prepare for this backup); nothing was written");
}

// A wrong key or algorithm decrypts into garbage without an error: before
// anything is written, the first encrypted page among the first few of each
// encrypted tablespace is decrypted and must then be a valid plain page.
Status ProbeDecrypt(const util::File& f, const Space& s, const PrepareCrypt& crypt) {
  const size_t ps = s.flags.physical_size;
  std::vector<uint8_t> page(ps);
  for (uint32_t no = 1; no <= 8; no++) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(page.data(), ps, uint64_t{no} * ps));
    if (n < ps) return Status::Ok();
    if (!innodb::ClaimsEncryption(page.data(), s.flags, s.id, no) ||
        !innodb::CheckPage(page.data(), s.flags, no).encrypted) {
      continue;
    }
    Status st = DecryptForApply(s, no, page.data(), crypt.mode());
    if (!st.ok()) return Error(st.code(), st.message() + "; nothing was written");
    return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

std::optional<std::string> BackupRelName(const std::string& logged) {
  size_t last = logged.rfind('/');
  if (last == std::string::npos || last == 0) return std::nullopt;
  size_t prev = logged.rfind('/', last - 1);
  std::string rel = logged.substr(prev == std::string::npos ? 0 : prev + 1);
  if (rel.empty() || rel.find("..") != std::string::npos || rel[0] == '/' || rel.starts_with("./"))
    return std::nullopt;
  return rel;
}

std::string PageName(const Space& s, uint32_t page_no) {
  return s.rel + " page " + std::to_string(page_no) + " (tablespace " + std::to_string(s.id) + ")";
}

Result<SpaceFiles> OpenSpace(const std::string& dir, const Space& s) {
  std::vector<std::string> paths = {util::JoinPath(dir, s.rel)};
  for (const auto& m : s.more) paths.push_back(util::JoinPath(dir, m));
  return SpaceFiles::Open(paths);
}

Status RefuseCompression(const std::string& where, uint32_t algo) {
  return Error(ErrorCode::kUnsupported,
               where + ": PAGE_COMPRESSED with " + innodb::CompressionName(algo) +
                   " is not supported by this build of xbak --prepare (built without "
                   "its library); use mariabackup --prepare for this backup");
}

Status Catalog::Scan(const std::string& dir, uint32_t page_size, const std::vector<std::string>& system,
                     int parallel, ScanMode mode, const std::set<std::string>* only_tables) {
  XBAK_ASSIGN_OR_RETURN(const std::vector<std::string> candidates,
                        ListCandidates(dir, system, mode, only_tables));
  // Each file's page 0 is read and checked on `parallel` threads (tens of
  // thousands of tables); the catalog is then built in order. The pages are
  // asked of the disk ahead of the threads: one random read per thread at a
  // time left a cold disk idle (20,000 tables: 2-3 s of a restore, twice,
  // for the check of the backup and the catalog of its copy).
  std::vector<util::PrefetchRange> heads;
  heads.reserve(candidates.size());
  for (const std::string& rel : candidates) heads.push_back({util::JoinPath(dir, rel), page_size});
  util::Prefetcher ahead(std::move(heads));
  std::vector<std::optional<Space>> found(candidates.size());
  std::atomic<bool> cancel{false};
  XBAK_RETURN_IF_ERROR(util::RunParallel(
      candidates.size(), parallel,
      [&](size_t i) -> Status {
        XBAK_ASSIGN_OR_RETURN(found[i], ReadPage0(dir, candidates[i], page_size, mode != ScanMode::kBuild));
        return Status::Ok();
      },
      &cancel));
  if (mode == ScanMode::kCheck) return Status::Ok();
  for (size_t i = 0; i < candidates.size(); i++) {
    const std::string& rel = candidates[i];
    if (rel.ends_with(".new")) continue;  // checked only: the markers install it later
    if (!found[i]) {
      unidentified_.insert(rel);  // created during the backup: page 0 comes from the log
      continue;
    }
    XBAK_RETURN_IF_ERROR(Add(dir, system, rel, std::move(*found[i])));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> Catalog::ListCandidates(const std::string& dir,
                                                         const std::vector<std::string>& system,
                                                         ScanMode mode,
                                                         const std::set<std::string>* only_tables) {
  const bool check = mode != ScanMode::kBuild;
  XBAK_ASSIGN_OR_RETURN(auto top, util::ListDir(dir));
  std::vector<std::string> candidates;
  const std::set<std::string> further(system.begin() + (system.empty() ? 0 : 1), system.end());
  for (const auto& n : top) {
    if (further.count(n) != 0) continue;
    if ((!system.empty() && n == system.front()) || backupdir::IsUndoTablespaceName(n))
      candidates.push_back(n);
    if (!util::IsDirectory(util::JoinPath(dir, n))) continue;
    XBAK_ASSIGN_OR_RETURN(auto files, util::ListDir(util::JoinPath(dir, n)));
    for (const auto& f : files) {
      if (f.ends_with(".new") || f.ends_with(".ren") || f.ends_with(".del")) saw_ddl_markers_ = true;
      if (!(f.ends_with(".ibd") || (check && f.ends_with(".new")))) continue;
      if (mode == ScanMode::kCheck && only_tables && only_tables->count(n + "/" + f) == 0) continue;
      candidates.push_back(n + "/" + f);
    }
  }
  return candidates;
}

Result<std::optional<Space>> Catalog::ReadPage0(const std::string& dir, const std::string& rel,
                                                uint32_t page_size, bool check) const {
  const std::string path = util::JoinPath(dir, rel);
  // One page of innodb_page_size: what page 0 of an uncompressed
  // tablespace needs, and more than a ROW_FORMAT=COMPRESSED one's.
  std::vector<uint8_t> page(page_size);
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  f.AdviseRandom();
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(page.data(), page.size(), 0));
  if (!innodb::HasPage0(page.data(), n)) return std::optional<Space>();  // page 0 comes from the log
  auto h = innodb::ParseSpaceHeader(page.data(), n);
  if (!h.ok()) return h.status().With(path + " page 0");
  if (h->flags.logical_size != page_size) {
    return Error(ErrorCode::kCorrupt, path + ": page size " + std::to_string(h->flags.logical_size) +
                                          " differs from innodb_page_size " + std::to_string(page_size));
  }
  if (check && h->flags.page_compressed) XBAK_RETURN_IF_ERROR(CheckCompressedSpace(f, path, h->flags));
  Space s{h->space_id, rel, {}, h->flags, true, std::nullopt, std::nullopt};
  XBAK_RETURN_IF_ERROR(SetCrypt(s, innodb::ReadCryptData(page.data(), h->flags), path));
  if (check && s.key) XBAK_RETURN_IF_ERROR(ProbeDecrypt(f, s, *crypt_));
  return std::optional<Space>(std::move(s));
}

Status Catalog::Add(const std::string& dir, const std::vector<std::string>& system, const std::string& rel,
                    Space sp) {
  const bool sys = !system.empty() && rel == system.front();
  if (sys && sp.id != 0) {
    return Error(ErrorCode::kCorrupt,
                 util::JoinPath(dir, rel) + ": page 0 says tablespace " + std::to_string(sp.id));
  }
  auto [it, fresh] = spaces_.try_emplace(sp.id);
  if (!fresh) {
    return Error(ErrorCode::kCorrupt, "two files claim tablespace id " + std::to_string(sp.id) + ": " +
                                          it->second.rel + " and " + rel);
  }
  it->second = std::move(sp);
  if (!sys) return Status::Ok();
  for (auto m = system.begin() + 1; m != system.end(); ++m) {
    if (!util::PathExists(util::JoinPath(dir, *m))) {
      return Error(ErrorCode::kNotFound, util::JoinPath(dir, *m) +
                                             ": a file of the system tablespace (innodb_data_file_path in " +
                                             backupdir::kBackupCnfFile + ") is missing from the backup");
    }
  }
  it->second.more.assign(system.begin() + 1, system.end());
  return Status::Ok();
}

Status Catalog::Rebuild(const std::string& dir, uint32_t page_size, const std::vector<std::string>& system,
                        int parallel) {
  spaces_.clear();
  unidentified_.clear();
  saw_ddl_markers_ = false;
  return Scan(dir, page_size, system, parallel, ScanMode::kBuild);
}

void Catalog::AddDeferred(const std::string& dir, const FileNames& names,
                          const backupdir::TableFilter& filter) {
  for (const auto& [id, rel] : names.last_name) {
    if (spaces_.count(id) || names.deleted.count(id)) continue;
    if (!filter.TakesSpace(rel.ends_with(".ibd") ? rel.substr(0, rel.size() - 4) : rel)) {
      continue;  // a table the partial backup left out: its records are ignored
    }
    if (unidentified_.count(rel) || !util::PathExists(util::JoinPath(dir, rel))) {
      spaces_[id] = Space{id, rel, {}, {}, false, std::nullopt, std::nullopt};
    }
  }
}

Status DecryptForApply(const Space& s, uint32_t page_no, uint8_t* frame, innodb::CryptMode mode) {
  const uint32_t version = innodb::PageKeyVersion(frame, s.flags);
  // The catalog derived the key of version 1, the only one
  // file_key_management has; no other plugin's keys are read.
  if (!s.key || version != 1) {
    return Error(ErrorCode::kUnsupported,
                 PageName(s, page_no) + " is encrypted with key version " + std::to_string(version) +
                     (s.crypt ? " of key id " + std::to_string(s.crypt->key_id) : std::string()) +
                     (s.key ? ", which file_key_management never writes"
                            : ", but its tablespace has no crypt data or key that xbak could find"));
  }
  XBAK_RETURN_IF_ERROR(innodb::DecryptPage(frame, s.flags, s.id, *s.key, mode).With(PageName(s, page_no)));
  // Decrypted with a wrong key or algorithm, a page is garbage: never apply
  // the log to it. A PAGE_COMPRESSED page must decompress into a frame
  // whose trailer repeats its LSN (its checksum was just recomputed).
  const size_t ps = s.flags.physical_size;
  std::string why;
  const uint16_t type = util::LoadBE16(frame + innodb::kFilPageType);
  if (s.flags.full_crc32 && (type & innodb::kPageTypeFcrc32CompressedMarker)) {
    std::vector<uint8_t> plain(ps);
    auto d = innodb::DecompressPage(frame, s.flags, plain.data());
    if (!d.ok()) {
      why = d.status().message();
    } else if (std::memcmp(plain.data() + ps - innodb::kFilPageFcrc32EndLsn,
                           plain.data() + innodb::kFilPageLsn + 4, 4) != 0 ||
               util::LoadBE32(plain.data() + innodb::kFilPageOffset) != page_no) {
      why = "its decompressed frame is not a page " + std::to_string(page_no);
    }
  } else if (innodb::PageCheck c = innodb::CheckPage(frame, s.flags, page_no);
             c.verdict != innodb::PageVerdict::kOk) {
    why = c.detail;
  }
  if (!why.empty()) {
    return Error(
        ErrorCode::kInvalidArgument,
        PageName(s, page_no) + " does not decrypt into a valid page (" + why +
            "): wrong key file, or wrong file_key_management_encryption_algorithm (aes_cbc or aes_ctr)?");
  }
  return Status::Ok();
}

Status Catalog::SetCrypt(Space& s, std::optional<innodb::CryptData> page0, const std::string& where) const {
  s.crypt = std::move(page0);
  if (auto it = log_crypt_.find(s.id); it != log_crypt_.end()) s.crypt = it->second;
  if (!s.crypt) return Status::Ok();
  const bool may = s.crypt->MayEncrypt();
  if (may && s.flags.page_compressed && !s.flags.full_crc32) return RefuseEncryptedOlderPageCompressed(where);
  // The key is derived whenever there are crypt data, and needed unless
  // they say ENCRYPTED=NO: a tablespace the rotation threads were
  // decrypting (scheme 0 by the end) may still hold encrypted pages.
  if (crypt_ != nullptr) {
    if (auto k = crypt_->SpaceKey(*s.crypt, 1); k.ok()) {
      s.key = *k;
      return Status::Ok();
    }
  }
  if (!may && (crypt_ == nullptr || s.crypt->mode == 2)) return Status::Ok();
  return RequireKey(crypt_.get(), *s.crypt, where + ": encrypted tablespace (" + KeyId(*s.crypt) + ")")
      .status();
}

Status Catalog::Resolve(Space& s, const uint8_t* page0, size_t n, uint32_t page_size) {
  auto h = innodb::ParseSpaceHeader(page0, n);
  if (!h.ok()) return h.status().With("page 0 of " + s.rel + " as rebuilt from the redo log");
  if (h->flags.page_compressed && h->flags.full_crc32 &&
      !innodb::CompressionSupported(h->flags.compression_algo)) {
    return RefuseCompression(s.rel, h->flags.compression_algo);
  }
  if (h->flags.logical_size != page_size) {
    return Error(ErrorCode::kCorrupt, "page 0 of " + s.rel + " as rebuilt from the redo log has page size " +
                                          std::to_string(h->flags.logical_size));
  }
  s.flags = h->flags;
  XBAK_RETURN_IF_ERROR(
      SetCrypt(s, innodb::ReadCryptData(page0, h->flags), s.rel + " (created during the backup)"));
  s.flags_known = true;
  return Status::Ok();
}

Status Catalog::CheckLogSpaces(const std::map<uint32_t, uint32_t>& flags,
                               const std::vector<std::pair<std::string, innodb::CryptData>>& incoming) const {
  for (const auto& [id, raw] : flags) {
    auto f = innodb::DecodeSpaceFlags(raw);
    if (!f.ok() || !f->page_compressed) continue;
    const std::string where = "tablespace " + std::to_string(id) + " (created or changed during the backup)";
    if (f->full_crc32 && !innodb::CompressionSupported(f->compression_algo)) {
      return RefuseCompression(where, f->compression_algo);
    }
    if (auto c = log_crypt_.find(id); !f->full_crc32 && c != log_crypt_.end() && c->second.MayEncrypt()) {
      return RefuseEncryptedOlderPageCompressed(where);
    }
  }
  for (const auto& [id, c] : log_crypt_) {
    if (!c.MayEncrypt()) continue;
    XBAK_RETURN_IF_ERROR(RequireKey(crypt_.get(), c,
                                    "the server began encrypting tablespace " + std::to_string(id) +
                                        " during the backup (innodb_encrypt_tables with "
                                        "innodb_encryption_threads)")
                             .status());
  }
  for (const auto& [what, c] : incoming) {
    XBAK_RETURN_IF_ERROR(
        RequireKey(crypt_.get(), c, what + ": an encrypted tablespace (" + KeyId(c) + ")").status());
  }
  return Status::Ok();
}

}  // namespace xbak::prepare
