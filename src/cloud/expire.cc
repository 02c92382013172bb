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
  if (!b.checkpoints) return "chain unknown (no xtrabackup_checkpoints in the clear): left alone";
  if (b.base_missing) return "incremental whose base is missing: left alone";
  return "kept";
}

}  // namespace

Result<ExpirePlan> PlanExpire(const Catalog& catalog, const ExpireOptions& options) {
  if (options.retain_full < 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "--retain-full must be at least 1 (the newest full backup is never expired)");
  }
  const std::vector<BackupRecord>& backups = catalog.backups;
  const int64_t now = options.now != 0 ? options.now : static_cast<int64_t>(::time(nullptr));
  const int64_t cutoff = options.retain_days < 0 ? INT64_MAX : now - int64_t{options.retain_days} * 86400;

  // Fulls, newest first.
  std::vector<const BackupRecord*> fulls;
  for (const auto& b : backups) {
    if (b.known() && b.full()) fulls.push_back(&b);
  }
  std::sort(fulls.begin(), fulls.end(), [](const BackupRecord* a, const BackupRecord* b) {
    return std::tie(a->summary.started, a->name) > std::tie(b->summary.started, b->name);
  });
  std::map<std::string, const BackupRecord*> by_name;
  for (const auto& b : backups) by_name[b.name] = &b;

  ExpirePlan plan;
  std::map<std::string, std::string> keep_why;
  std::vector<std::vector<std::string>> expired_chains;
  for (size_t i = 0; i < fulls.size(); i++) {
    std::vector<std::string> chain = ChainOf(backups, fulls[i]->name);
    bool recent = false;
    const BackupRecord* locked = nullptr;
    for (const auto& n : chain) {
      recent = recent || by_name[n]->summary.finished >= cutoff;
      if (by_name[n]->locked(now) && (!locked || by_name[n]->summary.lock_until > locked->summary.lock_until))
        locked = by_name[n];
    }
    std::string why;
    if (i < static_cast<size_t>(options.retain_full)) {
      why = "chain of full " + fulls[i]->name + ", one of the newest " + std::to_string(options.retain_full);
    } else if (locked != nullptr) {
      why = "chain of full " + fulls[i]->name + " is under S3 Object Lock (" + locked->name + " until " +
            UtcTime(locked->summary.lock_until) + " UTC): skipped";
    } else if (recent) {
      why = "chain of full " + fulls[i]->name + " has a backup of the last " +
            std::to_string(options.retain_days) + " days";
    }
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
