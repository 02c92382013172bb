#include "xbak/backupdir/server.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "xbak/backupdir/metadata.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::backupdir {
namespace {

// The tested series, oldest first. Adding one here is the claim that the
// test suite runs against it (scripts/server-root.sh, XBAK_SERVER).
struct Series {
  Flavor flavor;
  unsigned major, minor;
};
constexpr Series kTested[] = {{Flavor::kMariaDB, 10, 11}, {Flavor::kMariaDB, 11, 8}};

std::string FlavorName(Flavor f) { return f == Flavor::kMariaDB ? "MariaDB" : "MySQL"; }

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return it != hay.end();
}

// The number at *p, which it moves past; false when there is none.
bool Number(std::string_view s, size_t* p, unsigned* out) {
  const char* b = s.data() + *p;
  auto [end, ec] = std::from_chars(b, s.data() + s.size(), *out);
  if (ec != std::errc() || end == b) return false;
  *p += static_cast<size_t>(end - b);
  return true;
}

bool Before(unsigned major, unsigned minor, unsigned m2, unsigned n2) {
  return major < m2 || (major == m2 && minor < n2);
}

}  // namespace

std::string ServerVersion::Series() const {
  return FlavorName(flavor) + " " + std::to_string(major) + "." + std::to_string(minor);
}

std::string ServerVersion::Name() const { return Series() + "." + std::to_string(patch); }

Result<ServerVersion> ParseServerVersion(std::string_view text, const std::string& origin,
                                         std::string_view comment) {
  ServerVersion v;
  std::string_view t = text;
  // MariaDB 10+ behind the protocol's "5.5.5-" prefix, which old clients needed.
  if (t.starts_with("5.5.5-")) t.remove_prefix(6);
  size_t p = 0;
  while (p < t.size() && !std::isdigit(static_cast<unsigned char>(t[p]))) p++;
  if (!Number(t, &p, &v.major) || p >= t.size() || t[p++] != '.' || !Number(t, &p, &v.minor) ||
      p >= t.size() || t[p++] != '.' || !Number(t, &p, &v.patch)) {
    return Error(ErrorCode::kCorrupt, origin + ": '" + std::string(text) + "' is not a server version");
  }
  v.flavor = ContainsNoCase(text, "mariadb") || ContainsNoCase(comment, "mariadb") ? Flavor::kMariaDB
                                                                                   : Flavor::kMySQL;
  return v;
}

ServerDescription Describe(const ServerVersion& v) {
  ServerDescription d;
  if (v.flavor == Flavor::kMySQL) {
    d.support = Support::kUnreadable;
    d.why = "xbak does not read MySQL's redo log and tablespaces yet (MariaDB only: " + TestedSeries() + ")";
    return d;
  }
  // mariadb-backup 11.1 renamed the metadata files (xtrabackup_* -> mariadb_backup_*).
  d.meta_scheme = Before(v.major, v.minor, 11, 1) ? MetaScheme::kXtrabackup : MetaScheme::kMariadbBackup;
  if (Before(v.major, v.minor, 10, 8)) {
    d.support = Support::kUnreadable;
    d.why = "its redo log format (before MariaDB 10.8) is not one xbak reads; use mariabackup " +
            std::to_string(v.major) + "." + std::to_string(v.minor);
    return d;
  }
  for (const Series& s : kTested) {
    if (s.flavor == v.flavor && s.major == v.major && s.minor == v.minor) {
      d.support = Support::kTested;
      return d;
    }
  }
  d.support = Support::kUntested;
  d.why = "xbak has not been tested against it (tested: " + TestedSeries() + ")";
  return d;
}

std::string TestedSeries() {
  std::string out;
  for (const Series& s : kTested) {
    if (!out.empty()) out += ", ";
    out += FlavorName(s.flavor) + " " + std::to_string(s.major) + "." + std::to_string(s.minor);
  }
  return out;
}

Status CheckServerVersion(const ServerVersion& v, bool no_version_check, const std::string& what) {
  const ServerDescription d = Describe(v);
  switch (d.support) {
    case Support::kTested:
      return Status::Ok();
    case Support::kUntested:
      if (no_version_check) {
        util::LogWarning(v.Name() + " (" + what + "): " + d.why +
                         "; going on as --no-server-version-check says");
        return Status::Ok();
      }
      return Error(ErrorCode::kUnsupported,
                   v.Name() + " (" + what + ") is refused: " + d.why +
                       ". Nothing was written. --no-server-version-check goes on at your own risk");
    case Support::kUnreadable:
      break;
  }
  return Error(ErrorCode::kUnsupported,
               v.Name() + " (" + what + ") is not supported: " + d.why + ". Nothing was written");
}

Status CheckRecordedServerVersion(std::string_view info, const std::string& origin, const std::string& what,
                                  bool no_version_check) {
  const std::string text = InfoField(info, "server_version");
  if (text.empty()) {
    util::LogWarning(origin + " does not name the server version the backup was made from; not checked");
    return Status::Ok();
  }
  auto v = ParseServerVersion(text, origin + ": server_version");
  if (!v.ok()) return no_version_check ? Status::Ok() : v.status();
  return CheckServerVersion(*v, no_version_check, what);
}

Status CheckBackupServerVersion(const std::string& dir, bool no_version_check) {
  const std::string path = MetaPath(dir, Meta::kInfo);
  auto info = util::ReadSmallFile(path);
  return CheckRecordedServerVersion(info.ok() ? *info : std::string(), path, "the backup in " + dir,
                                    no_version_check);
}

}  // namespace xbak::backupdir
