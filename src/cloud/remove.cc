#include "xbak/cloud/remove.h"

#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {

Status CloudDelete(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& name,
                   uint64_t* deleted) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(name));
  const std::string prefix = name + "/";
  const std::string marker = ManifestKey(name);
  std::vector<std::string> keys;
  bool has_marker = false;
  std::string token;
  do {
    XBAK_ASSIGN_OR_RETURN(auto page, ListSync(loop, store, prefix, token));
    for (auto& o : page.objects) {
      if (o.key == marker) {
        has_marker = true;
        continue;
      }
      if (o.key.ends_with("/" + std::string(kManifestName))) {
        return Error(ErrorCode::kInvalidArgument,
                     "refusing to delete " + name + ": " + o.key + " marks another backup (" +
                         o.key.substr(0, o.key.size() - kManifestName.size() - 1) + ") inside it");
      }
      keys.push_back(std::move(o.key));
    }
    token = page.next_token;
  } while (!token.empty());
  if (keys.empty() && !has_marker) {
    return Error(ErrorCode::kNotFound, "backup " + name + " not found in " + store.Describe());
  }
  if (has_marker) XBAK_RETURN_IF_ERROR(DeleteSync(loop, store, {marker}).With("deleting " + marker));
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
  if (deleted != nullptr) *deleted = keys.size() + (has_marker ? 1 : 0);
  util::LogInfo("delete " + name + ": removed " + std::to_string(keys.size() + (has_marker ? 1 : 0)) +
                " objects" + (has_marker ? "" : " (it had no completion marker)"));
  return Status::Ok();
}

}  // namespace xbak::cloud
