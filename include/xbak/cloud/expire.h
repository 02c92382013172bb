// `xbcloud expire`: deletes the backups that fall outside a retention policy,
// whole chains at a time, so that no incremental is ever left without its
// base.
//
// Policy: the newest `retain_full` full backups are kept with every
// incremental that depends on them (directly or through another); with
// `retain_days`, so is every chain one of whose backups finished within that
// many days. What is not kept is deleted, incrementals before their bases,
// each backup as xbcloud delete does it (marked as being deleted first, so a
// cut leaves nothing that looks complete). Left alone, and said so: a backup
// whose put has not finished (under way, or killed), a backup whose chain is
// unknown (its manifest has no summary, from an older xbcloud, or its
// checkpoints are encrypted), an incremental whose base is missing. A backup
// whose deletion was cut short is finished. Run again after a cut, it
// computes the same plan from what is left and completes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xbak/cloud/catalog.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

struct ExpireOptions {
  std::string prefix;    // backups named PREFIX/... ("" the whole bucket)
  int retain_full = 0;   // at least 1
  int retain_days = -1;  // -1: not part of the policy
  bool dry_run = false;  // plan and print, delete nothing
  int parallel = 16;     // requests in flight while reading the catalog
  int64_t now = 0;       // Unix time the days count back from; 0: now
};

struct ExpirePlan {
  struct Item {
    std::string name;
    std::string why;
  };
  std::vector<Item> remove;  // in the order they are deleted
  std::vector<Item> keep;    // by start of put
};

// The plan for a catalog (no request made).
Result<ExpirePlan> PlanExpire(const Catalog& catalog, const ExpireOptions& options);

// Reads the catalog, plans, hands the plan to `show` (before anything is
// deleted), and unless dry_run deletes what it says.
Status CloudExpire(storage::EventLoop& loop, storage::ObjectStore& store, const ExpireOptions& options,
                   const std::function<void(const ExpirePlan&)>& show);

}  // namespace xbak::cloud
