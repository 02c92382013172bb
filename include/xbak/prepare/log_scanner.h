// Reads the backup's ib_logfile0 from its checkpoint, one whole
// mini-transaction at a time, for --prepare. The backup log is one linear
// pass (first_lsn at offset 12288, every terminator 1), as both mariabackup
// and xbak write it.
//
// The file is mapped, not read: the records handed out point straight into
// the mapping, with no copy, and what a batch has consumed is dropped from
// our resident set again (MADV_DONTNEED; the kernel keeps it in the page
// cache), so memory stays bounded whatever the log's size. An encrypted log
// (innodb_encrypt_log=ON) is decrypted mtr by mtr into chunks that are freed
// the same way; its plaintext is never written anywhere.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "xbak/innodb/page_crypt.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/prepare/prepare_crypt.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

// One complete mtr as the scanner hands it out (records in plaintext).
struct MtrView {
  const uint8_t* bytes;
  size_t records_len;
  uint64_t start_lsn;
  uint64_t end_lsn;
  const innodb::MtrInfo* info;  // its FILE_ records
};

class LogScanner {
 public:
  // `crypt` (may be null) gives the key of an encrypted log; without it an
  // encrypted log is refused by name.
  static Result<std::unique_ptr<LogScanner>> Open(const std::string& path, const PrepareCrypt* crypt);
  ~LogScanner();
  LogScanner(const LogScanner&) = delete;
  LogScanner& operator=(const LogScanner&) = delete;

  const innodb::Checkpoint& checkpoint() const { return checkpoint_; }
  bool encrypted() const { return key_.has_value(); }

  // Calls fn for every complete mtr from the checkpoint on. Stops at the first
  // position that holds no valid mtr, or at the first mtr that starts at or
  // after `stop_lsn`; *end_lsn is its LSN and *why says why.
  // A record that no server writes (kCorrupt) is an error. The bytes handed
  // to fn stay valid until Release() passes them or Rewind(), also after
  // Scan returns.
  Status Scan(const std::function<Status(const MtrView&)>& fn, uint64_t* end_lsn, std::string* why,
              uint64_t stop_lsn = UINT64_MAX);

  // Drops what lies below `lsn` from the resident set.
  void Release(uint64_t lsn);
  // Before a second Scan.
  void Rewind();

 private:
  LogScanner(std::string path, const uint8_t* base, uint64_t size);
  uint64_t Offset(uint64_t lsn) const { return innodb::kLogStartOffset + (lsn - header_.first_lsn); }
  void ReleaseMapping(uint64_t upto_offset);
  // Room for n plaintext bytes of the mtr ending at end_lsn.
  uint8_t* PlainSpace(size_t n, uint64_t end_lsn);

  struct Chunk {
    std::unique_ptr<uint8_t[]> buf;
    size_t size = 0, used = 0;
    uint64_t end_lsn = 0;  // of the last mtr in it
  };

  std::string path_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t released_ = 0;
  innodb::LogHeader header_;
  innodb::Checkpoint checkpoint_;
  std::optional<innodb::AesKey> key_;
  innodb::CryptMode mode_ = innodb::CryptMode::kCbc;
  std::deque<Chunk> plain_;
};

}  // namespace xbak::prepare
