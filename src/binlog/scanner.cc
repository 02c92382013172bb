#include "xbak/binlog/scanner.h"

#include <algorithm>

namespace xbak::binlog {
namespace {

// A query event's statement: after its fixed part (thread id 4, time 4,
// database length 1, error code 2, status variables' length 2), the status
// variables, the database name and a NUL.
std::string_view QueryText(std::string_view body) {
  if (body.size() < 13) return {};
  const size_t db_len = static_cast<uint8_t>(body[8]);
  const size_t status_len = static_cast<uint8_t>(body[11]) | (static_cast<uint8_t>(body[12]) << 8);
  const size_t at = 13 + status_len + db_len + 1;
  return at <= body.size() ? body.substr(at) : std::string_view();
}

}  // namespace

Scanner Scanner::Resume(std::string name, const FileSummary& so_far) {
  Scanner s(std::move(name));
  s.s_ = so_far;
  s.s_.complete_bytes = so_far.transaction_end;
  s.s_.events = so_far.transaction_end_events;
  s.offset_ = so_far.transaction_end;
  s.have_magic_ = s.have_format_ = so_far.transaction_end > kMagic.size();
  if (!s.have_format_) s = Scanner(s.name_);  // nothing but the magic: start over
  return s;
}

Status Scanner::Bad(uint64_t offset, const std::string& what) const {
  return Error(ErrorCode::kCorrupt, name_ + " at byte " + std::to_string(offset) + ": " + what);
}

Status Scanner::Feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t at = 0;
  if (!have_magic_) {
    if (pending_.size() < kMagic.size()) return Status::Ok();
    if (std::string_view(pending_).substr(0, kMagic.size()) != kMagic)
      return Bad(0, "not a binary log (it does not start with the binlog magic bytes)");
    have_magic_ = true;
    at = kMagic.size();
  }
  while (pending_.size() - at >= kHeaderSize) {
    const EventHeader h = ParseHeader(std::string_view(pending_).substr(at));
    const uint64_t offset = offset_ + at;
    if (h.length < kHeaderSize) return Bad(offset, "an event of " + std::to_string(h.length) + " bytes");
    if (pending_.size() - at < h.length) break;  // the rest has not come yet
    // (A 32-bit field: past 4 GiB it wraps.)
    if (h.next_pos != 0 && h.next_pos != static_cast<uint32_t>(offset + h.length)) {
      return Bad(offset, "an event of " + std::to_string(h.length) + " bytes that says it ends at " +
                             std::to_string(h.next_pos));
    }
    XBAK_RETURN_IF_ERROR(Event(std::string_view(pending_).substr(at, h.length)));
    at += h.length;
    s_.complete_bytes = offset_ + at;
    if (!in_group_) {
      s_.transaction_end = s_.complete_bytes;
      s_.transaction_end_events = s_.events;
    }
  }
  pending_.erase(0, at);
  offset_ += at;
  return Status::Ok();
}

Status Scanner::Event(std::string_view event) {
  const EventHeader h = ParseHeader(event);
  const uint64_t offset = offset_ + (event.data() - pending_.data());
  if (!have_format_) {
    if (h.type != kFormatDescription)
      return Bad(offset, "event type " + std::to_string(h.type) + " before the format description");
    auto f = ParseFormatDescription(event);
    if (!f.ok())
      return Status(f.status().code(),
                    name_ + " at byte " + std::to_string(offset) + ": " + f.status().message());
    // Its CRC32 is of the event with the in-use flag clear: the server sets
    // and clears that flag in place, without writing the checksum again.
    std::string copy(event);
    copy[17] = static_cast<char>(copy[17] & ~kFlagInUse);
    if (f->checksum == Checksum::kCrc32 && !ChecksumMatches(copy)) return Bad(offset, "CRC32 mismatch");
    s_.server_version = f->server_version;
    s_.checksum = f->checksum;
    s_.in_use = (h.flags & kFlagInUse) != 0;
    have_format_ = true;
  } else if (s_.checksum == Checksum::kCrc32) {
    if (h.length < kHeaderSize + kChecksumSize) return Bad(offset, "an event too short for its CRC32");
    if (!ChecksumMatches(event))
      return Bad(offset, "CRC32 mismatch (event type " + std::to_string(h.type) + ")");
  }
  s_.events++;
  event_end_ = offset + h.length;
  auto id = std::lower_bound(s_.server_ids.begin(), s_.server_ids.end(), h.server_id);
  if (id == s_.server_ids.end() || *id != h.server_id) s_.server_ids.insert(id, h.server_id);
  if (h.type == kFormatDescription) return Status::Ok();
  const size_t tail = s_.checksum == Checksum::kCrc32 ? kChecksumSize : 0;
  return Body(h, event.substr(kHeaderSize, event.size() - kHeaderSize - tail), offset);
}

