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
//   NAME/xbcloud.started    written first by put ("started <unix time>\n"):
//                           marks NAME as a backup while its put runs, so that
//                           list and expire see it (and leave it alone).
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
#include <utility>
#include <vector>

#include "xbak/backupdir/meta_names.h"
#include "xbak/storage/md5.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

inline constexpr std::string_view kManifestName = "xbcloud.manifest";
inline constexpr std::string_view kStartedName = "xbcloud.started";
inline constexpr std::string_view kMd5Suffix = ".md5";

// A backup name: one or more '/'-separated parts, none empty, "." or "..",
// no leading '/', printable ASCII without spaces. Names the option in errors.
Status CheckBackupName(std::string_view name);

std::string DataObjectKey(std::string_view name, std::string_view path, uint64_t seq);
std::string ManifestKey(std::string_view name);
std::string StartedKey(std::string_view name);
// The name of the backup whose manifest or started marker `key` is; empty
// when it is neither.
std::string MarkerOwner(std::string_view key);

// NAME/xbcloud.started, one "key value" line each (unknown lines ignored):
//   started <unix time>      when the put (the first one, if resumed) began
//   token <hex>              this put's, checked before the manifest is
//                            written: a put whose marker was replaced (by a
//                            second put of NAME) or removed (by a delete)
//                            fails instead of marking the backup complete
//   lock <mode> <unix time>  the S3 Object Lock the objects get
//   options <text>           the store's per-object options (encryption,
//                            storage class, lock): a resumed put keeps
//                            objects only when they were stored the same way
struct StartedMarker {
  int64_t started = 0;
  std::string token;
  std::string lock_mode;
  int64_t lock_until = 0;
  std::string options;
};
std::string EncodeStartedMarker(const StartedMarker& m);
StartedMarker ParseStartedMarker(std::string_view text);

// Delete and expire first replace a backup's manifest with a tombstone, in
// one PUT: from that moment get refuses the backup and list shows it as
// being deleted, whatever is cut after; the tombstone is removed last, so
// a deletion cut short is seen and finished by the next delete or expire.
std::string TombstoneText(int64_t unix_time);
bool IsTombstone(std::string_view manifest_text);

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

// What a put records of the backup beside its objects (version 3), so that
// `xbcloud list` learns a backup from the first bytes of its manifest alone.
struct ManifestSummary {
  int64_t started = 0;        // Unix time the put started
  int64_t finished = 0;       // and wrote the manifest
  uint64_t file_bytes = 0;    // bytes of the backup's files as extracted (the streams' payload)
  uint64_t stored_bytes = 0;  // bytes of its data objects in the store
  uint64_t objects = 0;       // its data objects
  // How its files are stored, from their names: "zstd", "lz4", "qpress",
  // "encrypted", joined by '+' ("zstd+encrypted"); empty: as they are.
  std::string encoding;
  // S3 Object Lock on every object of the backup: nothing may delete it
  // before lock_until (Unix time). Empty mode: none.
  std::string lock_mode;
  int64_t lock_until = 0;
  // The backup's small metadata files as the stream carried them (the
  // checkpoints, info and binlog_info files, under the names the backup
  // has: xtrabackup_* or mariadb_backup_*), by path.
  std::vector<std::pair<std::string, std::string>> files;
  const std::string* File(std::string_view path) const;
  // File() of `m` under either name; *name (when given): the one found.
  const std::string* Meta(backupdir::Meta m, std::string* name = nullptr) const;
};
// Files larger than this are not kept in the summary (xtrabackup_info, the
// largest, is about 1 KiB).
inline constexpr size_t kSummaryFileMax = 8 << 10;
// What list reads of each manifest first: the head of one put writes (the
// times and its three files at their limit, in hex: under 50 KiB) fits; a
// longer head is read whole.
inline constexpr size_t kManifestHeadMax = 64 << 10;

// Text format, one object per line, in key order:
//   xbcloud-manifest 2
//   pieces <piece bytes>
//   <md5 hex> <size> <seq> <piece md5s> <path>
//   end <number of entries>
// where <piece md5s> is the 32-hex-digit MD5 of every piece, one after the
// other without separator ("-" for an empty object). The trailing "end" line
// makes a truncated manifest detectable. Version 1 (no "pieces" line, no
// piece MD5s: "<md5 hex> <size> <seq> <path>") is still read. Version 3 is
// version 2 with a summary between the first line and the pieces line:
//   started <unix time>
//   finished <unix time>
//   file-bytes <bytes>
//   stored-bytes <bytes>
//   objects <count>
//   encoding <zstd+encrypted ...>      (only when the files are encoded)
//   lock <GOVERNANCE|COMPLIANCE> <unix time>   (only with S3 Object Lock)
//   file <path> <hex of its bytes>     (zero or more, at most 8)
// EncodeManifest writes version 3 when given a summary and every object has
// piece digests of one size (an empty object: piece_bytes set, no pieces),
// version 2 without a summary, else version 1.
std::string EncodeManifest(const std::vector<ManifestEntry>& entries,
                           const ManifestSummary* summary = nullptr);
// Parses untrusted bytes (an object read back from the store); every error is
// kCorrupt and names the line. Entries come back sorted by (path, seq), and
// the sequence numbers of each path must be 0, 1, 2, ... without gaps.
Result<std::vector<ManifestEntry>> ParseManifest(std::string_view text, ManifestSummary* summary = nullptr);

// The start of a manifest (at least its first kManifestHeadMax bytes, or all
// of it): its version, and a version 3's summary. `complete` is false when
// the text ends before the pieces line (read the whole manifest then).
struct ManifestHead {
  int version = 0;
  ManifestSummary summary;
  bool complete = false;
};
Result<ManifestHead> ParseManifestHead(std::string_view text);

}  // namespace xbak::cloud
