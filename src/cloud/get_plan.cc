#include "get_plan.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "xbak/backupdir/meta_names.h"
#include "xbak/cloud/sync.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

// Lists a backup that has no manifest: its data objects, MD5s to be read
// from their sidecars. Each file is cut at its first object that is missing
// or has no sidecar (an interrupted put leaves such gaps): what follows could
// not be placed in order, nor verified.
Result<std::vector<ManifestEntry>> ListObjects(storage::EventLoop& loop, storage::ObjectStore& store,
                                               const std::string& name) {
  std::vector<ManifestEntry> found;
  std::set<std::string> sidecars;
  XBAK_ASSIGN_OR_RETURN(auto listed, ListAllSync(loop, store, name + "/"));
  for (const auto& o : listed) {
    ManifestEntry e;
    if (ParseDataObjectKey(name, o.key, &e.path, &e.seq)) {
      e.size = o.size;
      found.push_back(std::move(e));
    } else if (o.key.ends_with(kMd5Suffix)) {
      sidecars.insert(o.key.substr(0, o.key.size() - kMd5Suffix.size()));
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return std::tie(a.path, a.seq) < std::tie(b.path, b.seq); });
  std::vector<ManifestEntry> entries;
  for (size_t i = 0; i < found.size(); i++) {
    const ManifestEntry& e = found[i];
    bool continues =
        e.seq == 0 || (!entries.empty() && entries.back().path == e.path && entries.back().seq + 1 == e.seq);
    if (!continues) continue;
    if (!sidecars.count(DataObjectKey(name, e.path, e.seq))) {
      util::LogWarning("object " + DataObjectKey(name, e.path, e.seq) + " has no md5 sidecar: " + e.path +
                       " is cut there");
      continue;
    }
    entries.push_back(e);
  }
  return entries;
}

// The manifest says the backup is complete and what it holds; without one
// (allow_incomplete) the listing does, and the MD5s come from sidecars.
Result<std::vector<ManifestEntry>> ReadEntries(storage::EventLoop& loop, storage::ObjectStore& store,
                                               const GetOptions& options, bool* md5_known) {
  *md5_known = true;
  auto manifest = GetSync(loop, store, ManifestKey(options.name));
  if (manifest.ok()) {
    if (IsTombstone(*manifest)) {
      return Error(ErrorCode::kNotFound, "backup " + options.name + " in " + store.Describe() +
                                             " is being deleted (or its deletion was cut short)");
    }
    auto parsed = ParseManifest(*manifest);
    if (!parsed.ok()) return parsed.status().With(ManifestKey(options.name) + " in " + store.Describe());
    return std::move(parsed.value());
  }
  if (manifest.status().code() != ErrorCode::kNotFound) return manifest.status();
  XBAK_ASSIGN_OR_RETURN(auto entries, ListObjects(loop, store, options.name));
  if (entries.empty()) {
    return Error(ErrorCode::kNotFound, "backup " + options.name + " not found in " + store.Describe());
  }
  if (!options.allow_incomplete) {
    return Error(ErrorCode::kCorrupt, "backup " + options.name + " in " + store.Describe() +
                                          " is incomplete: it has no completion marker (" +
                                          ManifestKey(options.name) +
                                          "), so its put did not finish; --allow-incomplete reads it anyway");
  }
  util::LogWarning("backup " + options.name + " has no completion marker; reading the " +
                   std::to_string(entries.size()) + " objects it has (--allow-incomplete)");
  *md5_known = false;
  return entries;
}

}  // namespace

Result<GetPlan> PlanGet(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options,
                        size_t outputs) {
  bool md5_known = true;
  XBAK_ASSIGN_OR_RETURN(auto entries, ReadEntries(loop, store, options, &md5_known));
  if (!options.files.empty()) {
    std::set<std::string> wanted(options.files.begin(), options.files.end());
    std::set<std::string> present;
    for (const auto& e : entries) present.insert(e.path);
    for (const auto& f : wanted) {
      if (!present.count(f))
        return Error(ErrorCode::kNotFound, "file " + f + " is not in backup " + options.name);
    }
    std::erase_if(entries, [&](const ManifestEntry& e) { return !wanted.count(e.path); });
  }
  // The checkpoints file, whose presence says a backup is complete, comes
  // last, whatever its name sorts after: a get cut short must not leave an
  // extraction that looks whole.
  auto is_checkpoints = [](const ManifestEntry& e) {
    return backupdir::IsMeta(e.path, backupdir::Meta::kCheckpoints);
  };
  std::stable_partition(entries.begin(), entries.end(),
                        [&](const ManifestEntry& e) { return !is_checkpoints(e); });

  // Files to outputs: each file on one output, outputs balanced by bytes.
  GetPlan plan;
  std::vector<std::vector<Object>> per_output(outputs);
  std::vector<uint64_t> load(outputs, 0);
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    uint64_t bytes = 0;
    while (j < entries.size() && entries[j].path == entries[i].path) bytes += entries[j++].size;
    size_t out = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[out] += bytes;
    for (; i < j; i++) {
      per_output[out].push_back({entries[i], md5_known, out, per_output[out].size()});
    }
    plan.files++;
  }
  // One global download order that takes from every output in turn, so that
  // every writer has work and the window always holds the oldest objects.
  plan.order.reserve(entries.size());
  for (size_t k = 0;; k++) {
    bool any = false;
    for (auto& v : per_output) {
      if (k < v.size()) {
        plan.order.push_back(v[k]);
        any = true;
      }
    }
    if (!any) break;
  }
  std::stable_partition(plan.order.begin(), plan.order.end(),
                        [&](const Object& o) { return !is_checkpoints(o.entry); });
  for (const auto& v : per_output) plan.output_counts.push_back(v.size());

  // Checked by piece if every object has its pieces' MD5s (of one size).
  plan.piece_digest_bytes = md5_known && !plan.order.empty() ? plan.order.front().entry.piece_bytes : 0;
  for (const auto& o : plan.order) {
    if (o.entry.piece_bytes != plan.piece_digest_bytes ||
        o.entry.pieces.size() != PieceCount(o.entry.size, o.entry.piece_bytes)) {
      plan.piece_digest_bytes = 0;
    }
  }
  return plan;
}

}  // namespace xbak::cloud
