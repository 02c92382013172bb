// The download side of `xbcloud get`: one job on the event loop that keeps
// `parallel` requests in flight over a window of objects, hands their bytes
// to the hashing threads as they arrive, and passes what is verified to the
// outputs' queues (get_output.h). Internal to `xbcloud get` (get.cc).
//
// Two download modes, one class each, chosen by what the manifest holds:
// - WholeObjectGet (get_whole.cc): each object's MD5 is checked over the
//   whole object before a byte of it is written (version 1 manifests, and
//   backups read without a manifest, from their .md5 sidecars).
// - PieceCheckedGet (get_by_piece.cc): the manifest has every piece's MD5
//   (version 2), so each piece is checked and written as it arrives.
//
// GetJob holds what they share: the window, the requests and their ranges,
// retries with backoff, failure and the end of the job, progress. It lives
// on the loop thread; the writer and hashing threads reach it only through
// EventLoop::Post (Written, WriterDone, Hashed).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "get_output.h"
#include "get_plan.h"
#include "xbak/cloud/get.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/md5_multi.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/batch_queue.h"
#include "xbak/util/status.h"

namespace xbak::cloud {

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
using HashQueue = util::BatchQueue<HashWork>;

// Most pieces of work one hashing thread takes at once: the lanes of Md5Advance.
constexpr size_t kHashBatch = 8;

class GetJob {
 public:
  // The job for `plan`'s download mode.
  static std::unique_ptr<GetJob> Make(storage::EventLoop& loop, storage::ObjectStore& store,
                                      const GetOptions& options, GetPlan plan);
  virtual ~GetJob() = default;
  GetJob(const GetJob&) = delete;
  GetJob& operator=(const GetJob&) = delete;

  OutputQueue& queue(size_t i) { return *queues_[i]; }
  HashQueue& hash_queue() { return hash_; }
  const Status& error() const { return error_; }
  std::atomic<uint64_t>& written() { return written_; }
  GetStats stats() const;

  void Start();
  // A writer finished writing what it took; the buffers are kept for the
  // next downloads to reuse.
  void Written(size_t index, std::vector<std::string> parts, bool last);
  void WriterDone(Status s);
  // From a hashing thread: `parts` more pieces of object `index` are in its
  // MD5, or (checked by piece) the MD5 of its piece `piece` is done.
  void Hashed(size_t index, int attempt, size_t piece, size_t parts);

 protected:
  // An object in the window that is not yet verified. The hashing threads
  // read `parts` up to the ones being hashed and write the MD5 states and
  // digests while they have them; the loop thread touches neither meanwhile
  // (it only fills later parts, distinct strings in a vector that never
  // resizes).
  struct Slot {
    int attempt = 0;
    std::vector<std::string> parts;  // one per piece, filled as they arrive
    std::vector<bool> arrived;
    size_t ranges = 1;  // requests the object is fetched by
    uint64_t received = 0;
    size_t requested = 0;      // ranges asked for, in order
    uint64_t range_bytes = 0;  // every range but the last: whole pieces
    bool md5_pending = false;  // its sidecar is being read
    // Checked whole: the object's running MD5.
    size_t hashed = 0;     // pieces in md5_state
    bool hashing = false;  // a step is with the hashing threads
    storage::Md5State md5_state;
    storage::Md5Digest digest{};
    // Checked by piece: each piece's own MD5, written by the hashing
    // threads while that piece is with them.
    std::vector<storage::Md5State> piece_state;
    std::vector<storage::Md5Digest> piece_digest;
    std::vector<bool> verified;
    size_t released = 0;  // pieces handed to the writer (a verified prefix)
    size_t written = 0;   // pieces the writer has written (of this object)
    int piece_retries = 0;
  };

  GetJob(storage::EventLoop& loop, storage::ObjectStore& store, const GetOptions& options, GetPlan plan,
         uint64_t piece_bytes, size_t window, bool flow_control);

