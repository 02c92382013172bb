#include "xbak/backupdir/metadata.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <sstream>

#include "xbak/backupdir/layout.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/options_file.h"

namespace xbak::backupdir {

std::string FormatCheckpoints(const Checkpoints& c) {
  std::ostringstream o;
  o << "backup_type = " << c.backup_type << "\nfrom_lsn = " << c.from_lsn << "\nto_lsn = " << c.to_lsn
    << "\nlast_lsn = " << c.last_lsn << "\nrecover_binlog_info = " << (c.recover_binlog_info ? 1 : 0) << "\n";
  return o.str();
}

namespace {
Result<uint64_t> ParseLsn(const util::OptionMap& m, const std::string& field, const std::string& origin) {
  std::string key = field;  // option keys are stored with '-' for '_'
  for (auto& ch : key) ch = ch == '_' ? '-' : ch;
  auto it = m.find(key);
  if (it == m.end()) return Error(ErrorCode::kCorrupt, origin + ": missing '" + field + "'");
  const std::string& v = it->second.value;
  if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos) {
    return Error(ErrorCode::kCorrupt, it->second.origin + ": '" + field + "' is not a number: '" + v + "'");
  }
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return Error(ErrorCode::kCorrupt, it->second.origin + ": '" + field + "' is out of range");
  return static_cast<uint64_t>(x);
}
}  // namespace

Result<std::string> ReadCheckpointsText(const std::string& dir) {
  auto text = util::ReadSmallFile(MetaPath(dir, Meta::kCheckpoints));
  if (!text.ok()) {
    return Error(ErrorCode::kInvalidArgument, dir + " is not a complete backup (no readable " +
                                                  MetaName(Meta::kCheckpoints, MetaScheme::kXtrabackup) +
                                                  " or " +
                                                  MetaName(Meta::kCheckpoints, MetaScheme::kMariadbBackup) +
                                                  "): " + text.status().message());
  }
  return text;
}

Result<Checkpoints> ReadCheckpoints(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(std::string text, ReadCheckpointsText(dir));
  return ParseCheckpoints(text, MetaPath(dir, Meta::kCheckpoints));
}

Result<uint64_t> IncrementalBaseLsn(const std::string& basedir) {
  auto c = ReadCheckpoints(basedir);
  if (!c.ok()) return c.status().With("--incremental-basedir");
  return c->to_lsn;
}

Status CheckChainLink(const Checkpoints& prev, const std::string& prev_dir, const Checkpoints& next,
                      const std::string& next_dir) {
  if (next.from_lsn == prev.to_lsn) return Status::Ok();
  return Error(ErrorCode::kInvalidArgument,
               prev.to_lsn < next.from_lsn
                   ? "gap in the chain: " + prev_dir + " ends at LSN " + std::to_string(prev.to_lsn) +
                         " but " + next_dir + " starts at LSN " + std::to_string(next.from_lsn) +
                         " (an incremental is missing)"
                   : "wrong order: " + next_dir + " starts at LSN " + std::to_string(next.from_lsn) +
                         " but " + prev_dir + " is already at LSN " + std::to_string(prev.to_lsn) +
                         " (already applied, an older incremental, or one given twice)");
}

Result<Checkpoints> ParseCheckpoints(const std::string& text, const std::string& origin) {
  // The file has no [group]; parse it as the body of one.
  XBAK_ASSIGN_OR_RETURN(util::OptionMap m, util::ParseOptionText("[x]\n" + text, origin, {"x"}));
  Checkpoints c;
  auto t = m.find("backup-type");
  if (t == m.end()) return Error(ErrorCode::kCorrupt, origin + ": missing 'backup_type'");
  c.backup_type = t->second.value;
  if (c.backup_type != "full-backuped" && c.backup_type != "incremental" && c.backup_type != "log-applied" &&
      c.backup_type != "full-prepared") {
    return Error(ErrorCode::kCorrupt, origin + ": unknown backup_type '" + c.backup_type + "'");
  }
  XBAK_ASSIGN_OR_RETURN(c.from_lsn, ParseLsn(m, "from_lsn", origin));
  XBAK_ASSIGN_OR_RETURN(c.to_lsn, ParseLsn(m, "to_lsn", origin));
  XBAK_ASSIGN_OR_RETURN(c.last_lsn, ParseLsn(m, "last_lsn", origin));
  auto r = m.find("recover-binlog-info");
  c.recover_binlog_info = r != m.end() && r->second.value == "1";
  if (c.to_lsn < c.from_lsn) {
    return Error(ErrorCode::kCorrupt, origin + ": to_lsn " + std::to_string(c.to_lsn) +
                                          " is below from_lsn " + std::to_string(c.from_lsn));
  }
  return c;
}