// What an event after the format description says of the file.
Status Scanner::Body(const EventHeader& h, std::string_view body, uint64_t offset) {
  auto at = [&](Status st) {
    return Status(st.code(), name_ + " at byte " + std::to_string(offset) + ": " + st.message());
  };
  switch (h.type) {
    case kStartEncryption:
      return Error(ErrorCode::kUnsupported,
                   name_ +
                       " is encrypted (encrypt_binlog=ON): encrypted binary logs are not supported; archive "
                       "them from a server with encrypt_binlog=OFF, or keep them with the server's own keys");
    case kGtidList: {
      auto p = ParseGtidList(body);
      if (!p.ok()) return at(p.status());
      if (s_.events <= 3) {  // the one after the format description
        s_.start_state = *p;
        if (s_.transactions == 0) s_.end_state = *p;
      }
      break;
    }
    case kGtid: {
      auto g = ParseGtidEvent(body, h.server_id);
      if (!g.ok()) return at(g.status());
      // A GTID inside a transaction: the previous one ended with an event
      // not read as an end (a compressed query, a kind this scanner does
      // not know); it ended where this one begins.
      if (in_group_) EndGroup(group_time_, offset, s_.events - 1);
      in_group_ = true;
      standalone_ = g->standalone();
      group_gtid_ = g->gtid;
      group_time_ = h.timestamp;
      group_begin_ = offset;
      break;
    }
    case kXid:
    case kXaPrepare:
    case kQueryCompressed:
    case kQuery: {
      if (!in_group_) break;
      const std::string_view q = h.type == kQuery ? QueryText(body) : std::string_view();
      if (h.type == kXid || h.type == kXaPrepare || standalone_ || q == "COMMIT" || q == "ROLLBACK" ||
          q.starts_with("XA COMMIT") || q.starts_with("XA ROLLBACK")) {
        EndGroup(h.timestamp, 0, 0);
      }
      break;
    }
    case kRotate: {
      auto n = ParseRotate(body);
      if (!n.ok()) return at(n.status());
      s_.rotate_to = *n;
      break;
    }
    case kStop:
      s_.stopped = true;
      break;
    default:
      break;
  }
  return Status::Ok();
}

// The current transaction ends: at the end of the event just read (at 0),
// or at `at` with `events` before it.
void Scanner::EndGroup(uint32_t time, uint64_t at, uint64_t events) {
  in_group_ = false;
  s_.transactions++;
  if (!s_.first_gtid) {
    s_.first_gtid = group_gtid_;
    s_.first_time = group_time_;
  }
  s_.last_gtid = group_gtid_;
  s_.last_time = time;
  Advance(&s_.end_state, group_gtid_);
  if (at != 0) {
    s_.transaction_end = at;
    s_.transaction_end_events = events;
  }
  if (on_transaction_)
    on_transaction_(Transaction{group_gtid_, time, group_begin_, at != 0 ? at : event_end_});
}

Status Scanner::Finish(bool whole) {
  if (!whole && (!have_magic_ || !have_format_)) return Status::Ok();  // a file just begun
  if (!have_magic_) return Bad(0, "empty or shorter than the binlog magic bytes");
  if (!have_format_) return Bad(kMagic.size(), "no format description event");
  if (whole && !pending_.empty()) {
    return Bad(offset_, "the file ends inside an event (" + std::to_string(pending_.size()) +
                            " bytes of it): the copy is cut short");
  }
  if (whole && in_group_) {
    // A closed file holds whole transactions (the server never splits one
    // across files): the last one ended with an event not read as an end.
    EndGroup(group_time_, 0, 0);
    s_.transaction_end = s_.complete_bytes;
    s_.transaction_end_events = s_.events;
  }
  return Status::Ok();
}

}  // namespace xbak::binlog
