// Reads a binlog file as it comes (a file being copied, the replication
// protocol's stream), in pieces cut anywhere: checks each event's length,
// position and CRC32 as it completes, and keeps what the archive's index
// needs to know of the file without reading it again: the GTID state it
// began with, its first and last transaction's GTID and time, its server
// ids, where its last complete transaction ends (how much of a file still
// being written can be archived), and the file that follows it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/binlog/event.h"
#include "xbak/binlog/gtid.h"
#include "xbak/util/status.h"

namespace xbak::binlog {

struct FileSummary {
  std::string server_version;
  Checksum checksum = Checksum::kNone;
  bool in_use = false;                        // the server had the file open (kFlagInUse)
  GtidPosition start_state;                   // its GTID list: the binlog state when the file began
  GtidPosition end_state;                     // and after its last complete transaction
  std::optional<Gtid> first_gtid, last_gtid;  // of the first and last complete transaction
  uint32_t first_time = 0, last_time = 0;     // their events' timestamps (Unix time)
  std::vector<uint32_t> server_ids;           // of every event, sorted, each once
  uint64_t events = 0;                        // complete events
  uint64_t transactions = 0;                  // complete transactions (GTID groups)
  uint64_t complete_bytes = 0;                // where the last complete event ends (the magic counted)
  uint64_t transaction_end = 0;               // where the last complete transaction ends: a safe cut
  uint64_t transaction_end_events = 0;        // the events before it
  std::string rotate_to;                      // the next file, when a rotate event ends this one
  bool stopped = false;                       // a stop event: the server shut down
};

// One transaction (GTID event group) as the scanner completes it: for
// restoring to a point in time, which needs to know where each one ends.
struct Transaction {
  Gtid gtid;
  uint32_t time = 0;            // the timestamp of its last event: when it committed
  uint64_t begin = 0, end = 0;  // file offsets: its GTID event, and just past its last event
};

class Scanner {
 public:
  // `name` names the file in messages ("mysql-bin.000002").
  explicit Scanner(std::string name) : name_(std::move(name)) {}
  // Goes on where an earlier scan of the same file stood at a transaction's
  // end (so_far.transaction_end, with its checksum setting and GTIDs): the
  // next bytes fed are the file's from that offset. For archiving a growing
  // file without reading it again from the start.
  static Scanner Resume(std::string name, const FileSummary& so_far);

  // The next bytes of the file. An error (kCorrupt naming the byte offset,
  // kUnsupported for an encrypted binlog) is final: feed nothing more.
  Status Feed(std::string_view bytes);
  // The end of what there is. `whole`: the file is closed, so it must end
  // at an event's end, and its last transaction is whole; otherwise (a file
  // still being written, or just created) the bytes after complete_bytes
  // are an event not yet finished.
  Status Finish(bool whole);

  const FileSummary& summary() const { return s_; }
  // Called for every transaction as it completes, in file order.
  void set_on_transaction(std::function<void(const Transaction&)> f) { on_transaction_ = std::move(f); }

 private:
  Status Event(std::string_view event);
  Status Body(const EventHeader& h, std::string_view body, uint64_t offset);
  void EndGroup(uint32_t time, uint64_t at, uint64_t events);
  Status Bad(uint64_t offset, const std::string& what) const;

  std::string name_;
  std::string pending_;  // bytes not yet part of a complete event
  uint64_t offset_ = 0;  // file offset of pending_[0]
  bool have_magic_ = false, have_format_ = false;
  bool in_group_ = false, standalone_ = false;
  Gtid group_gtid_;
  uint32_t group_time_ = 0;
  uint64_t group_begin_ = 0;  // offset of the current group's GTID event
  uint64_t event_end_ = 0;    // where the event being read ends
  FileSummary s_;
  std::function<void(const Transaction&)> on_transaction_;
};

}  // namespace xbak::binlog