std::string FormatBinlogInfo(const BinlogPosition& b) {
  // mariabackup always writes the third column on MariaDB (gtid_current_pos
  // exists there), even when it is empty.
  return b.file + "\t" + std::to_string(b.position) + "\t" + b.gtid + "\n";
}

Result<BinlogPosition> ParseBinlogInfo(std::string_view text, const std::string& origin) {
  BinlogPosition b;
  const std::string_view line = text.substr(0, text.find('\n'));
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return b;
  const size_t t1 = line.find('\t');
  const size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
  const std::string_view pos = line.substr(t1 + 1, t2 == std::string_view::npos ? t2 : t2 - t1 - 1);
  auto bad = [&] {
    return Error(ErrorCode::kCorrupt, origin + ": not a binlog position (FILE<tab>POSITION<tab>GTID): '" +
                                          std::string(line.substr(0, 200)) + "'");
  };
  if (t1 == 0 || t1 == std::string_view::npos || pos.empty() || pos.size() > 19 ||
      pos.find_first_not_of("0123456789") != std::string_view::npos)
    return bad();
  b.file = std::string(line.substr(0, t1));
  b.position = std::stoull(std::string(pos));
  if (t2 != std::string_view::npos) {
    std::string_view g = line.substr(t2 + 1);
    while (!g.empty() && (g.back() == '\r' || g.back() == ' ')) g.remove_suffix(1);
    b.gtid = std::string(g);
  }
  return b;
}

std::string FormatBinlogPos(const BinlogPosition& b) {
  if (b.file.empty()) return "";
  return "filename '" + b.file + "', position '" + std::to_string(b.position) +
         "', GTID of the last change '" + b.gtid + "'";
}

std::string FormatInfo(const BackupInfo& i) {
  std::ostringstream o;
  o << "uuid = " << i.uuid << "\nname = " << i.name << "\ntool_name = " << i.tool_name
    << "\ntool_command = " << i.tool_command << "\ntool_version = " << i.tool_version
    << "\nibbackup_version = " << i.tool_version << "\nserver_version = " << i.server_version
    << "\nstart_time = " << i.start_time << "\nend_time = " << i.end_time << "\nlock_time = " << i.lock_time_s
    << "\nbinlog_pos = " << FormatBinlogPos(i.binlog);
  o << "\ninnodb_from_lsn = " << i.from_lsn << "\ninnodb_to_lsn = " << i.to_lsn
    << "\npartial = " << (i.partial ? "Y" : "N") << "\nincremental = " << (i.incremental ? "Y" : "N")
    << "\nformat = " << i.format << "\ncompressed = " << (i.compressed ? "compressed" : "N") << "\n";
  if (i.no_lock) o << "backup_locks = none\n";
  return o.str();
}

std::string InfoField(std::string_view info, std::string_view field) {
  const std::string key = std::string(field) + " = ";
  size_t p = info.rfind("\n" + key);
  if (p != std::string_view::npos) {
    p += 1;
  } else if (info.starts_with(key)) {
    p = 0;
  } else {
    return "";
  }
  p += key.size();
  return std::string(info.substr(p, info.find('\n', p) - p));
}

std::string InfoServerVersion(const std::string& dir) {
  auto info = util::ReadSmallFile(MetaPath(dir, Meta::kInfo));
  if (!info.ok()) return "";
  return InfoField(*info, "server_version");
}

std::string FormatBackupCnf(const ServerSettings& s) {
  std::ostringstream o;
  o << "# This options file was generated by innobackupex.\n\n# The server\n[mysqld]\n"
    << "innodb_checksum_algorithm=" << s.checksum_algorithm << "\n"
    << "innodb_data_file_path=" << s.data_file_path << "\n"
    << "innodb_log_file_size=" << s.log_file_size << "\n"
    << "innodb_page_size=" << s.page_size << "\n"
    << "innodb_undo_directory=./\n"
    << "innodb_undo_tablespaces=" << s.undo_tablespaces << "\n"
    << "innodb_compression_level=" << s.compression_level << "\n"
    << "\n";  // mariabackup's empty buffer-pool-filename line
  if (!s.plugin_load.empty()) {
    o << "plugin_dir=\"" << s.plugin_dir << "\"\nplugin_load=" << s.plugin_load << "\n";
  }
  for (const auto& [k, v] : s.plugin_options) o << k << "=" << v << "\n";
  o << "\n";
  return o.str();
}

