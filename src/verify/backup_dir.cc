#include "backup_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "xbak/backupdir/layout.h"
#include "xbak/sink/decrypt.h"
#include "xbak/util/file.h"
#include "xbak/util/options_file.h"

namespace xbak::verify {

void ListTree(const std::string& root, const std::string& rel, BackupDir* b, Reporter& r) {
  std::string path = rel.empty() ? root : util::JoinPath(root, rel);
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) {
    r.Add(path + ": cannot read the directory: " + std::strerror(errno));
    return;
  }
  std::vector<std::pair<std::string, unsigned char>> entries;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    entries.emplace_back(n, e->d_type);
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end());
  for (auto& [n, type] : entries) {
    std::string child = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::fstatat(AT_FDCWD, util::JoinPath(root, child).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      r.Add(util::JoinPath(root, child) + ": cannot stat: " + std::strerror(errno));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      ListTree(root, child, b, r);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      r.Add(util::JoinPath(root, child) + ": a symbolic link (a backup never holds one; not followed)");
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      r.Add(util::JoinPath(root, child) + ": not a regular file");
      continue;
    }
    FileEntry f;
    f.rel = child;
    f.base = child;
    f.size = static_cast<uint64_t>(st.st_size);
    if (f.base.ends_with(crypt::kEncryptedSuffix)) {
      f.encrypted = true;
      f.base.resize(f.base.size() - crypt::kEncryptedSuffix.size());
    }
    if (f.base.ends_with(".zst")) {
      f.algo = sink::CompressOptions::kZstd;
      f.base.resize(f.base.size() - 4);
    } else if (f.base.ends_with(".lz4")) {
      f.algo = sink::CompressOptions::kLz4;
      f.base.resize(f.base.size() - 4);
    }
    b->stored.push_back(child);
    b->stored_set.insert(child);
    if (b->files.count(f.base)) {
      r.Add(util::JoinPath(root, child) + ": " + f.base +
            " is stored twice (plain and compressed or encrypted, or as .zst and .lz4)");
      continue;
    }
    b->files[f.base] = std::move(f);
  }
}

namespace {

// The name metadata file `m` has in the backup, either scheme's; when it is
// missing, the name of the scheme its other metadata files have (for the
// message that says so).
std::string NameIn(const BackupDir& b, backupdir::Meta m) {
  using backupdir::MetaName, backupdir::MetaScheme;
  for (auto s : {MetaScheme::kMariadbBackup, MetaScheme::kXtrabackup}) {
    if (b.files.count(MetaName(m, s))) return MetaName(m, s);
  }
  for (auto other : {backupdir::Meta::kCheckpoints, backupdir::Meta::kInfo, backupdir::Meta::kBinlogInfo}) {
    if (b.files.count(MetaName(other, MetaScheme::kMariadbBackup)))
      return MetaName(m, MetaScheme::kMariadbBackup);
  }
  return MetaName(m, MetaScheme::kXtrabackup);
}

// A metadata file NAME of the backup: as it is, or NAME.xbenc decrypted in
// memory with the keys. *path: the one read (for messages).
Result<std::string> ReadMetaFile(const BackupDir& b, const std::string& name, const crypt::KeyRing* keys,
                                 std::string* path) {
  *path = util::JoinPath(b.dir, name);
  const std::string enc = util::JoinPath(b.dir, crypt::EncryptedName(name));
  if (util::PathExists(*path) || !util::PathExists(enc)) return util::ReadSmallFile(*path);
  *path = enc;
  if (keys == nullptr) {
    return Error(ErrorCode::kInvalidArgument,
                 "encrypted: --verify needs the backup's key (--encrypt-key-file)");
  }
  return sink::ReadEncryptedFile(enc, name, *keys);
}

// The checkpoints file at `path` is missing: with no metadata file at all (a
// backup killed early), either name may be the one missing.
std::string ShownMissing(const BackupDir& b, const std::string& path) {
  using backupdir::Meta, backupdir::MetaName, backupdir::MetaScheme;
  const bool scheme_unknown = path.ends_with(MetaName(Meta::kCheckpoints, MetaScheme::kXtrabackup)) &&
                              !b.files.count(MetaName(Meta::kInfo, MetaScheme::kXtrabackup));
  return scheme_unknown ? path + " (or " + MetaName(Meta::kCheckpoints, MetaScheme::kMariadbBackup) + ")"
                        : path;
}

}  // namespace

