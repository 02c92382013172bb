#include "xbak/innodb/redo_log.h"

#include <algorithm>
#include <cstring>

#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/hex.h"

namespace xbak::innodb {
namespace {

bool AllZero(const uint8_t* p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

// Formats written by servers before 10.8, with the bit old servers set for
// encrypted logs cleared: 3.23..10.1 (0), 10.2 (1), 10.3 (103), 10.4 (104),
// 10.5..10.7 ("PHYS").
bool IsPre108Format(uint32_t format) {
  uint32_t f = format & ~kRedoFormatEncryptedFlag;
  return f == 0 || f == 1 || f == 103 || f == 104 || f == kRedoFormat10_5;
}

void SetWhy(std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
}

// Minimum values of the 2..5-byte varint encodings.
constexpr uint32_t kVarint2 = 0x80;
constexpr uint32_t kVarint3 = kVarint2 + (1u << 14);
constexpr uint32_t kVarint4 = kVarint3 + (1u << 21);
constexpr uint32_t kVarint5 = kVarint4 + (1u << 28);

// Decodes the FILE_* record whose payload is [p, p+n) into `info`. Called only
// for mtrs whose CRC matched, so a failure here is real corruption.
bool ParseFileRecord(uint8_t type, const uint8_t* p, size_t n, MtrInfo* info, std::string* why) {
  uint32_t space_id = 0, page_no = 0;
  size_t l1 = 0, l2 = 0;
  if (DecodeVarint(p, n, &space_id, &l1) != DecodeResult::kOk ||
      DecodeVarint(p + l1, n - l1, &page_no, &l2) != DecodeResult::kOk) {
    SetWhy(why, "FILE_ record with a malformed tablespace id");
    return false;
  }
  if (page_no != 0) {
    SetWhy(why, "FILE_ record with page number " + std::to_string(page_no) + " (must be 0)");
    return false;
  }
  const uint8_t* body = p + l1 + l2;
  size_t body_n = n - l1 - l2;
  if (type == kFileCheckpoint) {
    if (space_id != 0 || body_n != 8) {
      SetWhy(why, "malformed FILE_CHECKPOINT record");
      return false;
    }
    uint64_t lsn = util::LoadBE64(body);
    // An all-zero FILE_CHECKPOINT payload is padding, not a checkpoint.
    if (lsn != 0) {
      info->has_checkpoint = true;
      info->checkpoint_lsn = lsn;
    }
    return true;
  }
  if (body_n == 0) {
    SetWhy(why, "FILE_ record without a file name");
    return false;
  }
  FileOp op;
  op.space_id = space_id;
  std::string_view all(reinterpret_cast<const char*>(body), body_n);
  switch (type) {
    case kFileCreate:
      op.type = FileOp::Type::kCreate;
      break;
    case kFileDelete:
      op.type = FileOp::Type::kDelete;
      break;
    case kFileModify:
      op.type = FileOp::Type::kModify;
      break;
    case kFileRename:
      op.type = FileOp::Type::kRename;
      break;
    default:
      SetWhy(why, "unknown file-level record type " + util::Hex32(type));
      return false;
  }
  if (op.type == FileOp::Type::kRename) {
    size_t nul = all.find('\0');
    if (nul == std::string_view::npos || nul == 0 || nul + 1 == all.size()) {
      SetWhy(why, "malformed FILE_RENAME record (expected old NUL new)");
      return false;
    }
    op.name = std::string(all.substr(0, nul));
    op.new_name = std::string(all.substr(nul + 1));
  } else {
    op.name = std::string(all);
  }
  info->file_ops.push_back(std::move(op));
  return true;
}

}  // namespace

std::string FormatLsn(uint64_t lsn) { return "LSN " + std::to_string(lsn); }

Result<LogHeader> ParseLogHeader(const uint8_t* block, size_t n) {
  if (n < kLogHeaderSize) {
    return Error(ErrorCode::kCorrupt, "redo log header is truncated (" + std::to_string(n) + " bytes, need " +
                                          std::to_string(kLogHeaderSize) + ")");
  }
  uint32_t format = util::LoadBE32(block + kLogHeaderFormat);
  if (format == 0 && AllZero(block, kLogHeaderSize)) {
    return Error(ErrorCode::kCorrupt, "redo log header block is all zero: not an InnoDB redo log");
  }
  if (IsPre108Format(format)) {
    return Error(ErrorCode::kUnsupported,
                 "redo log format " + util::Hex32(format) + " is from MariaDB < 10.8; not supported");
  }
  if (format != kRedoFormat10_8 && format != kRedoFormatEnc11) {
    return Error(ErrorCode::kCorrupt, "unknown redo log format " + util::Hex32(format));
  }
  uint32_t crc = util::LoadBE32(block + kLogHeaderCrc);
  uint32_t calc = util::crc32c::Value(block, kLogHeaderCrc);
  if (crc != calc) {
    return Error(ErrorCode::kCorrupt, "redo log header checksum mismatch (stored " + util::Hex32(crc) +
                                          ", computed " + util::Hex32(calc) + ")");
  }
  if (util::LoadBE32(block + kLogHeaderSubformat) != 0) {
    return Error(ErrorCode::kCorrupt, "redo log header has a non-zero subformat word " +
                                          util::Hex32(util::LoadBE32(block + kLogHeaderSubformat)));
  }
  LogHeader h;
  h.format = format;
  h.first_lsn = util::LoadBE64(block + kLogHeaderFirstLsn);
  if (h.first_lsn < kLogFirstLsn) {
    return Error(ErrorCode::kCorrupt, "redo log header has first LSN " + std::to_string(h.first_lsn) +
                                          ", below the minimum " + std::to_string(kLogFirstLsn));
  }
  const char* c = reinterpret_cast<const char*>(block + kLogHeaderCreator);
  h.creator.assign(c, strnlen(c, kLogHeaderCreatorLen));
  // FORMAT_10_8 is also the format of the legacy encrypted log (FORMAT_ENC_10_8);
  // the key information after the creator tells them apart.
  h.encrypted = format == kRedoFormatEnc11 || !AllZero(block + kLogHeaderCryptKey, kLogHeaderCryptKeyLen);
  std::copy_n(block + kLogHeaderCryptKey, kLogHeaderCryptKeyLen, h.crypt.begin());
  if (format == kRedoFormatEnc11 && util::LoadBE32(block + kLogHeaderCryptKey) == 0) {
    return Error(ErrorCode::kCorrupt, "redo log header says FORMAT_ENC_11 but has no encryption key id");
  }
  return h;
}

Result<Checkpoint> PickCheckpoint(const uint8_t* file_start_12k, size_t n, uint64_t first_lsn) {
  if (n < kLogCheckpoint2 + kCheckpointBlockSize) {
    return Error(ErrorCode::kCorrupt,
                 "redo log is too short to hold its checkpoint blocks (" + std::to_string(n) + " bytes)");
  }
  bool found = false;
  Checkpoint best;
  std::string reasons;
  for (size_t off : {kLogCheckpoint1, kLogCheckpoint2}) {
    const uint8_t* b = file_start_12k + off;
    Checkpoint c{util::LoadBE64(b + kCheckpointLsn), util::LoadBE64(b + kCheckpointEndLsn)};
    const char* bad = nullptr;
    if (util::LoadBE32(b + kCheckpointCrc) != util::crc32c::Value(b, kCheckpointCrc)) {
      bad = "checksum mismatch";
    } else if (!AllZero(b + 16, kCheckpointCrc - 16)) {
      bad = "reserved bytes not zero";
    } else if (c.checkpoint_lsn < first_lsn) {
      bad = "checkpoint LSN below the file's first LSN";
    } else if (c.end_lsn < c.checkpoint_lsn) {
      bad = "end LSN below checkpoint LSN";
    }
    if (bad != nullptr) {
      if (!reasons.empty()) reasons += "; ";
      reasons += "block at " + std::to_string(off) + ": " + bad;
      continue;
    }
    // ">=" makes the later block (8192) win a tie.
    if (!found || c.checkpoint_lsn >= best.checkpoint_lsn) best = c;
    found = true;
  }
  if (!found) return Error(ErrorCode::kCorrupt, "no valid checkpoint in the redo log (" + reasons + ")");
  return best;
}

DecodeResult DecodeVarint(const uint8_t* p, size_t avail, uint32_t* value, size_t* length) {
  if (avail == 0) return DecodeResult::kNeedMore;
  uint8_t b = p[0];
  size_t len;
  uint64_t v;
  if (b < 0x80) {
    len = 1;
    v = b;
  } else if (b < 0xC0) {
    len = 2;
    v = b & 0x3F;
  } else if (b < 0xE0) {
    len = 3;
    v = b & 0x1F;
  } else if (b < 0xF0) {
    len = 4;
    v = b & 0x0F;
  } else if (b == 0xF0) {
    len = 5;
    v = 0;
  } else {
    return DecodeResult::kInvalid;
  }
  if (avail < len) return DecodeResult::kNeedMore;
  for (size_t i = 1; i < len; i++) v = (v << 8) | p[i];
  static constexpr uint32_t kBase[] = {0, 0, kVarint2, kVarint3, kVarint4, kVarint5};
  v += kBase[len];
  if (v > UINT32_MAX) return DecodeResult::kInvalid;
  *value = static_cast<uint32_t>(v);
  *length = len;
  return DecodeResult::kOk;
}

size_t EncodeVarint(uint32_t value, uint8_t* out) {
  if (value < kVarint2) {
    out[0] = static_cast<uint8_t>(value);
    return 1;
  }
  if (value < kVarint3) {
    value -= kVarint2;
    out[0] = static_cast<uint8_t>(0x80 | (value >> 8));
    out[1] = static_cast<uint8_t>(value);
    return 2;
  }
  if (value < kVarint4) {
    value -= kVarint3;
    out[0] = static_cast<uint8_t>(0xC0 | (value >> 16));
    out[1] = static_cast<uint8_t>(value >> 8);
    out[2] = static_cast<uint8_t>(value);
    return 3;
  }
  if (value < kVarint5) {
    value -= kVarint4;
    out[0] = static_cast<uint8_t>(0xE0 | (value >> 24));
    out[1] = static_cast<uint8_t>(value >> 16);
    out[2] = static_cast<uint8_t>(value >> 8);
    out[3] = static_cast<uint8_t>(value);
    return 4;
  }
  value -= kVarint5;
  out[0] = 0xF0;
  util::StoreBE32(out + 1, value);
  return 5;
}

DecodeResult DecodeRecordLength(const uint8_t* p, size_t avail, RecordFrame* frame) {
  if (avail == 0) return DecodeResult::kNeedMore;
  if (size_t l = p[0] & 15; l != 0) {
    frame->header_length = 1;
    frame->payload_length = l;
    return DecodeResult::kOk;
  }
  uint32_t v = 0;
  size_t vlen = 0;
  DecodeResult r = DecodeVarint(p + 1, avail - 1, &v, &vlen);
  if (r != DecodeResult::kOk) return r;
  // V counts the bytes after the first byte, varint included, minus 15.
  frame->header_length = 1 + vlen;
  frame->payload_length = size_t{v} + 15 - vlen;
  return DecodeResult::kOk;
}

MtrStatus ParseMtr(const uint8_t* buf, size_t avail, bool expected_seq_bit, MtrInfo* out, std::string* why,
                   size_t seq_flip_at, bool encrypted) {
  out->length = 0;
  out->records_length = 0;
  out->file_ops.clear();
  out->has_checkpoint = false;
  out->checkpoint_lsn = 0;
  if (avail == 0) {
    SetWhy(why, "no bytes");
    return MtrStatus::kNeedMore;
  }
  if (buf[0] <= 1) {
    SetWhy(why, "no mtr starts here (byte " + std::to_string(buf[0]) + ")");
    return MtrStatus::kEndOfLog;
  }
  // Walk the record framing to the terminator: an mtr has no length field, it
  // ends at the first record position holding a byte <= 1.
  size_t pos = 0;
  for (;;) {
    if (pos > kMtrSizeMax) {
      SetWhy(why, "mtr longer than " + std::to_string(kMtrSizeMax) + " bytes");
      return MtrStatus::kCorrupt;
    }
    if (pos >= avail) {
      SetWhy(why, "buffer ends inside the mtr");
      return MtrStatus::kNeedMore;
    }
    if (buf[pos] <= 1) break;
    RecordFrame f;
    DecodeResult r = DecodeRecordLength(buf + pos, avail - pos, &f);
    if (r == DecodeResult::kNeedMore) {
      SetWhy(why, "buffer ends inside a record length");
      return MtrStatus::kNeedMore;
    }
    if (r == DecodeResult::kInvalid) {
      SetWhy(why, "invalid record length at mtr offset " + std::to_string(pos));
      return MtrStatus::kCorrupt;
    }
    pos += f.total();
  }
  const size_t records = pos;
  const size_t trailer = kMtrTrailerSize + (encrypted ? kMtrNonceSize : 0);
  if (avail - records < trailer) {
    SetWhy(why, "buffer ends inside the mtr trailer");
    return MtrStatus::kNeedMore;
  }
  bool want = records >= seq_flip_at ? !expected_seq_bit : expected_seq_bit;
  if (buf[records] != (want ? 1 : 0)) {
    SetWhy(why, "sequence bit mismatch (terminator " + std::to_string(buf[records]) + ")");
    return MtrStatus::kEndOfLog;
  }
  uint32_t stored = util::LoadBE32(buf + records + trailer - 4);
  uint32_t calc = util::crc32c::Value(buf, records);
  if (encrypted)
    calc = util::crc32c::Extend(calc, buf + records + 1, kMtrNonceSize);  // the seq byte is not covered
  if (stored != calc) {
    SetWhy(why,
           "mtr checksum mismatch (stored " + util::Hex32(stored) + ", computed " + util::Hex32(calc) + ")");
    return MtrStatus::kEndOfLog;
  }
  // The mtr is genuine; now pick out its file-level records (their bodies
  // are encrypted in an encrypted log: read after decryption).
  if (!encrypted && ParseFileRecords(buf, records, out, why) != MtrStatus::kComplete) {
    return MtrStatus::kCorrupt;
  }
  out->records_length = records;
  out->length = records + trailer;
  return MtrStatus::kComplete;
}

MtrStatus ParseFileRecords(const uint8_t* records, size_t records_length, MtrInfo* out, std::string* why) {
  // Records with the same_page bit before the first page record are FILE_*
  // records.
  for (size_t p = 0; p < records_length;) {
    RecordFrame f;
    if (DecodeRecordLength(records + p, records_length - p, &f) != DecodeResult::kOk ||
        f.total() > records_length - p) {
      SetWhy(why, "invalid record length at mtr offset " + std::to_string(p));
      return MtrStatus::kCorrupt;
    }
    const uint8_t b = records[p];
    if (!(b & 0x80)) break;  // first page record: no file records after it
    if (!ParseFileRecord(b & 0xF0, records + p + f.header_length, f.payload_length, out, why)) {
      if (why != nullptr) *why += " at mtr offset " + std::to_string(p);
      return MtrStatus::kCorrupt;
    }
    p += f.total();
  }
  return MtrStatus::kComplete;
}

std::vector<uint8_t> MakeBackupLogHeader(uint32_t format, uint64_t checkpoint_lsn, uint64_t end_lsn,
                                         std::string_view creator, const uint8_t* crypt) {
  std::vector<uint8_t> out(kLogStartOffset, 0);
  uint8_t* h = out.data();
  util::StoreBE32(h + kLogHeaderFormat, format);
  util::StoreBE64(h + kLogHeaderFirstLsn, checkpoint_lsn);
  std::copy_n(creator.data(), std::min(creator.size(), kLogHeaderCreatorLen), h + kLogHeaderCreator);
  if (crypt != nullptr) std::copy_n(crypt, kLogHeaderCryptKeyLen, h + kLogHeaderCryptKey);
  util::StoreBE32(h + kLogHeaderCrc, util::crc32c::Value(h, kLogHeaderCrc));
  uint8_t* c = h + kLogCheckpoint1;
  util::StoreBE64(c + kCheckpointLsn, checkpoint_lsn);
  util::StoreBE64(c + kCheckpointEndLsn, end_lsn);
  util::StoreBE32(c + kCheckpointCrc, util::crc32c::Value(c, kCheckpointCrc));
  return out;
}

std::vector<uint8_t> MakePreparedLogFile(uint64_t lsn, std::string_view creator) {
  std::vector<uint8_t> out = MakeBackupLogHeader(kRedoFormat10_8, lsn, lsn, creator);
  uint8_t mtr[16] = {kFileCheckpoint | 10, 0, 0};
  util::StoreBE64(mtr + 3, lsn);
  mtr[11] = 1;  // terminator: the first pass over the file
  util::StoreBE32(mtr + 12, util::crc32c::Value(mtr, 11));
  out.insert(out.end(), mtr, mtr + sizeof mtr);
  return out;
}

}  // namespace xbak::innodb
