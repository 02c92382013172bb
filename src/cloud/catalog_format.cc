#include "xbak/cloud/catalog_format.h"

#include <ctime>
#include <map>
#include <set>

#include "xbak/util/json.h"
#include "xbak/util/progress.h"
#include "xbak/util/utc_time.h"

namespace xbak::cloud {
namespace {

std::string TypeOf(const BackupRecord& b) {
  if (b.incremental()) return "incremental";
  if (b.full()) return "full";
  return "?";
}

// What the STATE column says: the state, and why a complete backup is not
// placed in a chain.
std::string StateOf(const BackupRecord& b) {
  if (b.state != BackupState::kComplete) return BackupStateName(b.state);
  if (!b.problem.empty()) return "damaged manifest";
  if (b.manifest_version < 3) return "complete (no summary)";
  if (b.base_missing) return "complete, base missing";
  if (b.locked(static_cast<int64_t>(::time(nullptr))))
    return "complete, locked until " + UtcTime(b.summary.lock_until).substr(0, 10);
  return "complete";
}

std::string Duration(const BackupRecord& b) {
  if (b.summary.started == 0 || b.summary.finished < b.summary.started) return "-";
  int64_t s = b.summary.finished - b.summary.started;
  char out[32];
  std::snprintf(out, sizeof out, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return out;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// Chains first (each full, then its incrementals below their bases), then
// every backup not in a chain, in order of start.
std::vector<std::pair<const BackupRecord*, int>> TreeOrder(const Catalog& c) {
  std::map<std::string, std::vector<const BackupRecord*>> children;
  for (const auto& b : c.backups) {
    if (!b.base.empty()) children[b.base].push_back(&b);
  }
  std::vector<std::pair<const BackupRecord*, int>> out;
  std::set<const BackupRecord*> placed;
  auto add = [&](auto&& self, const BackupRecord* b, int depth) -> void {
    if (!placed.insert(b).second) return;
    out.push_back({b, depth});
    for (const BackupRecord* child : children[b->name]) self(self, child, depth + 1);
  };
  for (const auto& b : c.backups) {
    if (b.known() && b.full()) add(add, &b, 0);
  }
  for (const auto& b : c.backups) add(add, &b, 0);
  return out;
}

}  // namespace

std::string UtcTime(int64_t unix_time) {
  if (unix_time <= 0) return "-";
  return util::FormatUtc(unix_time, "%Y-%m-%d %H:%M:%S");
}

std::string FormatCatalogTable(const Catalog& catalog) {
  const auto rows = TreeOrder(catalog);
  size_t name_width = 4;
  for (const auto& [b, depth] : rows) name_width = std::max(name_width, b->name.size() + 2 * depth);
  std::string out =
      Pad("NAME", name_width) +
      "  TYPE         STARTED (UTC)        TOOK      FROM_LSN        TO_LSN          STORED      "
      "FILES       ENCODING        STATE\n";
  for (const auto& [b, depth] : rows) {
    const bool lsns = b->checkpoints.has_value();
    const bool summary = b->manifest_version >= 3;
    out += Pad(std::string(2 * depth, ' ') + b->name, name_width) + "  " + Pad(TypeOf(*b), 13) +
           Pad(UtcTime(b->summary.started != 0 ? b->summary.started : b->last_modified), 21) +
           Pad(Duration(*b), 10) + Pad(lsns ? std::to_string(b->checkpoints->from_lsn) : "-", 16) +
           Pad(lsns ? std::to_string(b->checkpoints->to_lsn) : "-", 16) +
           Pad(summary ? util::HumanBytes(b->summary.stored_bytes) : "-", 12) +
           Pad(summary ? util::HumanBytes(b->summary.file_bytes) : "-", 12) +
           Pad(!summary                      ? "-"
               : b->summary.encoding.empty() ? "none"
                                             : b->summary.encoding,
               16) +
           StateOf(*b) + "\n";
  }
  size_t complete = 0, chains = 0;
  for (const auto& b : catalog.backups) {
    complete += b.state == BackupState::kComplete ? 1 : 0;
    chains += b.known() && b.full() ? 1 : 0;
  }
  out += std::to_string(catalog.backups.size()) + " backups (" + std::to_string(complete) + " complete) in " +
         std::to_string(chains) + " chains";
  if (catalog.foreign_objects > 0) {
    out += "; " + std::to_string(catalog.foreign_objects) + " objects outside any backup (not xbcloud's)";
  }
  return out + "\n";
}

std::string FormatCatalogJson(const Catalog& catalog) {
  auto str = [](const std::string& s) { return util::JsonQuote(s); };
  auto num = [](uint64_t v) { return std::to_string(v); };
  std::string out = "{\"backups\": [";
  bool first = true;
  for (const auto& b : catalog.backups) {
    out += first ? "\n  {" : ",\n  {";
    first = false;
    out += "\"name\": " + str(b.name) + ", \"type\": " +
           str(b.incremental() ? "incremental"
               : b.full()      ? "full"
                               : "unknown") +
           ", \"state\": " + str(BackupStateName(b.state)) +
           ", \"complete\": " + (b.state == BackupState::kComplete ? "true" : "false") +
           ", \"base\": " + (b.base.empty() ? "null" : str(b.base)) +
           ", \"base_missing\": " + (b.base_missing ? "true" : "false");
    out += ", \"started\": " + num(static_cast<uint64_t>(b.summary.started)) +
           ", \"finished\": " + num(static_cast<uint64_t>(b.summary.finished)) +
           ", \"started_utc\": " + str(UtcTime(b.summary.started)) +
           ", \"finished_utc\": " + str(UtcTime(b.summary.finished)) +
           ", \"start_time\": " + str(b.start_time) + ", \"end_time\": " + str(b.end_time) +
           ", \"last_modified\": " + num(static_cast<uint64_t>(b.last_modified));
    if (b.checkpoints) {
      out += ", \"backup_type\": " + str(b.checkpoints->backup_type) +
             ", \"from_lsn\": " + num(b.checkpoints->from_lsn) +
             ", \"to_lsn\": " + num(b.checkpoints->to_lsn);
    } else {
      out += ", \"backup_type\": null, \"from_lsn\": null, \"to_lsn\": null";
    }
    out += ", \"stored_bytes\": " + num(b.summary.stored_bytes) +
           ", \"file_bytes\": " + num(b.summary.file_bytes) + ", \"objects\": " + num(b.summary.objects) +
           ", \"encoding\": " + str(b.summary.encoding) +
           ", \"lock_mode\": " + (b.summary.lock_mode.empty() ? "null" : str(b.summary.lock_mode)) +
           ", \"lock_until\": " + num(static_cast<uint64_t>(b.summary.lock_until)) +
           ", \"manifest_version\": " + num(static_cast<uint64_t>(b.manifest_version)) +
           ", \"problem\": " + (b.problem.empty() ? "null" : str(b.problem));
    if (b.known() && b.full()) {
      out += ", \"chain\": [";
      bool f = true;
      for (const auto& n : ChainOf(catalog.backups, b.name)) {
        if (!f) out += ", ";
        out += str(n);
        f = false;
      }
      out += "]";
    }
    out += "}";
  }
  out += std::string(first ? "" : "\n") + "], \"foreign_objects\": " + num(catalog.foreign_objects) +
         ", \"requests\": " + num(catalog.requests) + "}\n";
  return out;
}

}  // namespace xbak::cloud
