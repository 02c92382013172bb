// `xbcloud get` checking piece by piece: the manifest has the MD5 of every
// piece of every object (version 2), so each piece is checked on its own as
// it arrives, and an object's verified pieces go to its writer at once, in
// order. The pieces share the vector lanes whichever object they belong to,
// so the lanes stay full with few objects in flight, and an object is no
// longer held until its last byte. What is received and not yet written is
// held within a budget (GetOptions::buffer_bytes), the objects to be
// written first served first; beyond it downloads are held. A piece that
// fails its MD5 is fetched again alone.
#include <algorithm>

#include "get_job.h"
#include "xbak/storage/md5.h"
#include "xbak/util/log.h"

namespace xbak::cloud {
namespace {

class PieceCheckedGet final : public GetJob {
 public:
  // `budget`: bytes received and not yet written, at most (about: a
  // download reading a piece holds part of one more); `head`: of those, at
  // most for the range a writer waits for.
  PieceCheckedGet(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options,
                  GetPlan plan, uint64_t piece_bytes, size_t window, uint64_t budget, uint64_t head)
      : GetJob(loop, store, options, std::move(plan), piece_bytes, window, /*flow_control=*/true),
        budget_bytes_(budget),
        head_bytes_(head) {}

 private:
  void SetUp(size_t i, Slot& slot, size_t pieces) override {
    if (objects_[i].entry.size == 0) return;  // no piece: checked whole (OnArrived)
    slot.piece_state.resize(pieces);
    slot.piece_digest.resize(pieces);
    slot.verified.assign(pieces, false);
  }

  void OnArrived(size_t i, Slot& slot, size_t k) override {
    const Object& o = objects_[i];
    if (o.entry.size > 0) return HashPiece(i, slot, k);
    // An empty object has no piece MD5 to check: its bytes (none, unless
    // the store is wrong) against the object's MD5, here, is all there is.
    if (!slot.parts[0].empty() || storage::Md5(slot.parts[0]) != o.entry.md5) {
      std::string what = "object " + Key(o) + " is corrupt: " + std::to_string(slot.parts[0].size()) +
                         " bytes or its MD5, expected an empty object";
      return ObjectMismatched(i, slot, what);
    }
    ObjectVerified(i, slot);
  }

  // Piece `k` of object `i` goes to the hashing threads alone (it has its
  // own MD5).
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

  // The MD5 of piece `k` of object `index` is done. A match joins the
  // verified pieces, which go to the writer as far as they are in order; a
  // mismatch is fetched again.
  void OnHashed(size_t index, Slot& slot, size_t k, size_t /*parts*/) override {
    if (!error().ok()) return;
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

  // Piece `k` did not match. Its range is downloaded again (after a
  // backoff); the pieces before it may be written already.
  void PieceMismatch(size_t index, Slot& slot, size_t k, const std::string& what) {
    if (slot.piece_retries >= options_.verify_retries) {
      return Fail(Error(ErrorCode::kCorrupt,
                        what + " (after " + std::to_string(slot.piece_retries + 1) + " downloads)"));
    }
    slot.piece_retries++;
    md5_retries_++;
    util::LogWarning(what + "; downloading those bytes again");
    held_bytes_ -= slot.parts[k].size();
    slot.received -= slot.parts[k].size();
    slot.parts[k] = std::string();
    int attempt = slot.attempt;
    AfterBackoff(BackoffDelay(slot.piece_retries - 1), [this, index, attempt, k] {
      const Object& o = objects_[index];
      std::string key = Key(o);
      uint64_t offset = k * piece_bytes_;
      inflight_++;
      store_.GetRange(key, {offset, std::min(piece_bytes_, o.entry.size - offset)},
                      ReaderFor(index, attempt, k, key));
    });
  }

  // The range a writer waits for may read while what it holds stays within
  // the budget (so that every output makes progress); any other while all
  // that is held (received and not yet written), this piece and one for
  // each older object downloading (so that the objects written sooner come
  // first) stay within it.
  bool MayRead(size_t i, const Slot& s, size_t first_piece) const override {
    size_t end = first_piece + static_cast<size_t>(s.range_bytes / piece_bytes_);
    if (first_piece <= s.released && s.released < end && IsHead(i)) {
      size_t next = first_piece;
      while (next < end && next < s.arrived.size() && s.arrived[next]) next++;
      return (next - s.written + 1) * piece_bytes_ <= head_bytes_;
    }
    return held_bytes_ + DownloadingBefore(i) * piece_bytes_ + piece_bytes_ <= budget_bytes_;
  }

  // The budget (memory), not the window, bounds a get checked by piece.
  bool RoomForAnother() const override {
    return slots_.empty() || held_bytes_ + (DownloadingBefore(SIZE_MAX) + 1) * piece_bytes_ <= budget_bytes_;
  }

  // Every piece is a lane's worth on its own.
  size_t HashWant() const override { return kHashBatch; }

  // Written pieces free budget: downloads held for it may go on.
  void OnWritten() override { store_.ResumeHeld(); }

  // Whether object i is the one its output's writer is on (the oldest of
  // that output in the window).
  bool IsHead(size_t i) const {
    size_t out = objects_[i].output;
    for (const auto& [index, slot] : slots_) {
      if (objects_[index].output == out) return index == i;
    }
    return false;
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

  const uint64_t budget_bytes_, head_bytes_;
};

}  // namespace

std::unique_ptr<GetJob> MakePieceCheckedGet(storage::EventLoop& loop, storage::ObjectStore& store,
                                            const GetOptions& options, GetPlan plan) {
  // The pieces are the manifest's.
  uint64_t piece_bytes = plan.piece_digest_bytes;
  uint64_t outputs = plan.output_counts.size();
  // The budget (memory) is what bounds a get checked by piece; the window
  // gives each object downloading about 4 pieces of it: more downloads,
  // each held more often, cost CPU and gained nothing (at 2 cores, 1 GiB: 4
  // downloads and 16 MiB took 1.3 s and 36 MiB peak RSS; 8 in the same
  // budget 1.55 s and 43 MiB). Each output's writer waits on its own
  // object, so each has a share for it.
  uint64_t budget = options.buffer_bytes > 0
                        ? std::max(options.buffer_bytes, 2 * piece_bytes)
                        : std::max({uint64_t{16} << 20, static_cast<uint64_t>(options.parallel) << 20,
                                    uint64_t{4} * outputs * piece_bytes});
  uint64_t head = std::max(2 * piece_bytes, budget / outputs);
  size_t window = options.window_objects > 0
                      ? options.window_objects
                      : std::max<size_t>(outputs + 2, static_cast<size_t>(budget / (4 * piece_bytes)));
  return std::make_unique<PieceCheckedGet>(loop, store, options, std::move(plan), piece_bytes, window, budget,
                                           head);
}

}  // namespace xbak::cloud
