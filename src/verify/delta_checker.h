// --verify's check of one .delta (innodb/delta.h has the format), pushed to
// it in order: well-formed blocks (the block header read by innodb's one
// parser), pages that pass their checksum in the format page 0 gives or, when
// the delta holds no page 0, the formats its .meta's sizes allow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "file_stream.h"
#include "page_checker.h"
#include "problems.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"

namespace xbak::verify {

// Checks a .delta pushed to it in order (delta.h has the format).
class DeltaChecker {
 public:
  // `first_page`: ibdata2.delta... number their pages within the file, whose
  // first page is this page of the system tablespace.
  DeltaChecker(FileProblems& p, const innodb::DeltaMeta& meta, uint32_t logical, uint32_t first_page = 0)
      : p_(p), meta_(meta), logical_(logical), first_page_(first_page), chunker_(meta.page_size) {
    // No page 0 in the delta (or before it): the formats its sizes allow.
    candidates_ = innodb::PossibleSpaceFlags(
        logical, meta.zip_size != 0 ? meta.zip_size : (meta.page_size < logical ? meta.page_size : 0));
  }

  void Feed(const uint8_t* d, size_t n) {
    if (state_ == kBroken) return;
    if (state_ == kDone) {
      Trailing(n);
      return;
    }
    chunker_.Feed(d, n, [&](const uint8_t* u) { Unit(u); });
  }

  void Finish() {
    if (state_ == kDone) {
      if (chunker_.leftover() > 0) Trailing(chunker_.leftover());
    } else if (state_ == kHeader && chunker_.leftover() == 0 && offset_ == 0) {
      p_.Add("empty .delta (even an unchanged table's delta has one header block)");
    } else if (state_ == kHeader || state_ == kPages) {
      p_.Add("truncated at byte offset " + std::to_string(offset_ + chunker_.leftover()) + ": " +
             (state_ == kPages
                  ? "inside a block (" + std::to_string(nos_.size() - next_) + " page(s) missing)"
                  : std::string("no last (\"XTRA\") block")));
    }
  }

  uint64_t pages() const { return pages_; }

 private:
  enum State { kHeader, kPages, kDone, kBroken };

  void Trailing(size_t n) {
    if (n > 0 && trailing_ == 0) {
      p_.Add("bytes after the last (\"XTRA\") block at byte offset " + std::to_string(offset_));
    }
    trailing_ += n;
  }

  void Unit(const uint8_t* u) {
    uint64_t at = offset_;
    if (state_ == kHeader) {
      Header(u, at);
    } else if (state_ == kPages) {
      Page(u, at);
    } else if (state_ == kDone) {  // more whole units after the last block, in the same input piece
      Trailing(meta_.page_size);
      return;
    }
    if (state_ != kBroken) offset_ += meta_.page_size;
  }

  void Header(const uint8_t* h, uint64_t at) {
    auto hdr = innodb::ParseDeltaBlockHeader(h, meta_.page_size);
    if (!hdr.ok()) {
      p_.Add("block at byte offset " + std::to_string(at) + ": " + hdr.status().message() +
             "; the rest of the file is not checked");
      state_ = kBroken;
      return;
    }
    last_ = hdr->last;
    nos_ = std::move(hdr->page_nos);
    next_ = 0;
    state_ = nos_.empty() ? (last_ ? kDone : kHeader) : kPages;
  }

  void Page(const uint8_t* page, uint64_t at) {
    const uint32_t no = nos_[next_++] + first_page_;
    pages_++;
    if (no == 0 && !innodb::IsAllZero(page, meta_.page_size)) {
      // Page 0 of the space: it tells the exact format of the other pages.
      auto hdr = innodb::ParseSpaceHeader(page, meta_.page_size);
      if (hdr.ok() && hdr->flags.physical_size != meta_.page_size) {
        // Pages of another size than the .meta's cannot be checked at its size.
        p_.Add(PageWhere(0, at) + ": its flags say " + std::to_string(hdr->flags.physical_size) +
               "-byte pages, the .meta says page_size " + std::to_string(meta_.page_size));
      } else if (hdr.ok()) {
        candidates_ = {hdr->flags};
        if (hdr->space_id != meta_.space_id) {
          p_.Add("page 0 says space id " + std::to_string(hdr->space_id) + ", the .meta says " +
                 std::to_string(meta_.space_id));
        }
      } else {
        p_.Add(PageWhere(0, at) + ": bad tablespace header: " + hdr.status().message());
      }
    }
    if (!(meta_.space_id == 0 && innodb::InDoublewriteArea(0, no, logical_))) {
      innodb::PageCheck c = innodb::CheckPageWithAny(page, candidates_, no);
      if (c.verdict == innodb::PageVerdict::kCorrupt) {
        p_.Add(PageWhere(no, at) + ": " + c.detail);
      } else if (c.verdict == innodb::PageVerdict::kOk && !c.encrypted && innodb::PageHasSpaceIdField(page)) {
        uint32_t sid = innodb::PageSpaceId(page);
        if (sid != meta_.space_id && sid != 0) {
          p_.Add(PageWhere(no, at) + ": carries space id " + std::to_string(sid) + ", the .meta says " +
                 std::to_string(meta_.space_id));
        }
      }
    }
    if (next_ == nos_.size()) state_ = last_ ? kDone : kHeader;
  }

  FileProblems& p_;
  const innodb::DeltaMeta meta_;
  const uint32_t logical_;
  const uint32_t first_page_;
  Chunker chunker_;
  std::vector<innodb::SpaceFlags> candidates_;
  State state_ = kHeader;
  bool last_ = false;
  std::vector<uint32_t> nos_;
  size_t next_ = 0;
  uint64_t offset_ = 0, pages_ = 0, trailing_ = 0;
};

}  // namespace xbak::verify
