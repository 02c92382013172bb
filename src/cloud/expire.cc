#include "xbak/cloud/expire.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "xbak/cloud/catalog_format.h"
#include "xbak/cloud/remove.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

std::string Plural(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Why a backup that no chain rule covers is kept.
std::string LeftAloneWhy(const BackupRecord& b) {
  if (b.state == BackupState::kIncomplete) return "put not finished (under way, or killed): left alone";
  if (!b.problem.empty()) return "manifest unreadable (" + b.problem + "): left alone";
  if (b.manifest_version < 3) return "chain unknown (manifest from an older xbcloud): left alone";
  if (!b.checkpoints) return "chain unknown (no checkpoints file in the clear): left alone";
  if (b.base_missing) return "incremental whose base is missing: left alone";
  return "kept";
}

// Why a chain (`chain`, its full `full`, of `rank` among its group's fulls,
// newest first) is kept; "" when it expires.
std::string KeepChainWhy(const BackupRecord& full_record, int rank, const std::vector<std::string>& chain,
                         const std::map<std::string, const BackupRecord*>& by_name,
                         const std::vector<const BackupRecord*>& unknown, const ExpireOptions& options,
                         int64_t now) {
  const BackupRecord* full = &full_record;
  const std::string group = BackupGroup(full->name);
  const int64_t cutoff = options.retain_days < 0 ? INT64_MAX : now - int64_t{options.retain_days} * 86400;
  bool recent = false;
  const BackupRecord* locked = nullptr;
  const BackupRecord* dependent = nullptr;
  for (const auto& n : chain) {
    const BackupRecord* m = by_name.at(n);
    recent = recent || m->summary.finished >= cutoff;
    if (m->locked(now) && (!locked || m->summary.lock_until > locked->summary.lock_until)) locked = m;
    for (const BackupRecord* u : unknown) {
      // A start not known (no summary): it may depend on anything.
      if (!dependent && BackupGroup(u->name) == group &&
          (u->summary.started == 0 || u->summary.started >= m->summary.started))
        dependent = u;
    }
  }
  std::string why;
  if (rank < options.retain_full) {
    why = "chain of full " + full->name + ", one of the newest " + std::to_string(options.retain_full) +
          (group.empty() ? "" : " of " + group + "/");
  } else if (dependent != nullptr) {
    why = "chain of full " + full->name + ": " + dependent->name +
          ", whose chain is unknown, started after it and may depend on it";
  } else if (locked != nullptr) {
    why = "chain of full " + full->name + " is under S3 Object Lock (" + locked->name + " until " +
          UtcTime(locked->summary.lock_until) + " UTC): skipped";
  } else if (recent) {
    why = "chain of full " + full->name + " has a backup of the last " + std::to_string(options.retain_days) +
          " days";
  }
  return why;
}

}  // namespace

Result<ExpirePlan> PlanExpire(const Catalog& catalog, const ExpireOptions& options) {
  if (options.retain_full < 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "--retain-full must be at least 1 (the newest full backup is never expired)");
  }
  const std::vector<BackupRecord>& backups = catalog.backups;
  const int64_t now = options.now != 0 ? options.now : static_cast<int64_t>(::time(nullptr));

  // Fulls, newest first; the policy counts them per group (BackupGroup).
  std::vector<const BackupRecord*> fulls;
  for (const auto& b : backups) {
    if (b.known() && b.full()) fulls.push_back(&b);
  }
  std::sort(fulls.begin(), fulls.end(),
            [](const BackupRecord* a, const BackupRecord* b) { return a->order() > b->order(); });
  std::map<std::string, const BackupRecord*> by_name;
  for (const auto& b : backups) by_name[b.name] = &b;
  // Complete backups whose chain is unknown (no summary, checkpoints not in
  // the clear, a damaged manifest) may depend on any backup of their group
  // that started before them.
  std::vector<const BackupRecord*> unknown;
  for (const auto& b : backups) {
    if (b.state == BackupState::kComplete && !b.known()) unknown.push_back(&b);
  }

  ExpirePlan plan;
  std::map<std::string, std::string> keep_why;
  std::vector<std::vector<std::string>> expired_chains;
  std::map<std::string, int> fulls_seen;  // per group
  for (const BackupRecord* full : fulls) {
    const std::string group = BackupGroup(full->name);
    const int rank = fulls_seen[group]++;
    std::vector<std::string> chain = ChainOf(backups, full->name);
    const std::string why = KeepChainWhy(*full, rank, chain, by_name, unknown, options, now);
    if (!why.empty()) {
      for (const auto& n : chain) keep_why[n] = why;
    } else {
      expired_chains.push_back(std::move(chain));
    }
  }

  std::reverse(expired_chains.begin(), expired_chains.end());  // the oldest first
  // Deletions cut short first (their manifests are gone already), then each
  // expired chain from its newest backup to its full.
  for (const auto& b : backups) {
    if (b.state == BackupState::kDeleting)
      plan.remove.push_back({b.name, "its deletion was cut short: finishing it"});
  }
  std::set<std::string> removed;
  for (const auto& chain : expired_chains) {
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const BackupRecord& b = *by_name[*it];
      plan.remove.push_back(
          {b.name, b.full() ? "full outside the policy" : "incremental of expired full " + chain.front()});
      removed.insert(b.name);
    }
  }
  for (const auto& b : backups) {
    if (b.state == BackupState::kDeleting || removed.count(b.name)) continue;
    auto it = keep_why.find(b.name);
    plan.keep.push_back({b.name, it != keep_why.end() ? it->second : LeftAloneWhy(b)});
  }
  return plan;
}

Status CloudExpire(storage::EventLoop& loop, storage::ObjectStore& store, const ExpireOptions& options,
                   const std::function<void(const ExpirePlan&)>& show) {
  if (options.retain_full < 1) return PlanExpire({}, options).status();
  XBAK_ASSIGN_OR_RETURN(Catalog catalog, ReadCatalog(loop, store, {options.prefix, options.parallel}));
  XBAK_ASSIGN_OR_RETURN(ExpirePlan plan, PlanExpire(catalog, options));
  show(plan);
  if (options.dry_run) return Status::Ok();
  size_t done = 0;
  for (const auto& item : plan.remove) {
    uint64_t objects = 0;
    Status s = CloudDelete(loop, store, item.name, &objects);
    if (!s.ok() && s.code() != ErrorCode::kNotFound) {
      return s.With("expire: " + std::to_string(done) + " of " + Plural(plan.remove.size(), "backup") +
                    " deleted, then deleting " + item.name + " failed; run expire again to finish");
    }
    done++;
    util::LogInfo("expire: deleted " + item.name + " (" + Plural(objects, "object") + "), " +
                  std::to_string(done) + " of " + std::to_string(plan.remove.size()));
  }
  util::LogInfo("expire: done, " + Plural(plan.remove.size(), "backup") + " deleted, " +
                Plural(plan.keep.size(), "backup") + " kept");
  return Status::Ok();
}

}  // namespace xbak::cloud
