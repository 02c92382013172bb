#include "get_job.h"

#include <algorithm>

#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::cloud {

std::unique_ptr<GetJob> GetJob::Make(storage::EventLoop& loop, storage::ObjectStore& store,
                                     const GetOptions& options, GetPlan plan) {
  if (plan.piece_digest_bytes > 0) return MakePieceCheckedGet(loop, store, options, std::move(plan));
  return MakeWholeObjectGet(loop, store, options, std::move(plan));
}

GetJob::GetJob(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options, GetPlan plan,
               uint64_t piece_bytes, size_t window, bool flow_control)
    : loop_(loop),
      store_(store),
      options_(options),
      objects_(std::move(plan.order)),
      piece_bytes_(piece_bytes),
      window_(window),
      flow_control_(flow_control),
      writers_running_(plan.output_counts.size()) {
  for (size_t i = 0; i < plan.output_counts.size(); i++) queues_.push_back(std::make_unique<OutputQueue>());
  for (const auto& o : objects_) total_bytes_ += o.entry.size;
}

GetStats GetJob::stats() const {
  GetStats s;
  s.bytes_downloaded = downloaded_bytes_;
  s.bytes_written = written_.load();
  s.objects = done_objects_;
  s.md5_retries = md5_retries_;
  s.requests = requests_;
  s.peak_held_objects = peak_held_;
  s.peak_held_bytes = peak_held_bytes_;
  return s;
}

void GetJob::Start() {
  UpdateHashWant();
  Pump();
  StartProgress();
}

void GetJob::Written(size_t index, std::vector<std::string> parts, bool last) {
  if (auto it = slots_.find(index); it != slots_.end()) it->second.written += parts.size();
  if (last) {
    done_objects_++;
    held_--;
  }
  Recycle(std::move(parts));
  OnWritten();
  Pump();
}

void GetJob::WriterDone(Status s) {
  writers_running_--;
  if (!s.ok()) Fail(s);
  MaybeFinish();
}

void GetJob::Hashed(size_t index, int attempt, size_t piece, size_t parts) {
  auto it = slots_.find(index);
  if (it == slots_.end() || it->second.attempt != attempt) return;  // cannot happen; be safe
  OnHashed(index, it->second, piece, parts);
}

void GetJob::Pump() {
  while (error_.ok() && inflight_ < static_cast<size_t>(options_.parallel)) {
    // The oldest object that still has a range to ask for ...
    bool stagger_ok = StaggerAllows();
    auto it = std::find_if(slots_.begin(), slots_.end(), [&](const auto& kv) {
      return !kv.second.md5_pending && kv.second.requested < kv.second.ranges &&
             (kv.second.requested > 0 || stagger_ok);
    });
    if (it != slots_.end()) {
      RequestRange(it->first, it->second);
      continue;
    }
    // ... else the next object, while the window (and the mode) has room.
    if (next_ >= objects_.size() || held_ >= window_ || !stagger_ok || !RoomForAnother()) break;
    held_++;
    peak_held_ = std::max(peak_held_, held_);
    Admit(next_++, 0);
  }
}

// How many ranges an object of `size` bytes is fetched in.
uint64_t GetJob::RangeCount(uint64_t size) const {
  uint64_t min_range = std::max<uint64_t>(options_.min_range_bytes, 64);
  uint64_t by_size = options_.range_bytes > 0 ? (size + options_.range_bytes - 1) / options_.range_bytes : 1;
  uint64_t n = std::max(RangesForParallel(), by_size);
  return std::clamp<uint64_t>(n, 1, std::max<uint64_t>(size / min_range, 1));
}

void GetJob::Admit(size_t i, int attempt) {
  Object& o = objects_[i];
  Slot& slot = slots_[i];
  slot = Slot{};
  slot.attempt = attempt;
  uint64_t size = o.entry.size;
  uint64_t ranges = RangeCount(size);
  // Ranges of whole pieces, pieces of whole 64-byte blocks: each piece can
  // go into the MD5 as soon as it and those before it are in.
  slot.range_bytes = ((size + ranges - 1) / ranges + piece_bytes_ - 1) / piece_bytes_ * piece_bytes_;
  slot.ranges = size == 0 ? 1 : static_cast<size_t>((size + slot.range_bytes - 1) / slot.range_bytes);
  size_t pieces = size == 0 ? 1 : static_cast<size_t>((size + piece_bytes_ - 1) / piece_bytes_);
  slot.parts.resize(pieces);
  slot.arrived.assign(pieces, false);
  SetUp(i, slot, pieces);
  if (!o.md5_known) {
    slot.md5_pending = true;
    inflight_++;
    std::string key = Key(o);
    store_.Get(key + std::string(kMd5Suffix), [this, i, key](Result<std::string> r) {
      inflight_--;
      if (!r.ok()) return Fail(r.status().With("md5 sidecar of " + key));
      auto md5 = ParseMd5Sidecar(*r, key);
      if (!md5.ok()) return Fail(md5.status());
      objects_[i].entry.md5 = *md5;
      objects_[i].md5_known = true;
      slots_[i].md5_pending = false;
      Pump();
    });
  }
}

