#include "xbak/cloud/get.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "xbak/cloud/layout.h"
#include "xbak/cloud/sync.h"
#include "xbak/storage/md5_multi.h"
#include "xbak/util/batch_queue.h"
#include "xbak/util/log.h"
#include "xbak/util/progress.h"

namespace xbak::cloud {
namespace {

struct Object {
  ManifestEntry entry;
  bool md5_known = false;  // false: read the .md5 sidecar first (incomplete backups)
  size_t output = 0;       // which fd its file goes to
  size_t output_pos = 0;   // its place in that output's sequence
};

// Verified bytes of an object for its output's writer, in the pieces they
// were fetched in: all of the object, or (checked piece by piece) its next
// pieces.
struct Ready {
  size_t index = 0;  // the object
  std::vector<std::string> parts;
  bool last = true;  // the object's last bytes
};

// What is ready for one output, by the object's place in that output's
// order. Thread-safe.
class OutputQueue {
 public:
  void Push(size_t pos, Ready r) {
    {
      std::lock_guard<std::mutex> l(mu_);
      ready_[pos].push_back(std::move(r));
    }
    cv_.notify_all();
  }
  // Waits for the next bytes of object `pos`; false when cancelled.
  bool Take(size_t pos, Ready* out) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return cancelled_ || !ready_[pos].empty(); });
    if (cancelled_) return false;
    auto it = ready_.find(pos);
    *out = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) ready_.erase(it);
    return true;
  }
  void Cancel() {
    {
      std::lock_guard<std::mutex> l(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, std::deque<Ready>> ready_;
  bool cancelled_ = false;
};

// Hashing work: the next pieces of an object, to be added to its running
// MD5. One object's MD5 runs at about 600-700 MB/s on one core, whatever
// the core does (each step waits on the one before); eight objects hashed
// together in the vector lanes cost about what one does (storage/
// md5_multi.h). So every object is hashed piece by piece as it downloads, on
// a hashing thread that waits briefly for a piece of every object in flight
// and hashes them all at once: on 2 cores shared with MinIO, CPU is what a
// get's speed comes down to.
struct HashWork {
  size_t index = 0;  // the object
  int attempt = 0;
  size_t parts = 0;             // how many pieces this step covers
  size_t piece = kWholeObject;  // checked by piece: the piece this is the MD5 of
  storage::Md5Step step;
  static constexpr size_t kWholeObject = SIZE_MAX;
};
using HashQueue = BatchQueue<HashWork>;

// Most pieces of work one hashing thread takes at once: the lanes of Md5Advance.
constexpr size_t kHashBatch = 8;
// How long a hashing thread waits for a piece of every object downloading
// (the batch to fill). Pieces of 1 MiB arrive about every millisecond.
constexpr std::chrono::microseconds kHashLinger{2000};
// Most pieces of one object in one step: equal steps keep the lanes full.
constexpr size_t kStepPieces = 2;

Status WriteAll(int fd, const std::string& name, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) return Error(ErrorCode::kIo, "the reader of " + name + " went away (broken pipe)");
      return ErrnoError("write", name, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

// Loop-thread state of one get.
//
// Memory: at most `window_` objects are held at once (downloading, being
// hashed, or waiting for their writer), whatever --parallel says, so memory
// is at most that window times the object size (holding one object per
// request in flight cost 180 MiB at --parallel=16 with 10 MiB objects).
// It is usually about half that:
// - Each object is fetched by one GET whose body is handed over in pieces
//   as it arrives (ObjectStore::GetRange), hashed as it comes, and the
//   transfer is held when it gets more than read_ahead_pieces ahead of its
//   MD5 (the hashing, not the network, sets the pace on a fast link).
// - Objects start staggered (StaggerAllows), so that they are at different
//   fills and end one after the other rather than all filling up together.
//
// --parallel beyond the window is carried by byte ranges: an object is then
// fetched in parallel / window ranges at least, the oldest object's first;
// ranges that the MD5 has not reached yet are not held back.
//
// Checked by piece: when the manifest has the MD5 of every piece of every
// object (version 2), each piece is checked on its own as it arrives, and an
// object's verified pieces go to its writer at once, in order. The pieces
// share the vector lanes whichever object they belong to, so the lanes stay
// full with few objects in flight, and an object is no longer held until its
// last byte. What is received and not yet written is held within a budget
// (GetOptions::buffer_bytes), the objects to be written first served first;
// beyond it downloads are held. A piece that fails its MD5 is fetched again
// alone.
class GetJob {
 public:
  GetJob(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options,
         std::vector<Object> objects, size_t outputs, uint64_t piece_digest_bytes)
      : loop_(loop),
        store_(store),
        options_(options),
        objects_(std::move(objects)),
        writers_running_(outputs),
        by_piece_(piece_digest_bytes > 0) {
    for (size_t i = 0; i < outputs; i++) queues_.push_back(std::make_unique<OutputQueue>());
    // Checked by piece, the pieces are the manifest's; otherwise whole MD5
    // blocks, so that each can go into the object's MD5 as it comes.
    piece_bytes_ = by_piece_ ? piece_digest_bytes : std::max<uint64_t>(options.piece_bytes / 64 * 64, 64);
    if (by_piece_) {
      // The budget (memory) is what bounds a get checked by piece; the
      // window gives each object downloading about 4 pieces of it: more
      // downloads, each held more often, cost CPU and gained nothing (at 2
      // cores, 1 GiB: 4 downloads and 16 MiB took 1.3 s and 36 MiB peak
      // RSS; 8 in the same budget 1.55 s and 43 MiB). Each output's writer
      // waits on its own object, so each has a share for it.
      budget_bytes_ = options.buffer_bytes > 0
                          ? std::max(options.buffer_bytes, 2 * piece_bytes_)
                          : std::max({uint64_t{16} << 20, static_cast<uint64_t>(options.parallel) << 20,
                                      uint64_t{4} * outputs * piece_bytes_});
      head_bytes_ = std::max(2 * piece_bytes_, budget_bytes_ / outputs);
      window_ = options.window_objects > 0
                    ? options.window_objects
                    : std::max<size_t>(outputs + 2, static_cast<size_t>(budget_bytes_ / (4 * piece_bytes_)));
      flow_control_ = true;
    } else {
      // Per output one object being written and one ready behind it, plus
      // two being fetched and hashed: the writers never wait on a download
      // that could have run earlier. And one object per request up to 8:
      // the objects downloading are the objects hashed together (8 lanes),
      // so --parallel 8 buys speed with memory (at 2 cores, 1 GiB: 1.25 s
      // and 77 MiB peak RSS, against 1.5 s and 51 MiB with 4).
      window_ =
          options.window_objects > 0
              ? options.window_objects
              : std::max({size_t{4}, std::min<size_t>(static_cast<size_t>(options.parallel), kHashBatch),
                          outputs + 2});
      // No flow control with one request at a time: while it waited, the
      // network would idle; the window (objects downloaded ahead while one
      // is hashed) is the bound then.
      flow_control_ = options.read_ahead_pieces > 0 && options.parallel >= 2;
    }
    for (const auto& o : objects_) total_bytes_ += o.entry.size;
  }

  OutputQueue& queue(size_t i) { return *queues_[i]; }
  HashQueue& hash_queue() { return hash_; }
  const Status& error() const { return error_; }
  std::atomic<uint64_t>& written() { return written_; }
  GetStats stats() const {
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

  void Start() {
    UpdateHashWant();
    Pump();
    StartProgress();
  }

  // A writer finished writing what it took (through Post, from its thread);
  // the buffers are kept for the next downloads to reuse.
  void Written(size_t index, std::vector<std::string> parts, bool last) {
    if (auto it = slots_.find(index); it != slots_.end()) it->second.written += parts.size();
    if (last) {
      done_objects_++;
      held_--;
    }
    Recycle(std::move(parts));
    if (flow_control_ && by_piece_) store_.ResumeHeld();
    Pump();
  }

  void WriterDone(Status s) {
    writers_running_--;
    if (!s.ok()) Fail(s);
    MaybeFinish();
  }

  // From a hashing thread (through Post): `parts` more ranges of object
  // `index` are in its MD5, or (checked by piece) the MD5 of its piece
  // `piece` is done.
  void Hashed(size_t index, int attempt, size_t piece, size_t parts) {
    auto it = slots_.find(index);
    if (it == slots_.end() || it->second.attempt != attempt) return;  // cannot happen; be safe
    Slot& slot = it->second;
    if (piece != HashWork::kWholeObject) return PieceHashed(index, slot, piece);
    slot.hashing = false;
    slot.hashed += parts;
    if (flow_control_) store_.ResumeHeld();
    if (!error_.ok()) return;
    if (slot.hashed < slot.parts.size()) return MaybeHash(index, slot);
    const Object& o = objects_[index];
    uint64_t bytes = slot.md5_state.bytes;
    if (bytes != o.entry.size || slot.digest != o.entry.md5) {
      std::string what =
          "object " + Key(o) + " is corrupt: " +
          (bytes != o.entry.size
               ? std::to_string(bytes) + " bytes, expected " + std::to_string(o.entry.size)
               : "MD5 " + storage::Md5Hex(slot.digest) + ", expected " + storage::Md5Hex(o.entry.md5));
      Recycle(std::move(slot.parts));
      slots_.erase(it);
      return Mismatch(index, attempt, what);
    }
    Ready ready{index, std::move(slot.parts), true};
    slots_.erase(it);
    UpdateHashWant();
    queues_[o.output]->Push(o.output_pos, std::move(ready));
  }

 private:
  // An object in the window that is not yet verified. The hashing threads
  // read `parts` up to the ones being hashed and write md5_state/digest
  // while `hashing`; the loop thread touches neither meanwhile (it only
  // fills later parts, distinct strings in a vector that never resizes).
  struct Slot {
    int attempt = 0;
    std::vector<std::string> parts;  // one per piece, filled as they arrive
    std::vector<bool> arrived;
    size_t ranges = 1;  // requests the object is fetched by
    uint64_t received = 0;
    size_t requested = 0;      // ranges asked for, in order
    size_t hashed = 0;         // pieces in md5_state
    bool hashing = false;      // a step is with the hashing threads
    uint64_t range_bytes = 0;  // every range but the last: whole pieces
    bool md5_pending = false;  // its sidecar is being read
    storage::Md5State md5_state;
    storage::Md5Digest digest{};
    // Checked by piece (by_piece): each piece's own MD5, written by the
    // hashing threads while that piece is with them.
    bool by_piece = false;
    std::vector<storage::Md5State> piece_state;
    std::vector<storage::Md5Digest> piece_digest;
    std::vector<bool> verified;
    size_t released = 0;  // pieces handed to the writer (a verified prefix)
    size_t written = 0;   // pieces the writer has written (of this object)
    int piece_retries = 0;
  };

  void Pump() {
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
      // ... else the next object, while the window (and checked by piece,
      // the budget) has room.
      if (next_ >= objects_.size() || held_ >= window_ || !stagger_ok) break;
      if (by_piece_ && !slots_.empty() &&
          held_bytes_ + (DownloadingBefore(SIZE_MAX) + 1) * piece_bytes_ > budget_bytes_) {
        break;
      }
      held_++;
      peak_held_ = std::max(peak_held_, held_);
      Admit(next_++, 0);
    }
  }

  // Whether object i is the one its output's writer is on (the oldest of
  // that output in the window).
  bool IsHead(size_t i) const {
    size_t out = objects_[i].output;
    for (const auto& [index, slot] : slots_) {
      if (objects_[index].output == out) return index == i;
    }
    return false;
  }

  // Checked by piece: whether the range of object i from `first_piece` may
  // read another piece. The range its writer waits for may while what it
  // holds stays within the budget (so that every output makes progress);
  // any other while all that is held (received and not yet written), this
  // piece and one for each older object downloading (so that the objects
  // written sooner come first) stay within it.
  bool ByPieceMayRead(size_t i, const Slot& s, size_t first_piece) const {
    size_t end = first_piece + static_cast<size_t>(s.range_bytes / piece_bytes_);
    if (first_piece <= s.released && s.released < end && IsHead(i)) {
      size_t next = first_piece;
      while (next < end && next < s.arrived.size() && s.arrived[next]) next++;
      return (next - s.written + 1) * piece_bytes_ <= head_bytes_;
    }
    return held_bytes_ + DownloadingBefore(i) * piece_bytes_ + piece_bytes_ <= budget_bytes_;
  }

  // Objects before object i (all with SIZE_MAX) still downloading.
  size_t DownloadingBefore(size_t i) const {
    size_t n = 0;
    for (const auto& [index, slot] : slots_) {
      if (index >= i) break;
      if (slot.requested > 0 && slot.received < objects_[index].entry.size) n++;
    }
    return n;
  }

  // Objects start downloading staggered: a new one only when the one started
  // last has 1/streams of its bytes. Downloads progress at about the same
  // rate, so they then end one after the other and the objects in memory are
  // at different fills (about half the window's bytes) instead of all
  // filling up together.
  bool StaggerAllows() const {
    if (by_piece_) return true;  // checked by piece, the budget bounds what is held
    size_t streams = std::min<size_t>(static_cast<size_t>(options_.parallel), window_);
    const Slot* youngest = nullptr;
    uint64_t size = 0;
    for (const auto& [index, slot] : slots_) {
      if (slot.requested > 0) {
        youngest = &slot;
        size = objects_[index].entry.size;
      }
    }
    if (youngest == nullptr || youngest->received >= size) return true;
    return youngest->received * streams >= size;
  }

  std::string Key(const Object& o) const { return DataObjectKey(options_.name, o.entry.path, o.entry.seq); }

  // How many ranges an object of `size` bytes is fetched in.
  uint64_t RangeCount(uint64_t size) const {
    uint64_t min_range = std::max<uint64_t>(options_.min_range_bytes, 64);
    // Checked by piece, the budget, not the requests, bounds what a get
    // reads at once: a range would only be one more request.
    uint64_t by_parallel = by_piece_ ? 1 : (static_cast<uint64_t>(options_.parallel) + window_ - 1) / window_;
    uint64_t by_size =
        options_.range_bytes > 0 ? (size + options_.range_bytes - 1) / options_.range_bytes : 1;
    uint64_t n = std::max(by_parallel, by_size);
    return std::clamp<uint64_t>(n, 1, std::max<uint64_t>(size / min_range, 1));
  }

  void Admit(size_t i, int attempt) {
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
    if (by_piece_ && size > 0) {
      slot.by_piece = true;
      slot.piece_state.resize(pieces);
      slot.piece_digest.resize(pieces);
      slot.verified.assign(pieces, false);
    }
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

  void RequestRange(size_t i, Slot& slot) {
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
    // Flow control: once the MD5 has reached this range, it reads at most
    // options_.read_ahead_pieces beyond it. Hashing, not the network, is what holds the
    // pace on a fast link; unthrottled, every object would be downloaded
    // whole while it waits to be hashed, which is memory for nothing.
    // Checked by piece, what it may read comes from the budget
    // (ByPieceMayRead).
    if (flow_control_)
      reader.may_read = [this, i, attempt, first_piece] {
        auto it = slots_.find(i);
        if (it == slots_.end() || it->second.attempt != attempt) return true;
        const Slot& s = it->second;
        if (s.by_piece) return ByPieceMayRead(i, s, first_piece);
        if (first_piece > s.hashed) return true;  // a range further on, fetched for --parallel
        size_t next = first_piece;
        while (next < s.arrived.size() && s.arrived[next]) next++;
        return next < s.hashed + options_.read_ahead_pieces;
      };
    store_.GetRange(key, {offset, std::min(slot.range_bytes, o.entry.size - offset)}, std::move(reader));
  }

  // A reader handing the pieces of a range of object i from `first_piece`
  // to Arrived (in buffers from the pool) and its end to Fetched.
  storage::ObjectStore::RangeReader ReaderFor(size_t i, int attempt, size_t first_piece,
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
  void Arrived(size_t i, int attempt, size_t k, std::string piece) {
    auto it = slots_.find(i);
    if (it == slots_.end() || it->second.attempt != attempt || !error_.ok()) return;
    Slot& s = it->second;
    downloaded_bytes_ += piece.size();
    s.received += piece.size();
    held_bytes_ += piece.size();
    peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes_);
    s.parts[k] = std::move(piece);
    s.arrived[k] = true;
    if (s.by_piece) {
      HashPiece(i, s, k);
    } else {
      MaybeHash(i, s);
      UpdateHashWant();
    }
    Pump();
  }

  // Checked by piece: piece `k` of object `i` goes to the hashing threads
  // alone (it has its own MD5).
  void HashPiece(size_t i, Slot& slot, size_t k) {
    HashWork item;
    item.index = i;
    item.attempt = slot.attempt;
    item.parts = 1;
    item.piece = k;
    slot.piece_state[k] = storage::Md5State{};
    item.step.state = &slot.piece_state[k];
    item.step.pieces.push_back(slot.parts[k]);
    item.step.last = true;
    item.step.digest = &slot.piece_digest[k];
    hash_.Push(std::move(item));
  }

  // Checked by piece: the MD5 of piece `k` of object `index` is done. A
  // match joins the verified pieces, which go to the writer as far as they
  // are in order; a mismatch is fetched again.
  void PieceHashed(size_t index, Slot& slot, size_t k) {
    if (!error_.ok()) return;
    const Object& o = objects_[index];
    uint64_t want = std::min(piece_bytes_, o.entry.size - k * piece_bytes_);
    if (slot.parts[k].size() != want || slot.piece_digest[k] != o.entry.pieces[k]) {
      std::string what =
          "object " + Key(o) + " is corrupt at bytes " + std::to_string(k * piece_bytes_) + "-" +
          std::to_string(k * piece_bytes_ + want - 1) + ": " +
          (slot.parts[k].size() != want
               ? std::to_string(slot.parts[k].size()) + " bytes, expected " + std::to_string(want)
               : "MD5 " + storage::Md5Hex(slot.piece_digest[k]) + ", expected " +
                     storage::Md5Hex(o.entry.pieces[k]));
      return PieceMismatch(index, slot, k, what);
    }
    slot.verified[k] = true;
    Ready ready{index, {}, false};
    while (slot.released < slot.parts.size() && slot.verified[slot.released]) {
      ready.parts.push_back(std::move(slot.parts[slot.released++]));
    }
    if (ready.parts.empty()) return;
    ready.last = slot.released == slot.parts.size();
    if (ready.last) slots_.erase(index);
    queues_[o.output]->Push(o.output_pos, std::move(ready));
  }

  // Checked by piece: piece `k` did not match. Its range is downloaded
  // again (after a backoff); the pieces before it may be written already.
  void PieceMismatch(size_t index, Slot& slot, size_t k, const std::string& what) {
    if (slot.piece_retries >= options_.verify_retries) {
      return Fail(Error(ErrorCode::kCorrupt,
                        what + " (after " + std::to_string(slot.piece_retries + 1) + " downloads)"));
    }
    slot.piece_retries++;
    md5_retries_++;
    LogWarning(what + "; downloading those bytes again");
    held_bytes_ -= slot.parts[k].size();
    slot.received -= slot.parts[k].size();
    slot.parts[k] = std::string();
    backoffs_++;
    double delay =
        std::min(options_.verify_backoff_max_s,
                 options_.verify_backoff_s * static_cast<double>(1 << std::min(slot.piece_retries - 1, 6)));
    std::weak_ptr<bool> alive = alive_;
    int attempt = slot.attempt;
    loop_.After(delay, [this, alive, index, attempt, k] {
      if (alive.expired()) return;
      backoffs_--;
      if (!error_.ok()) return MaybeFinish();
      const Object& o = objects_[index];
      std::string key = Key(o);
      uint64_t offset = k * piece_bytes_;
      inflight_++;
      store_.GetRange(key, {offset, std::min(piece_bytes_, o.entry.size - offset)},
                      ReaderFor(index, attempt, k, key));
    });
  }

  // The hashing threads wait (briefly) for a piece of every object that is
  // downloading, to hash them together: one piece alone costs as much CPU
  // as eight at once.
  void UpdateHashWant() {
    size_t n = 0;
    for (const auto& [index, slot] : slots_) {
      if (slot.requested > 0 && slot.hashed < slot.parts.size()) n++;
    }
    // Checked by piece, every piece is a lane's worth on its own.
    hash_.SetWant(by_piece_ ? kHashBatch : std::min(n, kHashBatch));
  }

  // A request (a range, or an empty object) ended. It may end after its
  // last piece was hashed and written and every writer is done (a store
  // reports the end of a transfer after its last byte), so it may be what
  // finishes the get.
  void Fetched(const Status& s, const std::string& key) {
    inflight_--;
    if (!s.ok()) return Fail(s.With("download of " + key));
    Pump();
    MaybeFinish();
  }

  // Hands the object's next pieces that are in (and in order) to the
  // hashing threads, unless a step of it is there already.
  void MaybeHash(size_t i, Slot& slot) {
    if (slot.hashing || !error_.ok()) return;
    size_t end = slot.hashed;
    while (end < slot.parts.size() && slot.arrived[end] && (end - slot.hashed) < kStepPieces) end++;
    if (end == slot.hashed) return;
    HashWork item;
    item.index = i;
    item.attempt = slot.attempt;
    item.parts = end - slot.hashed;
    item.step.state = &slot.md5_state;
    for (size_t k = slot.hashed; k < end; k++) item.step.pieces.push_back(slot.parts[k]);
    item.step.last = end == slot.parts.size();
    item.step.digest = &slot.digest;
    slot.hashing = true;
    hash_.Push(std::move(item));
  }

  // Object `index` did not match. Downloads it again (after a backoff) or,
  // out of attempts, fails the get naming it. It keeps its place in the
  // window meanwhile.
  void Mismatch(size_t index, int attempt, const std::string& what) {
    if (attempt >= options_.verify_retries) {
      return Fail(
          Error(ErrorCode::kCorrupt, what + " (after " + std::to_string(attempt + 1) + " downloads)"));
    }
    md5_retries_++;
    LogWarning(what + "; downloading it again");
    backoffs_++;
    double delay = std::min(options_.verify_backoff_max_s,
                            options_.verify_backoff_s * static_cast<double>(1 << std::min(attempt, 6)));
    std::weak_ptr<bool> alive = alive_;
    loop_.After(delay, [this, alive, index, attempt] {
      if (alive.expired()) return;
      backoffs_--;
      if (!error_.ok()) return MaybeFinish();
      Admit(index, attempt + 1);
      Pump();
    });
  }

  void Recycle(std::vector<std::string> parts) {
    for (auto& p : parts) {
      held_bytes_ -= p.size();
      if (pool_.size() >= kPoolLimit || p.capacity() == 0) continue;
      pool_.push_back(std::move(p));
    }
  }

  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    for (auto& q : queues_) q->Cancel();
    hash_.Cancel();  // what no thread took holds nothing to release
    store_.CancelAll();
    MaybeFinish();
  }

  // Done when every writer has ended and no request or backoff is
  // outstanding (after an error, CancelAll ends the requests promptly).
  void MaybeFinish() {
    if (finished_ || writers_running_ > 0 || inflight_ > 0 || backoffs_ > 0) return;
    finished_ = true;
    loop_.Stop();
  }

  void StartProgress() {
    if (options_.progress_interval.count() <= 0) return;
    std::weak_ptr<bool> alive = alive_;
    loop_.After(static_cast<double>(options_.progress_interval.count()) / 1000.0, [this, alive] {
      if (alive.expired() || finished_) return;
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      LogInfo(
          "get " + options_.name + ": downloaded " + HumanBytes(downloaded_bytes_) + " of " +
          HumanBytes(total_bytes_) + " (" + std::to_string(done_objects_) + " of " +
          std::to_string(objects_.size()) + " objects), written " + HumanBytes(written_.load()) +
          ", in flight " + std::to_string(inflight_) + ", retries " +
          std::to_string(store_.stats().retries + md5_retries_) + ", " +
          HumanBytes(secs > 0 ? static_cast<uint64_t>(static_cast<double>(downloaded_bytes_) / secs) : 0) +
          "/s");
      StartProgress();
    });
  }

  // Spare range buffers kept for reuse (a fresh one costs a page fault per
  // 4 KiB); more than a window's worth would only be memory.
  static constexpr size_t kPoolLimit = 64;

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  const GetOptions& options_;
  std::vector<Object> objects_;
  std::vector<std::unique_ptr<OutputQueue>> queues_;
  HashQueue hash_;
  std::atomic<uint64_t> written_{0};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  // Loop thread only:
  size_t writers_running_;
  const bool by_piece_;  // the manifest has every piece's MD5: objects are checked by piece
  // Checked by piece: bytes received and not yet written, at most (about;
  // a download reading a piece holds part of one more), and of those, at
  // most for the range a writer waits for.
  uint64_t budget_bytes_ = 0, head_bytes_ = 0;
  uint64_t piece_bytes_ = 0;
  bool flow_control_ = false;  // downloads held when ahead of their MD5 (RangeReader::may_read)
  uint64_t held_bytes_ = 0, peak_held_bytes_ = 0;  // pieces received and not yet written
  size_t window_ = 0, next_ = 0, inflight_ = 0, held_ = 0, peak_held_ = 0, backoffs_ = 0;
  uint64_t total_bytes_ = 0, downloaded_bytes_ = 0, done_objects_ = 0, md5_retries_ = 0, requests_ = 0;
  std::map<size_t, Slot> slots_;   // by place in the global order: oldest first
  std::vector<std::string> pool_;  // buffers of written ranges
  Status error_;
  bool finished_ = false;
};

// Lists a backup that has no manifest: its data objects, MD5s to be read
// from their sidecars. Each file is cut at its first object that is missing
// or has no sidecar (an interrupted put leaves such gaps): what follows could
// not be placed in order, nor verified.
Result<std::vector<ManifestEntry>> ListObjects(storage::EventLoop& loop, storage::ObjectStore& store,
                                               const std::string& name) {
  std::vector<ManifestEntry> found;
  std::set<std::string> sidecars;
  std::string token;
  do {
    XBAK_ASSIGN_OR_RETURN(auto page, ListSync(loop, store, name + "/", token));
    for (const auto& o : page.objects) {
      ManifestEntry e;
      if (ParseDataObjectKey(name, o.key, &e.path, &e.seq)) {
        e.size = o.size;
        found.push_back(std::move(e));
      } else if (o.key.ends_with(kMd5Suffix)) {
        sidecars.insert(o.key.substr(0, o.key.size() - kMd5Suffix.size()));
      }
    }
    token = page.next_token;
  } while (!token.empty());
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return std::tie(a.path, a.seq) < std::tie(b.path, b.seq); });
  std::vector<ManifestEntry> entries;
  for (size_t i = 0; i < found.size(); i++) {
    const ManifestEntry& e = found[i];
    bool continues =
        e.seq == 0 || (!entries.empty() && entries.back().path == e.path && entries.back().seq + 1 == e.seq);
    if (!continues) continue;
    if (!sidecars.count(DataObjectKey(name, e.path, e.seq))) {
      LogWarning("object " + DataObjectKey(name, e.path, e.seq) + " has no md5 sidecar: " + e.path +
                 " is cut there");
      continue;
    }
    entries.push_back(e);
  }
  return entries;
}

}  // namespace

