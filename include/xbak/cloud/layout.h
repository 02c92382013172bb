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
//                           objects with their sizes and MD5s, and the MD5 of
//                           each 1 MiB piece of every object (so that get can
//                           check and write an object piece by piece instead
//                           of holding all of it until its last byte is
//                           hashed).
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

// The size of the pieces put digests (see ObjectDigests).
inline constexpr uint64_t kDigestPieceBytes = uint64_t{1} << 20;

struct ManifestEntry {
  std::string path;  // file path inside the backup
  uint64_t seq = 0;
  uint64_t size = 0;
  storage::Md5Digest md5{};
  // The MD5 of each piece of piece_bytes (the last one shorter) of the
  // object, in order; piece_bytes 0 and none when the manifest has none
  // (version 1, written before they were added). An empty object has none.
  uint64_t piece_bytes = 0;
  std::vector<storage::Md5Digest> pieces;
};

// The digests put records of one object: its MD5 (the sidecar, Content-MD5)
// and its pieces' MD5s (the manifest).
struct ObjectDigests {
  storage::Md5Digest md5{};
  std::vector<storage::Md5Digest> pieces;
};
// Both in one pass: the pieces share the vector lanes with the whole
// object's MD5 (storage/md5_multi.h), so they cost next to nothing where
// lanes exist. piece_bytes > 0.
ObjectDigests DigestObject(std::string_view body, uint64_t piece_bytes);
// How many pieces of piece_bytes an object of `size` bytes has.
uint64_t PieceCount(uint64_t size, uint64_t piece_bytes);

// Text format, one object per line, in key order:
//   xbcloud-manifest 2
//   pieces <piece bytes>
//   <md5 hex> <size> <seq> <piece md5s> <path>
//   end <number of entries>
// where <piece md5s> is the 32-hex-digit MD5 of every piece, one after the
// other without separator ("-" for an empty object). The trailing "end" line
// makes a truncated manifest detectable. Version 1 (no "pieces" line, no
// piece MD5s: "<md5 hex> <size> <seq> <path>") is still read. EncodeManifest
// writes version 2 when every object has piece digests of one size (an empty
// object: piece_bytes set, no pieces), else version 1.
std::string EncodeManifest(const std::vector<ManifestEntry>& entries);
// Parses untrusted bytes (an object read back from the store); every error is
// kCorrupt and names the line. Entries come back sorted by (path, seq), and
// the sequence numbers of each path must be 0, 1, 2, ... without gaps.
Result<std::vector<ManifestEntry>> ParseManifest(std::string_view text);

}  // namespace xbak::cloud