void GetJob::RequestRange(size_t i, Slot& slot) {
  const Object& o = objects_[i];
  size_t k = slot.requested++;
  inflight_++;
  requests_++;
  std::string key = Key(o);
  int attempt = slot.attempt;
  if (o.entry.size == 0) {  // no byte range to ask for
    store_.Get(key, [this, i, attempt, key](Result<std::string> r) {
      if (r.ok()) Arrived(i, attempt, 0, std::move(*r));
      Fetched(r.status(), key);
    });
    return;
  }
  uint64_t offset = k * slot.range_bytes;
  size_t first_piece = static_cast<size_t>(offset / piece_bytes_);
  storage::ObjectStore::RangeReader reader = ReaderFor(i, attempt, first_piece, key);
  // Flow control: a download reads only as far ahead as the mode allows
  // (MayRead). Hashing, not the network, is what holds the pace on a fast
  // link; unthrottled, every object would be downloaded whole while it
  // waits to be hashed, which is memory for nothing.
  if (flow_control_)
    reader.may_read = [this, i, attempt, first_piece] {
      auto it = slots_.find(i);
      if (it == slots_.end() || it->second.attempt != attempt) return true;
      return MayRead(i, it->second, first_piece);
    };
  store_.GetRange(key, {offset, std::min(slot.range_bytes, o.entry.size - offset)}, std::move(reader));
}

// A reader handing the pieces of a range of object i from `first_piece` to
// Arrived (in buffers from the pool) and its end to Fetched.
storage::ObjectStore::RangeReader GetJob::ReaderFor(size_t i, int attempt, size_t first_piece,
                                                    const std::string& key) {
  storage::ObjectStore::RangeReader reader;
  reader.piece_bytes = piece_bytes_;
  reader.buffer = [this] {
    std::string b;
    if (!pool_.empty()) {
      b = std::move(pool_.back());
      pool_.pop_back();
    }
    return b;
  };
  reader.piece = [this, i, attempt, first_piece](size_t index, std::string piece) {
    Arrived(i, attempt, first_piece + index, std::move(piece));
  };
  reader.done = [this, key](Status s) { Fetched(s, key); };
  return reader;
}

// Piece `k` of object `i` is in.
void GetJob::Arrived(size_t i, int attempt, size_t k, std::string piece) {
  auto it = slots_.find(i);
  if (it == slots_.end() || it->second.attempt != attempt || !error_.ok()) return;
  Slot& s = it->second;
  downloaded_bytes_ += piece.size();
  s.received += piece.size();
  held_bytes_ += piece.size();
  peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes_);
  s.parts[k] = std::move(piece);
  s.arrived[k] = true;
  OnArrived(i, s, k);
  Pump();
}

// It may end after its last piece was hashed and written and every writer
// is done (a store reports the end of a transfer after its last byte), so
// it may be what finishes the get.
void GetJob::Fetched(const Status& s, const std::string& key) {
  inflight_--;
  if (!s.ok()) return Fail(s.With("download of " + key));
  Pump();
  MaybeFinish();
}

double GetJob::BackoffDelay(int retry) const {
  return std::min(options_.verify_backoff_max_s,
                  options_.verify_backoff_s * static_cast<double>(1 << std::min(retry, 6)));
}

void GetJob::AfterBackoff(double delay, std::function<void()> fn) {
  backoffs_++;
  std::weak_ptr<bool> alive = alive_;
  loop_.After(delay, [this, alive, fn = std::move(fn)] {
    if (alive.expired()) return;
    backoffs_--;
    if (!error_.ok()) return MaybeFinish();
    fn();
  });
}

void GetJob::ObjectVerified(size_t index, Slot& slot) {
  const Object& o = objects_[index];
  Ready ready{index, std::move(slot.parts), true};
  slots_.erase(index);
  queues_[o.output]->Push(o.output_pos, std::move(ready));
}

void GetJob::ObjectMismatched(size_t index, Slot& slot, const std::string& what) {
  int attempt = slot.attempt;
  Recycle(std::move(slot.parts));
  slots_.erase(index);
  if (attempt >= options_.verify_retries) {
    return Fail(Error(ErrorCode::kCorrupt, what + " (after " + std::to_string(attempt + 1) + " downloads)"));
  }
  md5_retries_++;
  util::LogWarning(what + "; downloading it again");
  AfterBackoff(BackoffDelay(attempt), [this, index, attempt] {
    Admit(index, attempt + 1);
    Pump();
  });
}

void GetJob::Recycle(std::vector<std::string> parts) {
  for (auto& p : parts) {
    held_bytes_ -= p.size();
    if (pool_.size() >= kPoolLimit || p.capacity() == 0) continue;
    pool_.push_back(std::move(p));
  }
}

void GetJob::Fail(Status s) {
  if (error_.ok()) error_ = std::move(s);
  for (auto& q : queues_) q->Cancel();
  hash_.Cancel();  // what no thread took holds nothing to release
  store_.CancelAll();
  MaybeFinish();
}

// Done when every writer has ended and no request or backoff is outstanding
// (after an error, CancelAll ends the requests promptly).
void GetJob::MaybeFinish() {
  if (finished_ || writers_running_ > 0 || inflight_ > 0 || backoffs_ > 0) return;
  finished_ = true;
  loop_.Stop();
}

void GetJob::StartProgress() {
  if (options_.progress_interval.count() <= 0) return;
  std::weak_ptr<bool> alive = alive_;
  loop_.After(static_cast<double>(options_.progress_interval.count()) / 1000.0, [this, alive] {
    if (alive.expired() || finished_) return;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    util::LogInfo("get " + options_.name + ": downloaded " + util::HumanBytes(downloaded_bytes_) + " of " +
                  util::HumanBytes(total_bytes_) + " (" + std::to_string(done_objects_) + " of " +
                  std::to_string(objects_.size()) + " objects), written " +
                  util::HumanBytes(written_.load()) + ", in flight " + std::to_string(inflight_) +
                  ", retries " + std::to_string(store_.stats().retries + md5_retries_) + ", " +
                  util::HumanBytes(
                      secs > 0 ? static_cast<uint64_t>(static_cast<double>(downloaded_bytes_) / secs) : 0) +
                  "/s");
    StartProgress();
  });
}

}  // namespace xbak::cloud