Status CloudGet(storage::EventLoop& loop, storage::ObjectStore& store, const std::vector<int>& fds,
                const std::vector<std::string>& names, const GetOptions& options, GetStats* stats) {
  XBAK_RETURN_IF_ERROR(CheckBackupName(options.name));
  if (fds.empty()) return Error(ErrorCode::kInvalidArgument, "no output stream");
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");

  // The manifest says the backup is complete and what it holds.
  std::vector<ManifestEntry> entries;
  bool md5_known = true;
  auto manifest = GetSync(loop, store, ManifestKey(options.name));
  if (manifest.ok()) {
    auto parsed = ParseManifest(*manifest);
    if (!parsed.ok()) return parsed.status().With(ManifestKey(options.name) + " in " + store.Describe());
    entries = std::move(parsed.value());
  } else if (manifest.status().code() == ErrorCode::kNotFound) {
    XBAK_ASSIGN_OR_RETURN(entries, ListObjects(loop, store, options.name));
    if (entries.empty()) {
      return Error(ErrorCode::kNotFound, "backup " + options.name + " not found in " + store.Describe());
    }
    if (!options.allow_incomplete) {
      return Error(ErrorCode::kCorrupt,
                   "backup " + options.name + " in " + store.Describe() +
                       " is incomplete: it has no completion marker (" + ManifestKey(options.name) +
                       "), so its put did not finish; --allow-incomplete reads it anyway");
    }
    LogWarning("backup " + options.name + " has no completion marker; reading the " +
               std::to_string(entries.size()) + " objects it has (--allow-incomplete)");
    md5_known = false;
  } else {
    return manifest.status();
  }

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

  // Files to outputs: each file on one output, outputs balanced by bytes.
  std::vector<std::vector<Object>> per_output(fds.size());
  std::vector<uint64_t> load(fds.size(), 0);
  size_t files = 0;
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    uint64_t bytes = 0;
    while (j < entries.size() && entries[j].path == entries[i].path) bytes += entries[j++].size;
    size_t out = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[out] += bytes;
    for (; i < j; i++) {
      per_output[out].push_back({entries[i], md5_known, out, per_output[out].size()});
    }
    files++;
  }
  // One global download order that takes from every output in turn, so that
  // every writer has work and the window always holds the oldest objects.
  std::vector<Object> order;
  order.reserve(entries.size());
  for (size_t k = 0;; k++) {
    bool any = false;
    for (auto& v : per_output) {
      if (k < v.size()) {
        order.push_back(v[k]);
        any = true;
      }
    }
    if (!any) break;
  }

  // Checked by piece if every object has its pieces' MD5s (of one size).
  uint64_t piece_digest_bytes = md5_known && !order.empty() ? order.front().entry.piece_bytes : 0;
  for (const auto& o : order) {
    if (o.entry.piece_bytes != piece_digest_bytes ||
        o.entry.pieces.size() != PieceCount(o.entry.size, o.entry.piece_bytes)) {
      piece_digest_bytes = 0;
    }
  }
  GetJob job(loop, store, options, std::move(order), fds.size(), piece_digest_bytes);
  std::vector<std::thread> writers;
  for (size_t out = 0; out < fds.size(); out++) {
    std::string name = out < names.size() ? names[out] : "output " + std::to_string(out);
    size_t count = per_output[out].size();
    writers.emplace_back([&loop, &job, out, count, fd = fds[out], name] {
      Status s;
      for (size_t pos = 0; pos < count && s.ok(); pos++) {
        Ready r;  // verified
        do {
          if (!job.queue(out).Take(pos, &r)) {
            s = Error(ErrorCode::kCancelled, "cancelled");
            break;
          }
          for (const auto& part : r.parts) {
            s = WriteAll(fd, name, part.data(), part.size());
            if (!s.ok()) break;
            job.written() += part.size();
          }
          loop.Post([&job, index = r.index, parts = std::move(r.parts), last = r.last]() mutable {
            job.Written(index, std::move(parts), last);
          });
        } while (s.ok() && !r.last);
      }
      loop.Post([&job, s] { job.WriterDone(s); });
    });
  }
  // With vector MD5 one thread hashes ~1.2 GB/s (two objects' ranges
  // waiting) to 4 GB/s (eight): one per 4 cores, so that work queues up and
  // shares its lanes (two threads on 2 cores took each piece alone, for 25%
  // more CPU and no gain in time). Without it, one object per core at once.
  unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
  unsigned nhash = storage::Md5ManyIsVectorized() ? std::max(cores / 4, 1u) : std::min(cores, 8u);
  std::vector<std::thread> hashers;
  for (unsigned v = 0; v < nhash; v++) {
    hashers.emplace_back([&loop, &job] {
      std::vector<HashWork> items;
      std::vector<storage::Md5Step> steps;
      while (job.hash_queue().PopSome(kHashBatch, &items, kHashLinger)) {
        steps.clear();
        for (auto& item : items) steps.push_back(item.step);
        storage::Md5Advance(steps);
        std::vector<std::tuple<size_t, int, size_t, size_t>> hashed;
        for (const auto& item : items) hashed.emplace_back(item.index, item.attempt, item.piece, item.parts);
        loop.Post([&job, hashed = std::move(hashed)] {
          for (const auto& [index, attempt, piece, parts] : hashed) job.Hashed(index, attempt, piece, parts);
        });
      }
    });
  }
  job.Start();
  loop.Run();
  job.hash_queue().Close();
  for (auto& t : hashers) t.join();
  for (auto& t : writers) t.join();
  auto st = job.stats();
  st.files = files;
  if (stats != nullptr) *stats = st;
  if (!job.error().ok()) return job.error().With("xbcloud get " + options.name + " failed");
  LogInfo("get " + options.name + ": done, " + HumanBytes(st.bytes_written) + " in " +
          std::to_string(st.objects) + " objects (" + std::to_string(files) + " files) by " +
          std::to_string(st.requests) + " GETs, " + std::to_string(store.stats().retries + st.md5_retries) +
          " retries");
  return Status::Ok();
}

}  // namespace xbak::cloud
