// --verify's check of one InnoDB data file (ibdata*, undo*, *.ibd, *.new),
// pushed to it in order: page 0's header decides the format of the others
// (or, when page 0 is not on disk yet, any format the server writes); every
// page must pass the server's checksum validation and carry its file's space
// id; the file must be a whole number of pages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "file_stream.h"
#include "problems.h"
#include "xbak/innodb/page.h"

namespace xbak::verify {

inline std::string PageWhere(uint32_t page_no, uint64_t offset) {
  return "page " + std::to_string(page_no) + " (byte offset " + std::to_string(offset) + ")";
}

// Checks the pages of one tablespace file pushed to it in order.
class PageChecker {
 public:
  struct Options {
    uint32_t logical = 16384;
    bool is_system = false;                   // space 0: skip the doublewrite area
    uint32_t first_page_no = 0;               // ibdata2...: continues ibdata1
    std::optional<innodb::SpaceFlags> flags;  // known (ibdata2...): no page 0 in this file
    uint32_t space_id = 0;                    // with flags: the space id pages must carry
  };
  PageChecker(FileProblems& p, Options o) : p_(p), o_(o), chunker_(o.logical) {
    if (o_.flags) {
      candidates_ = {*o_.flags};
      phys_ = o_.flags->physical_size;
      chunker_.set_size(phys_);
      space_id_ = o_.space_id;
      started_ = true;
    }
  }

  void Feed(const uint8_t* d, size_t n) {
    if (!started_) {
      // Page 0 decides the page size: gather one logical page (or the file).
      size_t take = std::min(n, size_t{o_.logical} - head_.size());
      head_.insert(head_.end(), d, d + take);
      d += take;
      n -= take;
      if (head_.size() < o_.logical) return;
      Start();
    }
    chunker_.Feed(d, n, [&](const uint8_t* page) { Page(page); });
  }

  void Finish() {
    if (!started_) {
      if (head_.empty()) {
        p_.Add("empty file (an InnoDB data file has at least one page)");
        return;
      }
      Start();
    }
    if (chunker_.leftover() > 0) {
      p_.Add("size is not a whole number of " + std::to_string(phys_) +
             "-byte pages: " + std::to_string(chunker_.leftover()) + " bytes of a partial page " +
             std::to_string(PageNoAt(pages_)) + " at byte offset " + std::to_string(pages_ * phys_) +
             " (truncated or padded)");
    }
  }

  uint64_t pages() const { return pages_; }
  const std::optional<innodb::SpaceFlags>& flags() const { return header_flags_; }
  uint32_t space_id() const { return space_id_; }

 private:
  uint32_t PageNoAt(uint64_t i) const { return static_cast<uint32_t>(o_.first_page_no + i); }

  void Start() {
    started_ = true;
    phys_ = o_.logical;
    if (innodb::HasPage0(head_.data(), head_.size())) {
      auto hdr = innodb::ParseSpaceHeader(head_.data(), head_.size());
      if (hdr.ok()) {
        header_flags_ = hdr->flags;
        candidates_ = {hdr->flags};
        phys_ = hdr->flags.physical_size;
        space_id_ = hdr->space_id;
        check_space_id_ = true;
        if (hdr->flags.logical_size != o_.logical) {
          p_.Add("page 0: page size " + std::to_string(hdr->flags.logical_size) +
                 " differs from the backup's innodb_page_size " + std::to_string(o_.logical));
        }
      } else {
        p_.Add("page 0: bad tablespace header: " + hdr.status().message());
      }
    }
    // Page 0 not flushed when the file was copied (a table created moments
    // before), or a header we could not read: any format the server writes,
    // ROW_FORMAT=COMPRESSED pages of any KEY_BLOCK_SIZE included.
    unknown_format_ = candidates_.empty();
    chunker_.set_size(phys_);
    std::vector<uint8_t> head;
    head.swap(head_);
    chunker_.Feed(head.data(), head.size(), [&](const uint8_t* page) { Page(page); });
  }

  void Page(const uint8_t* page) {
    uint64_t index = pages_++;
    uint32_t page_no = PageNoAt(index);
    if (o_.is_system && innodb::InDoublewriteArea(0, page_no, o_.logical)) return;
    innodb::PageCheck c = unknown_format_ ? innodb::CheckPageOfUnknownFormat(page, o_.logical, page_no)
                                          : innodb::CheckPageWithAny(page, candidates_, page_no);
    if (c.verdict == innodb::PageVerdict::kCorrupt) {
      p_.Add(PageWhere(page_no, index * phys_) + ": " + c.detail);
      return;
    }
    if (c.verdict == innodb::PageVerdict::kOk && (check_space_id_ || o_.flags) && !c.encrypted &&
        innodb::PageHasSpaceIdField(page)) {
      uint32_t sid = innodb::PageSpaceId(page);
      // The server accepts 0 (pages written by old versions) besides the
      // file's own id.
      if (sid != space_id_ && sid != 0) {
        p_.Add(PageWhere(page_no, index * phys_) + ": carries space id " + std::to_string(sid) +
               ", the file's is " + std::to_string(space_id_));
      }
    }
  }

  FileProblems& p_;
  const Options o_;
  Chunker chunker_;
  std::vector<uint8_t> head_;
  bool started_ = false;
  uint32_t phys_ = 16384;
  std::vector<innodb::SpaceFlags> candidates_;
  bool unknown_format_ = false;  // no page 0 to read the format from
  std::optional<innodb::SpaceFlags> header_flags_;
  uint32_t space_id_ = 0;
  bool check_space_id_ = false;
  uint64_t pages_ = 0;
};

}  // namespace xbak::verify
