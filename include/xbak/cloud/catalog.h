// What a store holds under a prefix, as backups and chains: the data of
// `xbcloud list` and `xbcloud expire`.
//
// Found without listing every object: the bucket is walked as a tree of
// '/'-separated levels (a listing by prefix, ListQuery::delimit), and a level
// that holds a backup's marker (layout.h: manifest or tombstone, started) is
// that backup: the walk goes no deeper. Each level below the first is asked
// for its manifest's head first (ObjectStore::GetFirst: the put's summary,
// version 3), which tells at once that it is a complete backup and what
// list shows of it; only a level without one is listed. Requests: one GET
// per complete backup, a listing page per other level (and per 1,000
// entries), `parallel` in flight; never a request per object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/cloud/layout.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

enum class BackupState {
  kComplete,    // its manifest is there (put finished)
  kIncomplete,  // put started and has not finished: under way, or killed
  kDeleting,    // delete or expire started on it and has not finished
};
const char* BackupStateName(BackupState s);  // "complete", "incomplete", "deleting"

struct BackupRecord {
  std::string name;
  BackupState state = BackupState::kIncomplete;
  int manifest_version = 0;  // 0: no manifest
  ManifestSummary summary;   // a version 3 manifest's (else empty)
  // From the summary's xtrabackup_checkpoints; nullopt when the manifest has
  // no summary (an older xbcloud) or the file was not in the clear.
  std::optional<backupdir::Checkpoints> checkpoints;
  std::string start_time, end_time;  // xtrabackup_info's (server's local time)
  int64_t last_modified = 0;         // newest object at its level (Unix time; 0 unknown)
  std::string problem;               // why its manifest could not be read ("" none)
  // Set by LinkChains:
  std::string base;           // an incremental's base backup ("" for a full or when unknown)
  bool base_missing = false;  // an incremental whose base is not in the catalog

  bool locked(int64_t now) const { return !summary.lock_mode.empty() && summary.lock_until > now; }
  bool full() const;
  bool incremental() const;
  // Chain known: a complete backup whose checkpoints were read.
  bool known() const { return state == BackupState::kComplete && checkpoints.has_value() && problem.empty(); }
  // The catalog's order: by the second its put started, then by name (a
  // strict order, also among puts of the same second). ReadCatalog sorts by
  // it, and an incremental's base comes before it (LinkChains).
  auto order() const { return std::tie(summary.started, name); }
};

struct Catalog {
  std::vector<BackupRecord> backups;  // by start of put (then name); unknown starts first
  uint64_t foreign_objects = 0;       // objects outside every backup
  uint64_t requests = 0;
};

struct CatalogOptions {
  std::string prefix;  // "" the whole bucket, else backups named PREFIX/...
  int parallel = 16;
};

Result<Catalog> ReadCatalog(storage::EventLoop& loop, storage::ObjectStore& store,
                            const CatalogOptions& options);

// The group a backup belongs to: its name up to the last '/' ("host1" of
// "host1/2026-11-26"; "" for a name without one). Chains are linked, and
// expire's policy applied, within a group: one host's backups never serve
// as another's base, nor count toward its retention.
std::string BackupGroup(const std::string& name);

// Sets each incremental's base: of the complete backups of its group that
// end at the LSN where it starts (to_lsn = its from_lsn) and come before it
// in the catalog's order (put started earlier; in the same second, a smaller
// name), the last. Never a cycle, even where an idle server's backups all end
// at one checkpoint LSN. An incremental without one has base_missing set.
void LinkChains(std::vector<BackupRecord>* backups);

// The names of `name`'s chain: the backup and, transitively, every backup
// whose base it is (after LinkChains), in order of start.
std::vector<std::string> ChainOf(const std::vector<BackupRecord>& backups, const std::string& name);

}  // namespace xbak::cloud
