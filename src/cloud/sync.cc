#include "xbak/cloud/sync.h"

#include <optional>

namespace xbak::cloud {
namespace {

// Starts `op` with a callback that stores its outcome and stops the loop.
template <typename T, typename Op>
T RunOne(storage::EventLoop& loop, Op op) {
  std::optional<T> out;
  op([&](T r) {
    out.emplace(std::move(r));
    loop.Stop();
  });
  loop.Run();
  return std::move(*out);
}

}  // namespace

Result<storage::ListResult> ListSync(storage::EventLoop& loop, storage::ObjectStore& store,
                                     const std::string& prefix, const std::string& token, bool delimit) {
  return RunOne<Result<storage::ListResult>>(loop, [&](auto done) {
    store.List({prefix, token, delimit}, std::move(done));
  });
}

Result<std::vector<storage::ObjectInfo>> ListAllSync(storage::EventLoop& loop, storage::ObjectStore& store,
                                                     const std::string& prefix) {
  std::vector<storage::ObjectInfo> all;
  std::string token;
  do {
    XBAK_ASSIGN_OR_RETURN(auto page, ListSync(loop, store, prefix, token));
    for (auto& o : page.objects) all.push_back(std::move(o));
    token = page.next_token;
  } while (!token.empty());
  return all;
}

Result<std::string> GetSync(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& key) {
  return RunOne<Result<std::string>>(loop, [&](auto done) { store.Get(key, std::move(done)); });
}

Status PutSync(storage::EventLoop& loop, storage::ObjectStore& store, const std::string& key,
               const std::string& text) {
  auto body = std::make_shared<const std::string>(text);
  return RunOne<Status>(loop, [&](auto done) { store.Put(key, body, storage::Md5(*body), std::move(done)); });
}

Status DeleteSync(storage::EventLoop& loop, storage::ObjectStore& store,
                  const std::vector<std::string>& keys) {
  return RunOne<Status>(loop, [&](auto done) { store.Delete(keys, std::move(done)); });
}

}  // namespace xbak::cloud