void ReadMetadata(BackupDir* b, const crypt::KeyRing* keys, Reporter& r) {
  std::string cp_path;
  auto text = ReadMetaFile(*b, NameIn(*b, backupdir::Meta::kCheckpoints), keys, &cp_path);
  if (!text.ok()) {
    r.Add(ShownMissing(*b, cp_path) + ": missing or unreadable (" + text.status().message() +
          "): the backup is incomplete (it is written last)");
  } else {
    auto c = backupdir::ParseCheckpoints(text.value(), cp_path);
    if (!c.ok()) {
      r.Add(cp_path + ": " + c.status().message());
    } else {
      b->has_checkpoints = true;
      b->cp = c.value();
      if (b->cp.last_lsn < b->cp.to_lsn) {
        r.Add(cp_path + ": last_lsn " + std::to_string(b->cp.last_lsn) + " is below to_lsn " +
              std::to_string(b->cp.to_lsn));
      }
      if (b->cp.backup_type == "full-backuped" && b->cp.from_lsn != 0) {
        r.Add(cp_path + ": a full backup with from_lsn " + std::to_string(b->cp.from_lsn) + " (must be 0)");
      }
      if (b->cp.to_lsn == 0) r.Add(cp_path + ": to_lsn is 0");
    }
  }
  std::string cnf_path;
  auto cnf_text = ReadMetaFile(*b, backupdir::kBackupCnfFile, keys, &cnf_path);
  if (!cnf_text.ok()) {
    r.Add(cnf_path + ": missing or unreadable (" + cnf_text.status().message() + ")");
  } else {
    auto m = util::ParseOptionText(cnf_text.value(), cnf_path, {"mysqld"});
    if (!m.ok()) {
      r.Add(cnf_path + ": " + m.status().message());
    } else {
      auto get = [&](const char* k) {
        auto it = m->find(k);
        return it == m->end() ? std::string() : it->second.value;
      };
      std::string ps = get("innodb-page-size");
      if (!ps.empty()) {
        unsigned long v = std::strtoul(ps.c_str(), nullptr, 10);
        if (v == 4096 || v == 8192 || v == 16384 || v == 32768 || v == 65536) {
          b->page_size = static_cast<uint32_t>(v);
        } else {
          r.Add(cnf_path + ": innodb_page_size=" + ps + " is not a page size InnoDB has");
        }
      }
      std::string dfp = get("innodb-data-file-path");
      if (!dfp.empty()) {
        auto files = backupdir::ParseDataFiles(dfp);
        if (files.ok()) {
          b->system_files.clear();
          for (const auto& f : *files) b->system_files.push_back(f.name);
          b->system_first_page = backupdir::FirstPages(*files, b->page_size);
        } else {
          r.Add(cnf_path + ": innodb_data_file_path: " + files.status().message());
        }
      }
      std::string undo = get("innodb-undo-tablespaces");
      if (!undo.empty() && undo.find_first_not_of("0123456789") == std::string::npos && undo.size() < 4) {
        b->undo_tablespaces = static_cast<uint32_t>(std::stoul(undo));
      }
    }
  }
  std::string info_path;
  auto info = ReadMetaFile(*b, NameIn(*b, backupdir::Meta::kInfo), keys, &info_path);
  if (!info.ok()) {
    r.Add(info_path + ": missing or unreadable (" + info.status().message() + ")");
  } else {
    size_t p = info->find("\nbinlog_pos = ");
    if (p != std::string::npos) {
      size_t e = info->find('\n', p + 1);
      std::string v = info->substr(p + 14, e == std::string::npos ? std::string::npos : e - p - 14);
      b->binlog_promised = !v.empty();
    }
  }
}

namespace {
std::string UndoName(uint32_t i) {
  char n[16];
  std::snprintf(n, sizeof n, "undo%03u", i);
  return n;
}
}  // namespace

void CheckPromised(const BackupDir& b, Reporter& r) {
  auto need = [&](const std::string& base, const std::string& why) {
    if (!b.files.count(base)) r.Add(Display(b, base) + ": missing (promised by " + why + ")");
  };
  need("ib_logfile0", "every backup");
  bool inc = IsIncremental(b);
  for (const auto& f : b.system_files) {
    if (inc) {
      need(f + ".delta", "innodb_data_file_path in backup-my.cnf");
      need(f + ".meta", "innodb_data_file_path in backup-my.cnf");
    } else {
      need(f, "innodb_data_file_path in backup-my.cnf");
    }
  }
  for (uint32_t i = 1; i <= b.undo_tablespaces; i++) {
    if (inc) {
      need(UndoName(i) + ".delta", "innodb_undo_tablespaces in backup-my.cnf");
    } else {
      need(UndoName(i), "innodb_undo_tablespaces in backup-my.cnf");
    }
  }
  if (b.binlog_promised) need(NameIn(b, backupdir::Meta::kBinlogInfo), "binlog_pos in the info file");
}

}  // namespace xbak::verify
