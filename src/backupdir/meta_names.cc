#include "xbak/backupdir/meta_names.h"

#include "xbak/util/file.h"

namespace xbak::backupdir {
namespace {

constexpr std::string_view kPrefix[] = {"xtrabackup_", "mariadb_backup_"};

std::string_view Suffix(Meta m) {
  switch (m) {
    case Meta::kCheckpoints:
      return "checkpoints";
    case Meta::kInfo:
      return "info";
    case Meta::kBinlogInfo:
      return "binlog_info";
    case Meta::kSlaveInfo:
      return "slave_info";
    case Meta::kGaleraInfo:
      return "galera_info";
  }
  return "";
}

bool Exists(const std::string& dir, Meta m, MetaScheme s, std::string_view suffix = {}) {
  return util::PathExists(util::JoinPath(dir, MetaName(m, s) + std::string(suffix)));
}

}  // namespace

std::string MetaName(Meta m, MetaScheme scheme) {
  return std::string(kPrefix[scheme == MetaScheme::kMariadbBackup ? 1 : 0]) + std::string(Suffix(m));
}

MetaScheme SchemeOf(const std::string& dir) {
  if (Exists(dir, Meta::kCheckpoints, MetaScheme::kMariadbBackup)) return MetaScheme::kMariadbBackup;
  if (Exists(dir, Meta::kCheckpoints, MetaScheme::kXtrabackup)) return MetaScheme::kXtrabackup;
  for (Meta m : {Meta::kInfo, Meta::kBinlogInfo, Meta::kSlaveInfo, Meta::kGaleraInfo}) {
    if (Exists(dir, m, MetaScheme::kMariadbBackup)) return MetaScheme::kMariadbBackup;
  }
  return MetaScheme::kXtrabackup;
}

std::string StoredMetaName(const std::string& dir, Meta m, std::string_view suffix) {
  for (MetaScheme s : {MetaScheme::kMariadbBackup, MetaScheme::kXtrabackup}) {
    if (Exists(dir, m, s, suffix)) return MetaName(m, s);
  }
  return "";
}

std::string MetaPath(const std::string& dir, Meta m) {
  const std::string stored = StoredMetaName(dir, m);
  return util::JoinPath(dir, stored.empty() ? MetaName(m, SchemeOf(dir)) : stored);
}

bool IsMeta(std::string_view rel, Meta m) {
  return rel == MetaName(m, MetaScheme::kXtrabackup) || rel == MetaName(m, MetaScheme::kMariadbBackup);
}

bool IsToolFile(std::string_view rel) { return rel.starts_with(kPrefix[0]) || rel.starts_with(kPrefix[1]); }

}  // namespace xbak::backupdir
