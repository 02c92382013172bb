// How a backup is laid out in an object store (shared by put, get, delete).
//
// A backup NAME is every object under the prefix "NAME/":
//   NAME/<path>.<seq>       xbstream chunks of one backup file, <seq> a
//                           20-digit zero-padded counter from 0 (as Percona's
//                           xbcloud names them), so that the objects of a file
//                           sort in stream order. Concatenated in <seq> order
//                           they are a valid xbstream of that file, ending with
//                           its 'E' chunk.
//   NAME/<path>.<seq>.md5   the object's MD5, as md5sum prints it
//                           ("<32 hex>  <basename>\n"), so that anyone with a
//                           plain S3 client can check an object.
//   NAME/xbcloud.manifest   written last, only by a put that succeeded: the
//                           completion marker, and the list of the backup's
//                           objects with their sizes and MD5s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/storage/md5.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

inline constexpr std::string_view kManifestName = "xbcloud.manifest";
inline constexpr std::string_view kMd5Suffix = ".md5";

// A backup name: one or more '/'-separated parts, none empty, "." or "..",
// no leading '/', printable ASCII without spaces. Names the option in errors.
Status CheckBackupName(std::string_view name);

std::string DataObjectKey(std::string_view name, std::string_view path, uint64_t seq);
std::string ManifestKey(std::string_view name);

// Splits a key under "NAME/" into the file path and sequence number; false if
// the key is not a data object (a sidecar, the manifest, something else).
bool ParseDataObjectKey(std::string_view name, std::string_view key, std::string* path, uint64_t* seq);

// The content of a .md5 sidecar for `key`.
std::string Md5SidecarText(std::string_view key, const storage::Md5Digest& md5);
// Reads a sidecar (first 32 characters must be hex). kCorrupt otherwise.
Result<storage::Md5Digest> ParseMd5Sidecar(std::string_view text, std::string_view key);

struct ManifestEntry {
  std::string path;  // file path inside the backup
  uint64_t seq = 0;
  uint64_t size = 0;
  storage::Md5Digest md5{};
};

// Text format, one object per line, in key order:
//   xbcloud-manifest 1
//   <md5 hex> <size> <seq> <path>
//   end <number of entries>
// The trailing "end" line makes a truncated manifest detectable.
std::string EncodeManifest(const std::vector<ManifestEntry>& entries);
// Parses untrusted bytes (an object read back from the store); every error is
// kCorrupt and names the line. Entries come back sorted by (path, seq), and
// the sequence numbers of each path must be 0, 1, 2, ... without gaps.
Result<std::vector<ManifestEntry>> ParseManifest(std::string_view text);

}  // namespace xbak::cloud
