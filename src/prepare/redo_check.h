// The first pass over a redo log (redo_apply.h): every mini-transaction
// checked (framing, CRC-32C) and what the apply needs to know up front
// learnt, before anything is written. Private to the prepare layer:
// redo_apply.cc applies what this learnt; CheckRedoLog and
// CheckRedoApplicable hand it out (opaque) as a CheckedLog.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "xbak/innodb/crypt_data.h"
#include "xbak/prepare/log_scanner.h"
#include "xbak/prepare/redo_apply.h"
#include "xbak/prepare/space_catalog.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

struct LogCheck {
  uint64_t end_lsn = 0;
  uint64_t page_records = 0;  // how many records change a page
  FileNames names;
  // Pages whose last record is FREE_PAGE. The server never writes them
  // (fil_space_t::freed_ranges); knowing them up front keeps the result the
  // same whether the log is applied in one batch or many.
  std::unordered_set<uint64_t> freed_at_end;
  // The start LSN of the last mtr that initialised or freed each page. Older
  // records of such a page are never applied: in a batch that ends before
  // that mtr, the page's old content may be anything (the server's own
  // recovery skips them too: mlog_init_t::will_avoid_read).
  std::unordered_map<uint64_t, uint64_t> last_init;
  // The tablespaces whose size (FSP_SIZE on page 0) the log writes: grown
  // to it at the end of every run, whatever that run applied.
  std::set<uint32_t> sized;
  // Each undo tablespace's TRIM_PAGES records: the start LSN of the mtr and
  // the size it cut the file to. An older record of a page at or past that
  // size is void (recv_sys_t::trim), whatever batch it falls in, and whether
  // or not the file was already cut by a run that was killed afterwards.
  struct Trim {
    uint64_t lsn;
    uint32_t size;
  };
  std::map<uint32_t, std::vector<Trim>> trims;
  // The last crypt data and FSP flags the log writes for each tablespace.
  std::map<uint32_t, innodb::CryptData> log_crypt;
  std::map<uint32_t, uint32_t> log_flags;
  LogDdl ddl;  // what RedoApplyOptions::superseded is told
};

struct CheckedLog {
  std::string log_path;
  uint64_t required_lsn = 0;
  uint64_t checkpoint_lsn = 0;
  uint32_t page_size = 0;
  LogCheck check;
};

// Whether `c` (may be null) is the first pass over this log, to this LSN.
bool IsPassOver(const CheckedLog* c, const std::string& log_path, uint64_t required_lsn, uint32_t page_size);

// Pass 1: the whole log must be sound before anything is written; the log
// must reach o.required_lsn.
Result<LogCheck> CheckLog(const RedoApplyOptions& o, const std::string& log_path, uint32_t page_size,
                          LogScanner& scanner);

// Raised to the hard limit: tens of thousands of tablespaces are opened.
void RaiseOpenFileLimit();

}  // namespace xbak::prepare
