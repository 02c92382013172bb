// `xbak --restore --from-stream`: an incremental's deltas written into the
// datadir's files as its stream arrives, instead of unpacked into the staging
// directory and copied from there once the stream is whole (which wrote and
// read each delta page twice more, and left the last incremental's deltas
// all to after the download).
//
// The order this keeps: the two-step path applies step K's redo log, then
// incremental K+1's deltas. Here, K+1's deltas of a table go in before K's
// log is applied, once K's own deltas and DDL markers are in (the gate of
// stream K+1, opened by the redo step of K when it starts). That gives the
// same bytes because K's redo step then leaves those pages out (they are in
// the page set it is given, delta_pages.h), and would skip their records
// anyway: a page copied by K+1 carries a newer LSN than every record of K's
// log. What K's log does beyond changing pages is not reordered: a delta goes
// in as it arrives only into the file the datadir has under its name, holding
// the same tablespace (same space id; the first page of the delta says), of
// the same page format, neither encrypted, PAGE_COMPRESSED nor
// ROW_FORMAT=COMPRESSED, and not one K's log creates, renames, drops or
// re-encrypts (prepare::LogDdl). Any other delta (the system and undo
// tablespaces, a table re-created between the backups, an encrypted
// stream's) is staged as before. A compressed delta (.zst, .lz4) is
// decompressed as it comes.
//
// Each page is checked (checksum, page number, space id) before it is
// written; the staged incremental keeps a NAME.xbapplied record of it
// (prepare/applied_delta.h). The chain link of stream K+1 is checked when it
// is whole, as before: a broken one stops the restore with the datadir still
// marked unfinished.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "xbak/prepare/redo_apply.h"
#include "xbak/stream/xbstream.h"

namespace xbak::restore {

class DirectDeltas {
 public:
  DirectDeltas(std::string datadir, size_t streams);

  // Step k-1's deltas and DDL markers are in the datadir, and its redo log
  // (not applied yet) does `ddl`: incremental k's deltas of other tables may
  // go in from now. The first call for k decides; later ones are ignored.
  void Open(size_t k, uint32_t page_size, const prepare::LogDdl& ddl);
  // Every delta not decided yet is staged (the restore failed or stops):
  // nothing waits for a gate any more.
  void CloseAll();

  // The extract filter of stream k (whose staging directory is `staging`).
  // At a delta, it waits for stream k's gate for at most `wait` (the stream
  // pauses; its producer waits on the pipe); a delta that comes earlier than
  // that is staged, so a long redo step before does not hold a download.
  stream::ExtractFilterFactory Filter(size_t k, std::string staging,
                                      std::chrono::milliseconds wait = std::chrono::seconds(10));

  // "N deltas (X MiB) written as they arrived, M staged" for stream k.
  std::string Summary(size_t k) const;

 private:
  struct Gate {
    uint32_t page_size = 0;
    prepare::LogDdl ddl;
  };
  struct GateState {
    bool decided = false;
    std::shared_ptr<const Gate> open;  // null: closed
  };
  struct Counts {
    std::atomic<uint64_t> direct{0}, staged{0}, bytes{0};
  };
  // Waits at most `wait` for stream k's gate: its facts when open, null when
  // closed or not decided in time.
  std::shared_ptr<const Gate> Wait(size_t k, std::chrono::milliseconds wait);

  const std::string datadir_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<GateState> gates_;  // guarded by mu_
  std::vector<Counts> counts_;
  friend class DirectDeltaFilter;
};

}  // namespace xbak::restore
