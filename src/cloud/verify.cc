#include "xbak/cloud/verify.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/endian.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

struct Item {
  std::string key;
  std::string path;  // the backup file it belongs to
  bool has_sidecar = false;
  std::optional<ManifestEntry> manifest;
};

class Problems {
 public:
  void Add(std::string line) {
    std::lock_guard<std::mutex> l(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(lines_);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// A downloaded object waiting for its checks on the pool.
struct Downloaded {
  size_t index = 0;
  std::string body;
  std::optional<storage::Md5Digest> sidecar;
};

class Job {
 public:
  Job(storage::EventLoop& loop, storage::ObjectStore& store, const CloudVerifyOptions& o,
      std::vector<Item> items, Problems& problems)
      : loop_(loop), store_(store), o_(o), items_(std::move(items)), problems_(problems) {
    threads_ = std::max(1, o.md5_threads);
    window_ = static_cast<size_t>(o.parallel) + static_cast<size_t>(threads_);
  }

  uint64_t bytes() const { return bytes_.load(); }

  void Run() {
    if (items_.empty()) return;
    std::vector<std::thread> pool;
    for (int i = 0; i < threads_; i++) pool.emplace_back([this] { Worker(); });
    Pump();
    loop_.Run();
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
    }
    cv_.notify_all();
    for (auto& t : pool) t.join();
  }

 private:
  // Loop thread.
  void Pump() {
    while (next_ < items_.size() && inflight_ < static_cast<size_t>(o_.parallel) &&
           inflight_ + held_ < window_) {
      size_t i = next_++;
      inflight_++;
      Fetch(i);
    }
  }

  void Fetch(size_t i) {
    const Item& it = items_[i];
    if (!it.has_sidecar) return FetchBody(i, std::nullopt);
    store_.Get(it.key + std::string(kMd5Suffix), [this, i](Result<std::string> r) {
      const Item& it = items_[i];
      std::optional<storage::Md5Digest> side;
      if (!r.ok()) {
        problems_.Add(it.key + std::string(kMd5Suffix) +
                      ": cannot read the sidecar: " + r.status().message());
      } else {
        auto d = ParseMd5Sidecar(*r, it.key);
        if (!d.ok()) {
          problems_.Add(it.key + std::string(kMd5Suffix) + ": " + d.status().message());
        } else {
          side = *d;
          std::string base = it.key.substr(it.key.rfind('/') + 1);
          if (r->find(base) == std::string::npos) {
            problems_.Add(it.key + std::string(kMd5Suffix) + ": the sidecar names another object");
          }
        }
      }
      FetchBody(i, side);
    });
  }

  void FetchBody(size_t i, std::optional<storage::Md5Digest> side) {
    store_.Get(items_[i].key, [this, i, side](Result<std::string> r) {
      inflight_--;
      if (!r.ok()) {
        problems_.Add(items_[i].key + ": cannot download: " + r.status().message());
        Finished();
        return;
      }
      held_++;
      {
        std::lock_guard<std::mutex> l(mu_);
        queue_.push_back(Downloaded{i, std::move(*r), side});
      }
      cv_.notify_one();
      Pump();
    });
  }

  void Finished() {
    done_++;
    if (done_ == items_.size()) {
      loop_.Stop();
      return;
    }
    Pump();
  }

  // Pool threads.
  void Worker() {
    for (;;) {
      Downloaded d;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        d = std::move(queue_.front());
        queue_.pop_front();
      }
      Check(d);
      loop_.Post([this] {
        held_--;
        Finished();
      });
    }
  }

  void Check(const Downloaded& d) {
    const Item& it = items_[d.index];
    bytes_ += d.body.size();
    const ManifestEntry* m = it.manifest ? &*it.manifest : nullptr;
    // With piece MD5s in the manifest (version 2) both in one pass: what get
    // checks (the pieces) must agree with what the sidecar says.
    ObjectDigests digests;
    if (m != nullptr && m->piece_bytes > 0) {
      digests = DigestObject(d.body, m->piece_bytes);
    } else {
      digests.md5 = storage::Md5(d.body);
    }
    const storage::Md5Digest& got = digests.md5;
    if (d.sidecar && *d.sidecar != got) {
      problems_.Add(it.key + ": MD5 " + storage::Md5Hex(got) + " does not match its .md5 sidecar (" +
                    storage::Md5Hex(*d.sidecar) + ")");
    }
    if (it.manifest) {
      if (it.manifest->size != d.body.size()) {
        problems_.Add(it.key + ": " + std::to_string(d.body.size()) + " bytes, the manifest says " +
                      std::to_string(it.manifest->size));
      } else if (it.manifest->md5 != got) {
        problems_.Add(it.key + ": MD5 " + storage::Md5Hex(got) + " does not match the manifest (" +
                      storage::Md5Hex(it.manifest->md5) + ")");
      } else if (m->piece_bytes > 0 && digests.pieces != m->pieces) {
        size_t k = 0;
        while (k < m->pieces.size() && k < digests.pieces.size() && digests.pieces[k] == m->pieces[k]) k++;
        problems_.Add(it.key + ": the MD5 of bytes " + std::to_string(k * m->piece_bytes) + "- (piece " +
                      std::to_string(k) + ") does not match the manifest's piece MD5s");
      }
    }
    std::string bad = CheckObjectChunks(d.body, it.path);
    if (!bad.empty()) problems_.Add(it.key + ": " + bad);
  }

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  const CloudVerifyOptions& o_;
  const std::vector<Item> items_;
  Problems& problems_;
  int threads_ = 1;
  size_t window_ = 1;
  // Loop thread only.
  size_t next_ = 0, inflight_ = 0, held_ = 0, done_ = 0;
  // Shared with the pool.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Downloaded> queue_;
  bool closed_ = false;
  std::atomic<uint64_t> bytes_{0};
};

// The backup's manifest, or nothing (a problem says why) when it is missing or unreadable.
std::optional<std::vector<ManifestEntry>> ReadManifest(storage::EventLoop& loop, storage::ObjectStore& store,
                                                       const std::string& name,
                                                       const std::map<std::string, uint64_t>& listed,
                                                       Problems& problems) {
  const std::string marker = ManifestKey(name);
  if (!listed.count(marker)) {
    problems.Add(marker + ": missing: the backup is incomplete (its put did not finish) or was damaged");
    return std::nullopt;
  }
  auto text = GetSync(loop, store, marker);
  if (!text.ok()) {
    problems.Add(marker + ": cannot read it: " + text.status().message());
    return std::nullopt;
  }
  if (IsTombstone(*text)) {
    problems.Add(marker +
                 ": the backup is being deleted (or its deletion was cut short: finish it with "
                 "xbcloud delete " +
                 name + ")");
    return std::nullopt;
  }
  auto m = ParseManifest(*text);
  if (!m.ok()) {
    problems.Add(marker + ": " + m.status().message());
    return std::nullopt;
  }
  return std::move(m.value());
}

// What is stored: the data objects to check (by key); sidecars without their
// object, stray markers and foreign objects are problems.
std::map<std::string, Item> ClassifyObjects(const std::string& name,
                                            const std::map<std::string, uint64_t>& listed,
                                            Problems& problems) {
  std::map<std::string, Item> items;
  for (const auto& [key, size] : listed) {
    const std::string owner = MarkerOwner(key);
    if (owner == name) continue;  // its manifest (read before) or started marker
    if (!owner.empty()) {
      problems.Add(key + ": a marker of another backup inside this one");
      continue;
    }
    std::string path;
    uint64_t seq = 0;
    if (key.ends_with(kMd5Suffix)) {
      std::string data = key.substr(0, key.size() - kMd5Suffix.size());
      if (!listed.count(data)) problems.Add(key + ": a sidecar without its object");
      continue;
    }
    if (!ParseDataObjectKey(name, key, &path, &seq)) {
      problems.Add(key + ": not an object of an xbcloud backup (no .<sequence number> suffix)");
      continue;
    }
    Item it;
    it.key = key;
    it.path = path;
    it.has_sidecar = listed.count(key + std::string(kMd5Suffix)) != 0;
    if (!it.has_sidecar) problems.Add(key + ": no .md5 sidecar");
    items[key] = std::move(it);
  }
  return items;
}

// Every object the manifest lists is stored with its size, and nothing else is.
void CompareWithManifest(const std::string& name, const std::vector<ManifestEntry>& manifest,
                         const std::map<std::string, uint64_t>& listed, std::map<std::string, Item>& items,
                         Problems& problems) {
  std::map<std::string, const ManifestEntry*> by_key;
  for (const auto& e : manifest) by_key[DataObjectKey(name, e.path, e.seq)] = &e;
  for (const auto& [key, e] : by_key) {
    auto it = items.find(key);
    if (it == items.end()) {
      problems.Add(key + ": missing (listed in the manifest)");
      continue;
    }
    it->second.manifest = *e;
    uint64_t size = listed.at(key);
    if (size != e->size) {
      problems.Add(key + ": the store lists " + std::to_string(size) + " bytes, the manifest says " +
                   std::to_string(e->size));
    }
  }
  for (const auto& [key, it] : items) {
    if (!by_key.count(key)) problems.Add(key + ": not listed in the manifest");
  }
}

// No manifest to compare with: at least each file's objects must be numbered 0, 1, 2, ...
void CheckSequences(const std::string& name, const std::map<std::string, Item>& items, Problems& problems) {
  std::map<std::string, std::vector<uint64_t>> seqs;
  for (const auto& [key, it] : items) {
    std::string p;
    uint64_t s = 0;
    (void)ParseDataObjectKey(name, key, &p, &s);
    seqs[p].push_back(s);
  }
  for (auto& [p, v] : seqs) {
    std::sort(v.begin(), v.end());
    for (size_t i = 0; i < v.size(); i++) {
      if (v[i] != i) {
        problems.Add(DataObjectKey(name, p, i) + ": missing (the objects of " + p + " skip it)");
        break;
      }
    }
  }
}

}  // namespace

