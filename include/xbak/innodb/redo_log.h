// The MariaDB 10.8+ redo log format (FORMAT_10_8, MDEV-14425), as far as a
// backup needs it: the ib_logfile0 header block, the two checkpoint blocks, the
// framing of mini-transactions (mtr) in the circular file, the FILE_* records
// (DDL tracking) and the 12 KiB header of the backup's own, linear ib_logfile0.
//
// Everything here is a pure function over bytes: no I/O, no state, so the
// fuzzer and the tests can drive it directly. Multi-byte fields are big-endian.
// Encrypted logs are framed here; their records are decrypted by log_crypt.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::innodb {

// ---- File layout -----------------------------------------------------------
inline constexpr uint32_t kRedoFormat10_8 = 0x50687973;         // "Phys": unencrypted (or legacy encrypted)
inline constexpr uint32_t kRedoFormatEnc11 = 0xF09F979D;        // encrypted, MDEV-36024
inline constexpr uint32_t kRedoFormat10_5 = 0x50485953;         // "PHYS": MariaDB 10.5..10.7
inline constexpr uint32_t kRedoFormatEncryptedFlag = 1u << 31;  // old formats' "encrypted" bit

inline constexpr size_t kLogHeaderFormat = 0;     // u32 format
inline constexpr size_t kLogHeaderSubformat = 4;  // u32, must be 0
inline constexpr size_t kLogHeaderFirstLsn = 8;   // u64 LSN of file offset kLogStartOffset
inline constexpr size_t kLogHeaderCreator = 16;   // 32 bytes, NUL padded
inline constexpr size_t kLogHeaderCreatorLen = 32;
inline constexpr size_t kLogHeaderCryptKey = 48;  // 28 bytes of key info, all zero if unencrypted
inline constexpr size_t kLogHeaderCryptKeyLen = 28;
inline constexpr size_t kLogHeaderCrc = 508;  // CRC-32C of [0, 508)
inline constexpr size_t kLogHeaderSize = 512;

inline constexpr size_t kLogCheckpoint1 = 4096;
inline constexpr size_t kLogCheckpoint2 = 8192;
inline constexpr size_t kCheckpointLsn = 0;     // u64, within a checkpoint block
inline constexpr size_t kCheckpointEndLsn = 8;  // u64
inline constexpr size_t kCheckpointCrc = 60;    // CRC-32C of [0, 60); [16, 60) must be zero
inline constexpr size_t kCheckpointBlockSize = 64;

inline constexpr size_t kLogStartOffset = 12288;        // first byte of mtr data
inline constexpr uint64_t kLogFirstLsn = 12288;         // the smallest valid first_lsn
inline constexpr size_t kMtrSizeMax = size_t{1} << 20;  // longest mtr the server writes (records only)
inline constexpr size_t kMtrTrailerSize = 5;            // terminator byte + CRC-32C (unencrypted)
inline constexpr size_t kMtrNonceSize = 8;              // encrypted logs: before the CRC-32C

// ---- Header and checkpoint -------------------------------------------------
struct LogHeader {
  uint32_t format = 0;
  uint64_t first_lsn = 0;
  std::string creator;  // e.g. "MariaDB 10.11.19" or "Backup 10.11.19"
  // innodb_encrypt_log=ON: FORMAT_ENC_11, or FORMAT_10_8 with key information
  // (the legacy FORMAT_ENC_10_8). Each mtr then carries an 8-byte nonce before
  // its CRC and its record bodies are encrypted (lengths are not).
  bool encrypted = false;
  std::array<uint8_t, kLogHeaderCryptKeyLen> crypt{};  // key id, key version, crypt message, nonce
};

// An LSN as every message writes it: "LSN 12345" (decimal, as the server's
// own messages and xtrabackup_checkpoints give LSNs).
std::string FormatLsn(uint64_t lsn);

// Parses the first block of ib_logfile0 (n >= 512 bytes). Logs older than 10.8
// are kUnsupported with a message saying so; bad checksums and impossible
// values are kCorrupt.
Result<LogHeader> ParseLogHeader(const uint8_t* block, size_t n);

struct Checkpoint {
  uint64_t checkpoint_lsn = 0;  // recovery (and the backup log) starts here
  uint64_t end_lsn = 0;         // where the FILE_MODIFY..FILE_CHECKPOINT mtrs of this checkpoint start
};

// Picks the checkpoint from the first 12 KiB of ib_logfile0 (n >= 8256). A
// block counts if its CRC matches, its reserved bytes are zero, and
// first_lsn <= checkpoint_lsn <= end_lsn; the larger checkpoint_lsn wins and a
// tie goes to the block at 8192, as the server's own recovery does.
Result<Checkpoint> PickCheckpoint(const uint8_t* file_start_12k, size_t n, uint64_t first_lsn);

// The sequence bit the server writes as the terminator of an mtr whose
// terminator byte has LSN `lsn`: 1 on even passes over the circular file, 0 on
// odd ones. It is what tells freshly written bytes from the previous pass.
inline bool SequenceBit(uint64_t lsn, uint64_t first_lsn, uint64_t capacity) {
  return ((lsn - first_lsn) / capacity) % 2 == 0;
}
// File offset of `lsn` in a circular log of `capacity` bytes after the header.
inline uint64_t LsnToOffset(uint64_t lsn, uint64_t first_lsn, uint64_t capacity) {
  return kLogStartOffset + (lsn - first_lsn) % capacity;
}

