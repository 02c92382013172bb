#include "xbak/cloud/catalog.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>

namespace xbak::cloud {

const char* BackupStateName(BackupState s) {
  switch (s) {
    case BackupState::kComplete:
      return "complete";
    case BackupState::kIncomplete:
      return "incomplete";
    case BackupState::kDeleting:
      return "deleting";
  }
  return "?";
}

bool BackupRecord::full() const { return checkpoints && checkpoints->backup_type != "incremental"; }
bool BackupRecord::incremental() const { return checkpoints && checkpoints->backup_type == "incremental"; }

namespace {

// The walk: requests queued and run `parallel` at a time, on the loop
// thread; the loop stops when none is left.
class Walk {
 public:
  Walk(storage::EventLoop& loop, storage::ObjectStore& store, const CatalogOptions& options)
      : loop_(loop), store_(store), options_(options) {}

  Result<Catalog> Run() {
    if (options_.prefix.empty()) {
      ListLevel(std::make_shared<Level>(Level{"", {}, {}}), "");
    } else {
      Probe(options_.prefix);
    }
    loop_.Run();
    if (!error_.ok()) return error_;
    catalog_.requests = requests_;
    return std::move(catalog_);
  }

 private:
  struct Level {
    std::string prefix;  // "" or ending in '/'
    std::vector<storage::ObjectInfo> objects;
    std::vector<std::string> prefixes;
  };

  void Start(std::function<void()> request) {
    waiting_.push_back(std::move(request));
    Pump();
  }
  void Pump() {
    while (inflight_ < options_.parallel && !waiting_.empty() && error_.ok()) {
      auto request = std::move(waiting_.front());
      waiting_.pop_front();
      inflight_++;
      requests_++;
      request();
    }
  }
  // After each request's callback.
  void Done() {
    inflight_--;
    Pump();
    if (inflight_ == 0 && (waiting_.empty() || !error_.ok())) loop_.Stop();
  }
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }

  // A level below: most are complete backups, so their manifest's head is
  // asked for first (one request tells both); a level without one is listed.
  void Probe(const std::string& prefix) {
    const std::string name = prefix.substr(0, prefix.size() - 1);
    Start([this, name, prefix] {
      store_.GetFirst(ManifestKey(name), kManifestHeadMax, [this, name, prefix](Result<std::string> r) {
        if (r.ok()) {
          Complete(name, std::move(*r));
        } else if (r.status().code() == ErrorCode::kNotFound) {
          ListLevel(std::make_shared<Level>(Level{prefix, {}, {}}), "");
        } else if (r.status().code() == ErrorCode::kUnreadable) {
          // A manifest this one backup keeps from us (SSE-C without its key, an
          // archived storage class), not the store from everything (credentials).
          Complete(name, "", r.status().message());  // a backup whose manifest cannot be read, and why
        } else {
          Fail(r.status());  // names the manifest's key
        }
        Done();
      });
    });
  }

  void ListLevel(std::shared_ptr<Level> level, std::string token) {
    Start([this, level, token] {
      store_.List({level->prefix, token, true}, [this, level](Result<storage::ListResult> r) {
        if (!r.ok()) {
          Fail(r.status().With("listing " + (level->prefix.empty() ? "the bucket" : level->prefix)));
        } else {
          for (auto& o : r->objects) level->objects.push_back(std::move(o));
          for (auto& p : r->prefixes) level->prefixes.push_back(std::move(p));
          if (!r->next_token.empty()) {
            ListLevel(level, r->next_token);
          } else {
            Classify(*level);
          }
        }
        Done();
      });
    });
  }

  // A level with a marker of its own is a backup; any other is walked on.
  void Classify(const Level& level) {
    if (!level.prefix.empty()) {
      const std::string name = level.prefix.substr(0, level.prefix.size() - 1);
      bool manifest = false, started = false;
      int64_t newest = 0;
      for (const auto& o : level.objects) {
        manifest = manifest || o.key == ManifestKey(name);
        started = started || o.key == StartedKey(name);
        newest = std::max(newest, o.modified);
      }
      if (manifest) return Probe(level.prefix);  // its put finished since, or a deletion began
      if (started) {
        BackupRecord b;
        b.name = name;
        b.last_modified = newest;
        b.state = BackupState::kIncomplete;
        catalog_.backups.push_back(std::move(b));
        return;
      }
    }
    catalog_.foreign_objects += level.objects.size();
    for (const auto& p : level.prefixes) Probe(p);
  }

