// Where InnoDB records the binary log position of its last commit: each
// rollback segment header page, since MariaDB 10.3.5, holds the binlog file
// name and offset of the last transaction committed through it; the
// TRX_SYS page (page 5 of the system tablespace) lists those pages, and
// before 10.3.5 held the one position itself. The server recovers the
// position from the rollback segment page with the highest page LSN
// (trx_rseg_mem_restore); mariabackup --prepare reports that one, which is
// how a backup taken without locks still says where a replica must start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xbak::innodb {

inline constexpr uint32_t kTrxSysPageNo = 5;  // FSP_TRX_SYS_PAGE_NO

struct RsegSlot {
  uint32_t space_id = 0;
  uint32_t page_no = 0;
};

// The rollback segment header pages a TRX_SYS page of `page_size` bytes
// lists (unused slots left out; none for a page too small to hold them).
std::vector<RsegSlot> RsegSlots(const uint8_t* trx_sys_page, uint32_t page_size);

struct RecordedBinlog {
  std::string file;       // as the server wrote it: "./mysql-bin.000003" or a path
  uint64_t offset = 0;    // the end of the last transaction's events in that file
  uint64_t page_lsn = 0;  // FIL_PAGE_LSN of the page it was read from
};

// A rollback segment header page's position; nullopt when it holds none
// (no binlogged commit went through it, or the pre-10.3.5 format).
std::optional<RecordedBinlog> RsegBinlog(const uint8_t* page, uint32_t page_size);

// The pre-10.3.5 position in the TRX_SYS page (TRX_SYS_MYSQL_LOG_INFO);
// nullopt without its magic number.
std::optional<RecordedBinlog> LegacyTrxSysBinlog(const uint8_t* trx_sys_page, uint32_t page_size);

}  // namespace xbak::innodb