// ---- Record encoding -------------------------------------------------------
enum class DecodeResult { kOk, kNeedMore, kInvalid };

// InnoDB's variable-length integer (mlog_decode_varint): 1 to 5 bytes, the
// count given by the leading 1 bits of the first byte. kNeedMore when `avail`
// ends inside it; kInvalid for first bytes 0xF1..0xFF or a value over 2^32-1.
DecodeResult DecodeVarint(const uint8_t* p, size_t avail, uint32_t* value, size_t* length);
// Encodes into out (at least 5 bytes); returns the byte count.
size_t EncodeVarint(uint32_t value, uint8_t* out);

// The framing of one record: the first byte (same_page bit 7, type bits 6..4,
// length bits 3..0), then either 1..15 payload bytes, or, for length 0, a
// varint V followed by V + 15 - len(varint) payload bytes.
struct RecordFrame {
  size_t header_length = 0;   // first byte (+ the length varint)
  size_t payload_length = 0;  // bytes after the header: page id, offsets, data
  size_t total() const { return header_length + payload_length; }
};
// Decodes the framing of the record at p (p[0] > 1). Only the header needs to
// be inside `avail`; the caller checks that total() bytes are there.
DecodeResult DecodeRecordLength(const uint8_t* p, size_t avail, RecordFrame* frame);

// File-level record types: full first-byte high nibble, same_page bit set.
inline constexpr uint8_t kFileCreate = 0x80;
inline constexpr uint8_t kFileDelete = 0x90;
inline constexpr uint8_t kFileRename = 0xA0;
inline constexpr uint8_t kFileModify = 0xB0;
inline constexpr uint8_t kFileCheckpoint = 0xF0;

struct FileOp {
  enum class Type { kCreate, kDelete, kRename, kModify };
  Type type = Type::kModify;
  uint32_t space_id = 0;
  std::string name;      // as the server logged it, e.g. "./db/t1.ibd"
  std::string new_name;  // kRename only
};

// ---- Mini-transaction framing ----------------------------------------------
enum class MtrStatus {
  kComplete,  // a whole, checksummed mtr starts at buf
  kNeedMore,  // buf ends inside the mtr: read more and call again
  kEndOfLog,  // no valid mtr here: terminator byte, sequence bit or CRC mismatch
  kCorrupt,   // bytes that no server writes (mtr > 1 MiB, bad length, bad FILE_ record)
};

struct MtrInfo {
  size_t length = 0;          // records + terminator + CRC-32C
  size_t records_length = 0;  // offset of the terminator byte
  std::vector<FileOp> file_ops;
  bool has_checkpoint = false;  // holds a FILE_CHECKPOINT record
  uint64_t checkpoint_lsn = 0;  // its LSN
};

// Parses the mtr at buf. The terminator must equal `expected_seq_bit`, except
// that an mtr whose terminator lies at offset >= seq_flip_at (it straddles the
// end of the circular file, so its terminator is on the next pass) must carry
// the opposite bit. The CRC-32C covers the record bytes, not the terminator.
// `why` (may be null) receives the reason for anything but kComplete.
// At the live tail of the log kEndOfLog is normal: the server has not yet
// (completely) written the next mtr.
// In an encrypted log (`encrypted`), the terminator is followed by an
// 8-byte nonce, the CRC covers the records and the nonce, and FILE_ records
// are not read (their bodies are encrypted): file_ops stays empty.
MtrStatus ParseMtr(const uint8_t* buf, size_t avail, bool expected_seq_bit, MtrInfo* out, std::string* why,
                   size_t seq_flip_at = SIZE_MAX, bool encrypted = false);

// The FILE_* records at the start of a whole mtr's (plaintext) records, into
// out->file_ops and out->has_checkpoint/checkpoint_lsn: for an encrypted log
// once its records are decrypted. kCorrupt (with *why) if one is malformed.
MtrStatus ParseFileRecords(const uint8_t* records, size_t records_length, MtrInfo* out, std::string* why);

// ---- The backup's ib_logfile0 ----------------------------------------------
// The first 12288 bytes of the backup's ib_logfile0, byte for byte as
// mariabackup --backup writes them: header with first_lsn = checkpoint_lsn and
// `creator` (mariabackup writes "Backup <server version>"), CHECKPOINT_1 at
// 4096 = (checkpoint_lsn, end_lsn), everything else zero. The mtrs copied from
// checkpoint_lsn on follow at 12288, each terminator forced to 1: the backup log
// is read by --prepare as a first, never wrapped pass.
// `crypt` (28 bytes, or null): an encrypted log's key information, kept as the
// server wrote it so that the copied mtrs decrypt with the same key.
std::vector<uint8_t> MakeBackupLogHeader(uint32_t format, uint64_t checkpoint_lsn, uint64_t end_lsn,
                                         std::string_view creator, const uint8_t* crypt = nullptr);

// The ib_logfile0 that --prepare leaves behind, byte for byte as mariabackup
// writes it (12304 bytes): header with first_lsn = `lsn` and `creator` (a
// "Backup " prefix tells the server to clean up after a restore), CHECKPOINT_1
// = (lsn, lsn), and at 12288 one mtr holding FILE_CHECKPOINT(lsn). The server
// finds a clean log whose end is lsn + 16 and starts without recovery.
std::vector<uint8_t> MakePreparedLogFile(uint64_t lsn, std::string_view creator);
inline constexpr size_t kPreparedLogFileSize = kLogStartOffset + 16;

}  // namespace xbak::innodb
