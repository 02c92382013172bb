// `xbcloud get` checking each object whole: its MD5 runs over its pieces in
// order as they arrive, and no byte of it is written before the whole MD5
// and size match the manifest (or, read without a manifest, its .md5
// sidecar). Used for version 1 manifests and incomplete backups.
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
#include <algorithm>

#include "get_job.h"
#include "xbak/storage/md5.h"

namespace xbak::cloud {
namespace {

// Most pieces of one object in one step: equal steps keep the lanes full.
constexpr size_t kStepPieces = 2;

class WholeObjectGet final : public GetJob {
 public:
  WholeObjectGet(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options,
                 GetPlan plan, uint64_t piece_bytes, size_t window, bool flow_control)
      : GetJob(loop, store, options, std::move(plan), piece_bytes, window, flow_control) {}

  // Whole MD5 blocks, so that each piece can go into the object's MD5 as it comes.
  static uint64_t PieceBytes(const GetOptions& o) { return std::max<uint64_t>(o.piece_bytes / 64 * 64, 64); }

  // Per output one object being written and one ready behind it, plus two
  // being fetched and hashed: the writers never wait on a download that
  // could have run earlier. And one object per request up to 8: the objects
  // downloading are the objects hashed together (8 lanes), so --parallel 8
  // buys speed with memory (at 2 cores, 1 GiB: 1.25 s and 77 MiB peak RSS,
  // against 1.5 s and 51 MiB with 4).
  static size_t Window(const GetOptions& o, size_t outputs) {
    if (o.window_objects > 0) return o.window_objects;
    return std::max({size_t{4}, std::min<size_t>(static_cast<size_t>(o.parallel), kHashBatch), outputs + 2});
  }

 private:
  void OnArrived(size_t i, Slot& s, size_t /*k*/) override {
    MaybeHash(i, s);
    UpdateHashWant();
  }

  void OnHashed(size_t index, Slot& slot, size_t /*piece*/, size_t parts) override {
    slot.hashing = false;
    slot.hashed += parts;
    if (flow_control_) store_.ResumeHeld();
    if (!error().ok()) return;
    if (slot.hashed < slot.parts.size()) return MaybeHash(index, slot);
    const Object& o = objects_[index];
    uint64_t bytes = slot.md5_state.bytes;
    if (bytes != o.entry.size || slot.digest != o.entry.md5) {
      std::string what =
          "object " + Key(o) + " is corrupt: " +
          (bytes != o.entry.size
               ? std::to_string(bytes) + " bytes, expected " + std::to_string(o.entry.size)
               : "MD5 " + storage::Md5Hex(slot.digest) + ", expected " + storage::Md5Hex(o.entry.md5));
      return ObjectMismatched(index, slot, what);
    }
    ObjectVerified(index, slot);
    UpdateHashWant();
  }

  // Once the MD5 has reached this range, it reads at most read_ahead_pieces
  // beyond it.
  bool MayRead(size_t /*i*/, const Slot& s, size_t first_piece) const override {
    if (first_piece > s.hashed) return true;  // a range further on, fetched for --parallel
    size_t next = first_piece;
    while (next < s.arrived.size() && s.arrived[next]) next++;
    return next < s.hashed + options_.read_ahead_pieces;
  }

  // Objects start downloading staggered: a new one only when the one started
  // last has 1/streams of its bytes. Downloads progress at about the same
  // rate, so they then end one after the other and the objects in memory are
  // at different fills (about half the window's bytes) instead of all
  // filling up together.
  bool StaggerAllows() const override {
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

  uint64_t RangesForParallel() const override {
    return (static_cast<uint64_t>(options_.parallel) + window_ - 1) / window_;
  }

  // The hashing threads wait (briefly) for a piece of every object that is
  // downloading, to hash them together: one piece alone costs as much CPU
  // as eight at once.
  size_t HashWant() const override {
    size_t n = 0;
    for (const auto& [index, slot] : slots_) {
      if (slot.requested > 0 && slot.hashed < slot.parts.size()) n++;
    }
    return std::min(n, kHashBatch);
  }

  // Hands the object's next pieces that are in (and in order) to the
  // hashing threads, unless a step of it is there already.
  void MaybeHash(size_t i, Slot& slot) {
    if (slot.hashing || !error().ok()) return;
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
};

}  // namespace

std::unique_ptr<GetJob> MakeWholeObjectGet(storage::EventLoop& loop, storage::ObjectStore& store,
                                           const GetOptions& options, GetPlan plan) {
  uint64_t piece_bytes = WholeObjectGet::PieceBytes(options);
  size_t window = WholeObjectGet::Window(options, plan.output_counts.size());
  // No flow control with one request at a time: while it waited, the
  // network would idle; the window (objects downloaded ahead while one is
  // hashed) is the bound then.
  bool flow_control = options.read_ahead_pieces > 0 && options.parallel >= 2;
  return std::make_unique<WholeObjectGet>(loop, store, options, std::move(plan), piece_bytes, window,
                                          flow_control);
}

}  // namespace xbak::cloud