std::string NewUuid() {
  std::random_device rd;  // /dev/urandom on Linux
  uint8_t b[16];
  for (int i = 0; i < 16; i += 4) {
    uint32_t r = rd();
    for (int k = 0; k < 4; k++) b[i + k] = static_cast<uint8_t>(r >> (8 * k));
  }
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

std::string NowString() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

Result<BackupCnf> ReadBackupCnf(const std::string& dir) {
  const std::string path = util::JoinPath(dir, kBackupCnfFile);
  XBAK_ASSIGN_OR_RETURN(auto m, util::ReadOptionFile(path, {"mysqld"}));
  BackupCnf c;
  if (auto it = m.find("innodb-page-size"); it != m.end()) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(it->second.value.c_str(), &end, 10);
    if (end == it->second.value.c_str() || *end != '\0' || v < 4096 || v > 65536 || (v & (v - 1)) != 0) {
      return Error(ErrorCode::kCorrupt, path + ": bad innodb_page_size '" + it->second.value + "'");
    }
    c.page_size = static_cast<uint32_t>(v);
  }
  if (auto it = m.find("innodb-data-file-path"); it != m.end()) {
    auto files = ParseDataFiles(it->second.value);
    if (!files.ok()) return files.status().With(path);
    // The backup holds each file under its own name, whatever directory the
    // server kept it in.
    c.system_files.clear();
    for (auto& f : *files) {
      c.system_files.push_back(
          f.name.substr(f.name.rfind('/') == std::string::npos ? 0 : f.name.rfind('/') + 1));
    }
    c.system_first_page = FirstPages(*files, c.page_size);
  }
  if (auto it = m.find("innodb-compression-level"); it != m.end()) {
    char* end = nullptr;
    const long v = std::strtol(it->second.value.c_str(), &end, 10);
    if (end == it->second.value.c_str() || *end != '\0' || v < 0 || v > 9) {
      return Error(ErrorCode::kCorrupt, path + ": bad innodb_compression_level '" + it->second.value + "'");
    }
    c.compression_level = static_cast<int>(v);
  }
  if (auto it = m.find("innodb-undo-tablespaces"); it != m.end()) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(it->second.value.c_str(), &end, 10);
    if (end == it->second.value.c_str() || *end != '\0' || v > 127) {
      return Error(ErrorCode::kCorrupt, path + ": bad innodb_undo_tablespaces '" + it->second.value + "'");
    }
    c.undo_tablespaces = static_cast<uint32_t>(v);
  }
  return c;
}

Result<uint32_t> BackupPageSize(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(BackupCnf c, ReadBackupCnf(dir));
  return c.page_size;
}

Status PrepareExtraLsnDir(const std::string& dir) {
  XBAK_RETURN_IF_ERROR(util::MakeDirs(dir).With("--extra-lsndir"));
  const std::string probe = util::JoinPath(dir, ".xbak-extra-lsndir-probe");
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(probe, "").With("--extra-lsndir: cannot write there"));
  ::unlink(probe.c_str());
  return Status::Ok();
}

Status WriteExtraLsnDir(const std::string& dir, MetaScheme scheme, const std::string& checkpoints,
                        const std::string& info) {
  // The other scheme's files of an earlier backup would be read first.
  const MetaScheme other =
      scheme == MetaScheme::kXtrabackup ? MetaScheme::kMariadbBackup : MetaScheme::kXtrabackup;
  for (Meta m : {Meta::kCheckpoints, Meta::kInfo}) ::unlink(util::JoinPath(dir, MetaName(m, other)).c_str());
  XBAK_RETURN_IF_ERROR(util::WriteFileAtomic(util::JoinPath(dir, MetaName(Meta::kInfo, scheme)), info));
  XBAK_RETURN_IF_ERROR(
      util::WriteFileAtomic(util::JoinPath(dir, MetaName(Meta::kCheckpoints, scheme)), checkpoints));
  XBAK_RETURN_IF_ERROR(util::SyncDir(dir));
  util::LogInfo("wrote " + MetaName(Meta::kCheckpoints, scheme) + " and " + MetaName(Meta::kInfo, scheme) +
                " to " + dir + " (--extra-lsndir)");
  return Status::Ok();
}

}  // namespace xbak::backupdir
