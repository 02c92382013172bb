// Copies one InnoDB data file of a live server page by page, validating every
// page's checksum. A page that fails is re-read a bounded number of times
// (the server may have been writing it at that instant); one that stays bad
// fails the backup with the file, page number and both checksums.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xbak/backupdir/layout.h"
#include "xbak/innodb/key_file.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/sink/sink.h"
#include "xbak/util/prefetch.h"
#include "xbak/util/progress.h"
#include "xbak/util/status.h"
#include "xbak/util/throttle.h"

namespace xbak::backup {

// --extended-validation: the server's keys, to check an encrypted page's
// plain content too. Its post-encryption checksum (pages of the formats
// before full_crc32) covers 4 bytes and can match a page corrupted before
// encryption; full_crc32 pages carry a CRC-32C of the whole encrypted page.
struct PageKeys {
  innodb::EncryptionKeys keys;
  innodb::CryptMode mode = innodb::CryptMode::kCbc;
};

struct TablespaceCopyOptions {
  uint32_t page_size = 16384;  // the server's innodb_page_size (logical)
  int max_retries = 10;        // re-reads of a page that fails validation
  uint32_t first_page_no = 0;  // page number of the file's first page (ibdata2... continue ibdata1)
  bool is_system = false;      // space 0: the doublewrite area is not validated
  uint32_t system_flags = 0;   // FSP flags of space 0, for ibdata2.. which have no page 0
  const std::atomic<bool>* cancel = nullptr;  // set when another copy failed
  // Incremental backup: only pages whose LSN is above incremental_lsn are
  // written, as DEST.delta + DEST.meta (mariabackup's format); the .meta goes
  // to meta_sink (never compressed).
  bool incremental = false;
  uint64_t incremental_lsn = 0;
  sink::Sink* meta_sink = nullptr;
  // --throttle: every read takes its bytes from this shared budget.
  util::Throttle* throttle = nullptr;
  const PageKeys* keys = nullptr;  // --extended-validation of encrypted pages
  // Tests: runs after page 0 was first read, before the copy reads the file
  // (the moment the server may flush a new table's page 0).
  std::function<void()> after_first_read;
};

struct TablespaceCopyResult {
  bool vanished = false;     // the file was dropped before we could open it
  bool deferred = false;     // page 0 was all zero (created, not yet flushed)
  uint32_t space_id = 0;     // from page 0 (0 if deferred)
  uint32_t flags = 0;        // FSP flags from page 0
  uint64_t pages = 0;        // pages read
  uint64_t delta_pages = 0;  // incremental: pages written to the .delta
  uint64_t retried_pages = 0;
};

Status CopyTablespace(const backupdir::SourceFile& src, const std::string& dest_rel, sink::Sink& sink,
                      util::Progress& progress, const TablespaceCopyOptions& opts,
                      TablespaceCopyResult* result);

// Copies any file as-is in large blocks (non-InnoDB files).
Status CopyPlainFile(const backupdir::SourceFile& src, const std::string& dest_rel, sink::Sink& sink,
                     util::Progress& progress, bool* vanished, util::Throttle* throttle = nullptr);

// Reads ahead of a parallel copy of `files`, in their order (largest first):
// with a cold cache, thousands of small files read one at a time per thread
// leave the disk mostly idle. Consumed() after each file.
std::unique_ptr<util::Prefetcher> ReadAhead(const std::vector<const backupdir::SourceFile*>& files);

}  // namespace xbak::backup