std::string CheckObjectChunks(const std::string& body, const std::string& path) {
  const auto* p = reinterpret_cast<const uint8_t*>(body.data());
  const size_t n = body.size();
  if (n == 0) return "empty object (every object holds at least one chunk)";
  size_t pos = 0;
  auto at = [&](size_t off, const std::string& what) {
    return "not a valid xbstream piece of " + path + " at byte " + std::to_string(off) + ": " + what;
  };
  while (pos < n) {
    const size_t start = pos;
    if (n - pos < stream::kXbstreamFixedHeaderLen) return at(start, "truncated chunk header");
    if (std::memcmp(p + pos, stream::kXbstreamMagic.data(), stream::kXbstreamMagic.size()) != 0)
      return at(start, "bad chunk magic");
    uint8_t flags = p[pos + 8];
    uint8_t type = p[pos + 9];
    uint32_t path_len = util::LoadLE32(p + pos + 10);
    pos += stream::kXbstreamFixedHeaderLen;
    if (path_len > stream::kXbstreamMaxPathLen) return at(start, "path too long");
    if (n - pos < path_len) return at(start, "truncated chunk header");
    std::string chunk_path(body.data() + pos, path_len);
    pos += path_len;
    auto norm = stream::NormalizeXbstreamPath(chunk_path);
    if (!norm.ok() || *norm != path) return at(start, "a chunk of '" + chunk_path + "'");
    if (type == 'E') continue;
    if (type != 'P' && !(flags & stream::kXbstreamFlagIgnorable)) return at(start, "unknown chunk type");
    if (n - pos < stream::kXbstreamPayloadHeaderLen) return at(start, "truncated chunk header");
    uint64_t len = util::LoadLE64(p + pos);
    uint32_t crc = util::LoadLE32(p + pos + 16);
    pos += stream::kXbstreamPayloadHeaderLen;
    if (len > stream::kXbstreamMaxPayloadLen) return at(start, "payload too large");
    if (n - pos < len) return at(start, "truncated payload");
    if (stream::XbstreamCrc32(p + pos, static_cast<size_t>(len)) != crc)
      return at(start, "payload checksum mismatch");
    pos += static_cast<size_t>(len);
  }
  return "";
}

