// How a put begins: NAME checked (free, or an interrupted put's leftovers
// to resume), its started marker written.
#include "put_start.h"

#include <cstdio>
#include <ctime>
#include <random>

#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

// A put's token in its started marker: 64 random bits.
std::string NewToken() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(v));
  return out;
}

// What is stored under NAME/: nothing for a new backup; the leftovers of an
// interrupted put (no manifest) to resume; a complete backup or one being
// deleted is refused.
Result<std::map<std::string, storage::ObjectInfo>> StoredObjects(storage::EventLoop& loop,
                                                                 storage::ObjectStore& store,
                                                                 const std::string& name) {
  // A backup inside another would hide from list (which stops at a backup)
  // and be deleted with it.
  for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    const std::string outer = name.substr(0, slash);
    XBAK_ASSIGN_OR_RETURN(auto page, ListSync(loop, store, outer + "/xbcloud.", ""));
    for (const auto& o : page.objects) {
      if (MarkerOwner(o.key) == outer) {
        return Error(ErrorCode::kAlreadyExists,
                     "backup " + name + " would be inside backup " + outer + ": choose another name");
      }
    }
  }
  std::map<std::string, storage::ObjectInfo> stored;
  XBAK_ASSIGN_OR_RETURN(auto listed, ListAllSync(loop, store, name + "/"));
  for (auto& o : listed) {
    const std::string owner = MarkerOwner(o.key);
    if (o.key == ManifestKey(name)) {
      auto text = GetSync(loop, store, o.key);
      if (text.ok() && IsTombstone(*text)) {
        return Error(ErrorCode::kAlreadyExists,
                     "backup " + name + " is being deleted in " + store.Describe() +
                         " (its deletion was cut short?): finish it with xbcloud delete " + name);
      }
      return Error(ErrorCode::kAlreadyExists, "backup " + name + " already exists in " + store.Describe() +
                                                  ": choose another name or remove it with xbcloud delete");
    }
    if (!owner.empty() && owner != name) {
      return Error(ErrorCode::kAlreadyExists,
                   "backup " + name + " would hold another backup (" + owner + "): choose another name");
    }
    stored.emplace(o.key, std::move(o));
  }
  return stored;
}

}  // namespace

Result<PutStart> BeginPut(storage::EventLoop& loop, storage::ObjectStore& store, const PutOptions& options) {
  PutStart out;
  XBAK_ASSIGN_OR_RETURN(out.stored, StoredObjects(loop, store, options.name));
  out.marker = {options.started_unix != 0 ? options.started_unix : static_cast<int64_t>(::time(nullptr)),
                NewToken(), options.lock_mode, options.lock_until, store.ObjectOptions()};
  if (!out.stored.empty()) {
    StartedMarker old;
    if (out.stored.count(StartedKey(options.name))) {
      XBAK_ASSIGN_OR_RETURN(std::string text, GetSync(loop, store, StartedKey(options.name)));
      old = ParseStartedMarker(text);
    }
    if (old.started > 0 && options.started_unix == 0) out.marker.started = old.started;
    out.trust_stored = old.options == out.marker.options;
    util::LogInfo("put " + options.name + ": resuming an interrupted put (" +
                  std::to_string(out.stored.size()) + " objects stored): " +
                  (out.trust_stored ? "objects stored with the same bytes are not sent again"
                                    : "they were stored with other options (" +
                                          (old.options.empty() ? std::string("none") : old.options) +
                                          "): every object is sent again"));
  }
  // Always ours: the token proves, before the manifest, that NAME still is.
  XBAK_RETURN_IF_ERROR(PutSync(loop, store, StartedKey(options.name), EncodeStartedMarker(out.marker))
                           .With("writing the started marker"));
  return out;
}

}  // namespace xbak::cloud
