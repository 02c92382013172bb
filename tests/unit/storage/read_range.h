// Test helper: one ObjectStore::GetRange run to its end, its pieces kept.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "xbak/storage/event_loop.h"
#include "xbak/storage/object_store.h"

namespace xbak::storage::testing {

struct RangeRead {
  Status status;
  std::vector<size_t> indexes;  // as handed over
  std::vector<std::string> pieces;
  bool done_after_pieces = true;  // no piece came after `done`
  std::string Bytes() const {
    std::string all;
    for (const auto& p : pieces) all += p;
    return all;
  }
};

// Runs `loop` until the read is done. `may_read` (optional) is the reader's
// flow control; `on_piece` (optional) runs after each piece is kept.
inline RangeRead ReadRange(EventLoop& loop, ObjectStore& store, const std::string& key, ByteRange range,
                           uint64_t piece_bytes, std::function<bool()> may_read = {},
                           std::function<void(RangeRead&)> on_piece = {}) {
  RangeRead out;
  bool done = false;
  ObjectStore::RangeReader reader;
  reader.piece_bytes = piece_bytes;
  reader.piece = [&](size_t index, std::string piece) {
    if (done) out.done_after_pieces = false;
    out.indexes.push_back(index);
    out.pieces.push_back(std::move(piece));
    if (on_piece) on_piece(out);
  };
  reader.done = [&](Status s) {
    out.status = s;
    done = true;
    loop.Stop();
  };
  reader.may_read = std::move(may_read);
  store.GetRange(key, range, std::move(reader));
  loop.Run();
  return out;
}

}  // namespace xbak::storage::testing