std::string CloudVerifyResult::Summary() const {
  return "verify: " + std::to_string(objects) + " objects, " + std::to_string(bytes) + " bytes, " +
         std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s");
}

Result<CloudVerifyResult> CloudVerify(storage::EventLoop& loop, storage::ObjectStore& store,
                                      const CloudVerifyOptions& options) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(options.name));
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  const std::string& name = options.name;
  std::map<std::string, uint64_t> listed;
  XBAK_ASSIGN_OR_RETURN(auto objects, ListAllSync(loop, store, name + "/"));
  for (auto& o : objects) listed[o.key] = o.size;
  if (listed.empty())
    return Error(ErrorCode::kNotFound, "backup " + name + " not found in " + store.Describe());

  Problems problems;
  auto manifest = ReadManifest(loop, store, name, listed, problems);
  std::map<std::string, Item> items = ClassifyObjects(name, listed, problems);
  if (manifest) {
    CompareWithManifest(name, *manifest, listed, items, problems);
  } else {
    CheckSequences(name, items, problems);
  }

  std::vector<Item> todo;
  todo.reserve(items.size());
  for (auto& [key, it] : items) todo.push_back(std::move(it));
  CloudVerifyResult res;
  res.objects = todo.size();
  Job job(loop, store, options, std::move(todo), problems);
  job.Run();
  res.bytes = job.bytes();
  res.problems = problems.Take();
  std::sort(res.problems.begin(), res.problems.end());
  return res;
}

}  // namespace xbak::cloud
