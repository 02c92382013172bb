// Incremental backup files, in mariabackup's format, so either tool can
// prepare what the other wrote:
//
//   NAME.meta   text: "page_size = N\nzip_size = Z \nspace_id = S\n"
//   NAME.delta  blocks of page_size/4 slots of page_size bytes. Slot 0 is a
//               header: bytes 0..3 the magic "xtra" (more blocks follow) or
//               "XTRA" (last block), then big-endian u32 page numbers, one per
//               following slot, ended by 0xFFFFFFFF when the block is not
//               full. Slots 1..n hold the page images in that order.
// page_size here is the *physical* page size (the zip size for
// ROW_FORMAT=COMPRESSED tablespaces).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

inline constexpr uint32_t kDeltaMagicMore = 0x78747261;  // "xtra"
inline constexpr uint32_t kDeltaMagicLast = 0x58545241;  // "XTRA"
inline constexpr uint32_t kDeltaListEnd = 0xFFFFFFFF;
// A page number past any sane tablespace size: a corrupt file, not a request
// to write terabytes.
inline constexpr uint32_t kDeltaMaxPageNo = 0x3FFFFFFF;

struct DeltaMeta {
  uint32_t page_size = 0;
  uint32_t zip_size = 0;
  uint32_t space_id = 0;
};

std::string FormatDeltaMeta(const DeltaMeta& m);
// `origin` names the file in errors. Rejects page sizes InnoDB cannot have.
Result<DeltaMeta> ParseDeltaMeta(const std::string& text, const std::string& origin);

// Slot 0 of a block: whether it is the last block, and the page numbers of
// the slots that follow it.
struct DeltaBlockHeader {
  bool last = false;
  std::vector<uint32_t> page_nos;
};

// The one reading of a block's slot 0 (`page_size` bytes), for the prepare
// and for --verify. Refuses a wrong magic, a page number above
// `max_page_no`, and numbers that do not increase; the message says what is
// wrong, the caller says where.
Result<DeltaBlockHeader> ParseDeltaBlockHeader(const uint8_t* slot0, uint32_t page_size,
                                               uint32_t max_page_no = kDeltaMaxPageNo);

// Builds a .delta from pages fed in increasing page-number order; output goes
// to `out` in whole blocks (bounded memory: one block).
class DeltaWriter {
 public:
  using Output = std::function<Status(const uint8_t* data, size_t n)>;
  DeltaWriter(uint32_t page_size, Output out);
  Status AddPage(uint32_t page_no, const uint8_t* page);
  // Writes the last block (always, even with no page: an untouched table's
  // delta is one header block, as mariabackup writes it).
  Status Finish();
  uint64_t pages() const { return pages_; }

 private:
  Status FlushBlock(uint32_t magic);
  uint32_t page_size_;
  uint32_t slots_;  // page_size / 4
  Output out_;
  std::vector<uint8_t> block_;
  uint32_t used_ = 1;  // slot 0 is the header
  uint64_t pages_ = 0;
};

// Reads a .delta one block at a time, validating its structure; every error
// names the file and the byte offset.
class DeltaReader {
 public:
  // `max_page_no` bounds page numbers (a number past any sane tablespace size
  // means a corrupt file, not a request to write terabytes).
  DeltaReader(const util::File& file, uint32_t page_size, uint32_t max_page_no = kDeltaMaxPageNo);
  // Reads the next block into pages(): false at the end (after the "XTRA" block).
  Result<bool> Next();
  const std::vector<uint32_t>& page_numbers() const { return page_nos_; }
  const uint8_t* page(size_t i) const { return block_.data() + (i + 1) * size_t{page_size_}; }
  // The byte offset of the next block Next() reads.
  uint64_t offset() const { return offset_; }
  // Makes Next() read the block at `offset` (one that an earlier pass found
  // with offset()), so that parts of one big delta can be read by several threads.
  void Seek(uint64_t offset) {
    offset_ = offset;
    done_ = false;
  }

 private:
  const util::File& file_;
  uint32_t page_size_;
  uint32_t max_page_no_;
  uint64_t offset_ = 0;
  bool done_ = false;
  std::vector<uint8_t> block_;
  std::vector<uint32_t> page_nos_;
};

}  // namespace xbak::innodb
