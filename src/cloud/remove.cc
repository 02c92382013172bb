#include "xbak/cloud/remove.h"

#include <algorithm>
#include <ctime>

#include "xbak/cloud/catalog_format.h"
#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

// Refuses a backup under an Object Lock that has not expired, from its
// manifest or (a put that did not finish) its started marker; a manifest
// that cannot be read is not taken as unlocked. True when the manifest is a
// tombstone already (a deletion cut short, being finished).
Result<bool> CheckDeletable(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& name,
                            bool has_manifest, const std::vector<std::string>& keys) {
  const std::string manifest = ManifestKey(name);
  bool finishing = false;
  std::string lock_mode;
  int64_t lock_until = 0;
  if (has_manifest) {
    auto text = GetSync(loop, store, manifest);
    if (!text.ok()) {
      return text.status().With("refusing to delete " + name +
                                " without reading its manifest (its Object "
                                "Lock, if any); nothing was deleted");
    }
    finishing = IsTombstone(*text);
    auto head = finishing ? Result<ManifestHead>(ManifestHead{}) : ParseManifestHead(*text);
    if (head.ok()) {
      lock_mode = head->summary.lock_mode;
      lock_until = head->summary.lock_until;
    }
  } else if (std::find(keys.begin(), keys.end(), StartedKey(name)) != keys.end()) {
    auto text = GetSync(loop, store, StartedKey(name));
    if (text.ok()) {
      StartedMarker m = ParseStartedMarker(*text);
      lock_mode = m.lock_mode;
      lock_until = m.lock_until;
    }
  }
  if (!lock_mode.empty() && lock_until > static_cast<int64_t>(::time(nullptr))) {
    return Error(ErrorCode::kInvalidArgument,
                 "backup " + name + " is under S3 Object Lock (" + lock_mode + ") until " +
                     UtcTime(lock_until) +
                     " UTC: nothing of it can be deleted before then; nothing was "
                     "deleted");
  }
  return finishing;
}

}  // namespace

Status CloudDelete(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& name,
                   uint64_t* deleted) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(name));
  const std::string prefix = name + "/";
  const std::string manifest = ManifestKey(name);
  std::vector<std::string> keys;
  bool has_manifest = false;
  XBAK_ASSIGN_OR_RETURN(auto listed, ListAllSync(loop, store, prefix));
  for (auto& o : listed) {
    std::string owner = MarkerOwner(o.key);
    if (!owner.empty() && owner != name) {
      return Error(ErrorCode::kInvalidArgument, "refusing to delete " + name + ": " + o.key +
                                                    " marks another backup (" + owner + ") inside it");
    }
    if (o.key == manifest) {
      has_manifest = true;
    } else {
      keys.push_back(std::move(o.key));
    }
  }
  if (keys.empty() && !has_manifest) {
    return Error(ErrorCode::kNotFound, "backup " + name + " not found in " + store.Describe());
  }
  XBAK_ASSIGN_OR_RETURN(bool finishing, CheckDeletable(loop, store, name, has_manifest, keys));
  if (!finishing) {
    XBAK_RETURN_IF_ERROR(PutSync(loop, store, manifest, TombstoneText(::time(nullptr)))
                             .With("replacing the manifest with a tombstone"));
  }
  constexpr size_t kBatch = 1000;  // the most one DeleteObjects request may name
  for (size_t i = 0; i < keys.size(); i += kBatch) {
    std::vector<std::string> batch(
        keys.begin() + static_cast<std::ptrdiff_t>(i),
        keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + kBatch)));
    XBAK_RETURN_IF_ERROR(DeleteSync(loop, store, batch).With("deleting objects of " + name));
    if (keys.size() > kBatch) {
      util::LogInfo("delete " + name + ": " + std::to_string(std::min(keys.size(), i + kBatch)) + " of " +
                    std::to_string(keys.size()) + " objects");
    }
  }
  XBAK_RETURN_IF_ERROR(DeleteSync(loop, store, {manifest}).With("deleting " + manifest));
  const uint64_t n = keys.size() + 1;
  if (deleted != nullptr) *deleted = n;
  util::LogInfo("delete " + name + ": removed " + std::to_string(n) + " objects" +
                (finishing      ? " (finishing a deletion cut short)"
                 : has_manifest ? ""
                                : " (it had no completion marker)"));
  return Status::Ok();
}

}  // namespace xbak::cloud