  void Complete(const std::string& name, std::string head, std::string problem = {}) {
    BackupRecord b;
    b.name = name;
    b.problem = std::move(problem);
    b.state = IsTombstone(head) ? BackupState::kDeleting : BackupState::kComplete;
    catalog_.backups.push_back(std::move(b));
    if (catalog_.backups.back().state == BackupState::kDeleting || !catalog_.backups.back().problem.empty())
      return;
    Summarize(catalog_.backups.size() - 1, head, head.size() < kManifestHeadMax);
  }

  // The whole manifest, for one whose head is longer than what GetFirst read.
  void ReadWhole(size_t index) {
    Start([this, index] {
      store_.Get(ManifestKey(catalog_.backups[index].name), [this, index](Result<std::string> r) {
        if (r.ok()) {
          Summarize(index, *r, true);
        } else {
          Fail(r.status());
        }
        Done();
      });
    });
  }

  void Summarize(size_t index, const std::string& text, bool whole) {
    BackupRecord& b = catalog_.backups[index];
    auto head = ParseManifestHead(text);
    if (!head.ok()) {
      b.problem = ManifestKey(b.name) + ": " + head.status().message();
      return;
    }
    if (!head->complete) {
      if (!whole) return ReadWhole(index);
      b.problem = ManifestKey(b.name) + ": truncated";
      return;
    }
    b.manifest_version = head->version;
    b.summary = std::move(head->summary);
    std::string cp_name;
    if (const std::string* cp = b.summary.Meta(backupdir::Meta::kCheckpoints, &cp_name)) {
      auto c = backupdir::ParseCheckpoints(*cp, ManifestKey(b.name) + ": " + cp_name);
      if (c.ok()) {
        b.checkpoints = *c;
      } else {
        b.problem = c.status().message();
      }
    }
    if (const std::string* info = b.summary.Meta(backupdir::Meta::kInfo)) {
      b.start_time = backupdir::InfoField(*info, "start_time");
      b.end_time = backupdir::InfoField(*info, "end_time");
    }
  }

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  const CatalogOptions& options_;
  std::deque<std::function<void()>> waiting_;
  int inflight_ = 0;
  uint64_t requests_ = 0;
  Status error_;
  Catalog catalog_;
};

}  // namespace

Result<Catalog> ReadCatalog(storage::EventLoop& loop, storage::ObjectStore& store,
                            const CatalogOptions& options) {
  CatalogOptions o = options;
  while (o.prefix.ends_with('/')) o.prefix.pop_back();
  if (!o.prefix.empty()) {
    XBAK_RETURN_IF_ERROR(CheckBackupName(o.prefix).With("prefix"));
    o.prefix += '/';
  }
  if (o.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  XBAK_ASSIGN_OR_RETURN(Catalog c, Walk(loop, store, o).Run());
  std::sort(c.backups.begin(), c.backups.end(),
            [](const BackupRecord& a, const BackupRecord& b) { return a.order() < b.order(); });
  LinkChains(&c.backups);
  return c;
}

std::string BackupGroup(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

void LinkChains(std::vector<BackupRecord>* backups) {
  // Complete backups by their group and the LSN where they end.
  std::multimap<std::pair<std::string, uint64_t>, const BackupRecord*> by_end;
  for (const auto& b : *backups) {
    if (b.known()) by_end.emplace(std::pair{BackupGroup(b.name), b.checkpoints->to_lsn}, &b);
  }
  for (auto& b : *backups) {
    b.base.clear();
    b.base_missing = false;
    if (!b.incremental()) continue;
    const BackupRecord* best = nullptr;
    auto [lo, hi] = by_end.equal_range(std::pair{BackupGroup(b.name), b.checkpoints->from_lsn});
    for (auto it = lo; it != hi; ++it) {
      const BackupRecord* c = it->second;
      // Only a backup before this one in the catalog's order can be its base: a strict order,
      // so no two backups are each other's base. Two puts of an idle server in the same second
      // end at the same checkpoint LSN; t_xbcloud_repo met the cycle.
      if (c->order() >= b.order()) continue;
      if (best == nullptr || c->order() > best->order()) best = c;
    }
    if (best != nullptr) {
      b.base = best->name;
    } else {
      b.base_missing = true;
    }
  }
}

std::vector<std::string> ChainOf(const std::vector<BackupRecord>& backups, const std::string& name) {
  std::set<std::string> in = {name};
  for (bool grew = true; grew;) {  // until no backup joins: chains are short
    grew = false;
    for (const auto& b : backups) {
      if (!b.base.empty() && in.count(b.base) && in.insert(b.name).second) grew = true;
    }
  }
  std::vector<std::string> out;
  for (const auto& b : backups) {
    if (in.count(b.name)) out.push_back(b.name);
  }
  return out;
}

}  // namespace xbak::cloud
