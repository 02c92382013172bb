// The servers xbak meets, each described once: which release series were
// tested, which cannot be read at all, and what differs between them that a
// layer must ask (the names of the metadata files their own backup tool
// writes). A rule that differs between versions has its home here, not in a
// version check in the layer that needs it.
//
// The version policy: a tested series is backed up, prepared and restored; a
// series nobody tested is refused by name (before anything is written) unless
// the user says --no-server-version-check, at their own risk; a series whose
// formats xbak does not read (MariaDB before 10.8, MySQL) is refused whatever
// the option says.
#pragma once

#include <string>
#include <string_view>

#include "xbak/backupdir/meta_names.h"
#include "xbak/util/status.h"

namespace xbak::backupdir {

enum class Flavor { kMariaDB, kMySQL };

struct ServerVersion {
  Flavor flavor = Flavor::kMariaDB;
  unsigned major = 0, minor = 0, patch = 0;

  std::string Series() const;  // "MariaDB 11.8"
  std::string Name() const;    // "MariaDB 11.8.9"
};

// "10.11.19-MariaDB-0+deb12u1-log", "5.5.5-10.11.19-MariaDB" (the protocol's
// prefix), "11.8.9-MariaDB-deb13", or MySQL's "9.7.4" / "8.0.36-28" (no
// "MariaDB" in it). `comment` is @@version_comment when there is one (it
// names MariaDB for builds whose version string does not). kCorrupt naming
// `origin` when no MAJOR.MINOR.PATCH is found.
Result<ServerVersion> ParseServerVersion(std::string_view text, const std::string& origin,
                                         std::string_view comment = {});

enum class Support {
  kTested,      // in the test suite: works
  kUntested,    // formats xbak reads, but nobody tested it: refused unless told
  kUnreadable,  // formats xbak does not read: always refused
};

struct ServerDescription {
  Support support = Support::kUntested;
  std::string why;  // for kUntested and kUnreadable: the reason, in a sentence
  // The metadata file names that server's own backup tool writes, which xbak
  // writes too so that the tool (and operators reading its names) finds them.
  MetaScheme meta_scheme = MetaScheme::kXtrabackup;
};

ServerDescription Describe(const ServerVersion& v);

// "MariaDB 10.11, MariaDB 11.8": the tested series, for --version and errors.
std::string TestedSeries();

// The policy for `what` ("the server at SOCKET", "the backup in DIR"): Ok for
// a tested series, and for an untested one when `no_version_check` (with a
// warning); otherwise kUnsupported naming the version, the reason and, where
// it helps, the option.
Status CheckServerVersion(const ServerVersion& v, bool no_version_check, const std::string& what);

// The policy applied to the server version a backup records: `info` is the
// text of its info file ("" when it has none), `origin` names that file (or
// the manifest it came from) in messages, `what` the backup. A backup that
// records no version (made by a tool that does not write it) passes with a
// warning: its redo log's format is still checked where it is read.
Status CheckRecordedServerVersion(std::string_view info, const std::string& origin, const std::string& what,
                                  bool no_version_check);
// The same for the backup in DIR (its info file under either name).
Status CheckBackupServerVersion(const std::string& dir, bool no_version_check);

}  // namespace xbak::backupdir