  // The mode's hooks.
  // Piece k of object i is in slot s.
  virtual void OnArrived(size_t i, Slot& s, size_t k) = 0;
  // The hashing threads are done with a step of object `index` (Hashed).
  virtual void OnHashed(size_t index, Slot& s, size_t piece, size_t parts) = 0;
  // Flow control: whether the range of object i from `first_piece` may read
  // another piece now.
  virtual bool MayRead(size_t i, const Slot& s, size_t first_piece) const = 0;
  // Whether a download may start now (an object's first range, or a new one).
  virtual bool StaggerAllows() const { return true; }
  // Whether another object may enter the window (beyond the window's size).
  virtual bool RoomForAnother() const { return true; }
  // Ranges an object is fetched in at least, to keep --parallel requests going.
  virtual uint64_t RangesForParallel() const { return 1; }
  // How many pieces the hashing threads wait for to hash together.
  virtual size_t HashWant() const = 0;
  // Sets up a slot for the mode, when the object has `pieces` pieces.
  virtual void SetUp(size_t /*i*/, Slot& /*s*/, size_t /*pieces*/) {}
  // A writer has written (and handed back) some of what was held.
  virtual void OnWritten() {}

  // For the modes.
  void Pump();
  void Admit(size_t i, int attempt);
  // Object `index` (checked whole) matched: all of it goes to its writer.
  void ObjectVerified(size_t index, Slot& slot);
  // Object `index` did not match its MD5 (`what` says how): its bytes are
  // dropped and it is downloaded again after a backoff or, out of attempts,
  // the get fails naming it. It keeps its place in the window meanwhile.
  void ObjectMismatched(size_t index, Slot& slot, const std::string& what);
  // Runs `fn` on the loop after `delay` seconds, unless the job is gone or
  // failed meanwhile.
  void AfterBackoff(double delay, std::function<void()> fn);
  double BackoffDelay(int retry) const;
  storage::ObjectStore::RangeReader ReaderFor(size_t i, int attempt, size_t first_piece,
                                              const std::string& key);
  void UpdateHashWant() { hash_.SetWant(HashWant()); }
  void Recycle(std::vector<std::string> parts);
  void Fail(Status s);
  std::string Key(const Object& o) const { return DataObjectKey(options_.name, o.entry.path, o.entry.seq); }

  storage::EventLoop& loop_;
  storage::ObjectStore& store_;
  const GetOptions& options_;
  std::vector<Object> objects_;
  std::vector<std::unique_ptr<OutputQueue>> queues_;
  HashQueue hash_;
  // Loop thread only:
  const uint64_t piece_bytes_;
  const size_t window_;
  const bool flow_control_;       // downloads held when ahead of their MD5 (RangeReader::may_read)
  std::map<size_t, Slot> slots_;  // by place in the global order: oldest first
  uint64_t held_bytes_ = 0, peak_held_bytes_ = 0;  // pieces received and not yet written
  size_t inflight_ = 0, held_ = 0, backoffs_ = 0;
  uint64_t md5_retries_ = 0;

 private:
  uint64_t RangeCount(uint64_t size) const;
  void RequestRange(size_t i, Slot& slot);
  void Arrived(size_t i, int attempt, size_t k, std::string piece);
  // A request (a range, or an empty object) ended.
  void Fetched(const Status& s, const std::string& key);
  void MaybeFinish();
  void StartProgress();

  // Spare range buffers kept for reuse (a fresh one costs a page fault per
  // 4 KiB); more than a window's worth would only be memory.
  static constexpr size_t kPoolLimit = 64;

  std::atomic<uint64_t> written_{0};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  size_t writers_running_;
  size_t next_ = 0, peak_held_ = 0;
  uint64_t total_bytes_ = 0, downloaded_bytes_ = 0, done_objects_ = 0, requests_ = 0;
  std::vector<std::string> pool_;  // buffers of written ranges
  Status error_;
  bool finished_ = false;
};

// The two modes (get_whole.cc, get_by_piece.cc), for GetJob::Make.
std::unique_ptr<GetJob> MakeWholeObjectGet(storage::EventLoop& loop, storage::ObjectStore& store,
                                           const GetOptions& options, GetPlan plan);
std::unique_ptr<GetJob> MakePieceCheckedGet(storage::EventLoop& loop, storage::ObjectStore& store,
                                            const GetOptions& options, GetPlan plan);

}  // namespace xbak::cloud
