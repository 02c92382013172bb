#include "xbak/innodb/delta.h"

#include <cstring>

#include "xbak/util/endian.h"
#include "xbak/util/hex.h"
#include "xbak/util/options_file.h"

namespace xbak::innodb {
namespace {
bool ValidPhysicalSize(uint32_t s) { return s >= 1024 && s <= 65536 && (s & (s - 1)) == 0; }
}  // namespace

std::string FormatDeltaMeta(const DeltaMeta& m) {
  // The space before the newline after zip_size is in mariabackup's format.
  return "page_size = " + std::to_string(m.page_size) + "\nzip_size = " + std::to_string(m.zip_size) +
         " \nspace_id = " + std::to_string(m.space_id) + "\n";
}

Result<DeltaMeta> ParseDeltaMeta(const std::string& text, const std::string& origin) {
  XBAK_ASSIGN_OR_RETURN(util::OptionMap m, util::ParseOptionText("[m]\n" + text, origin, {"m"}));
  auto num = [&](const char* key, uint64_t max, uint32_t* out) -> Status {
    auto it = m.find(key);
    if (it == m.end()) return Error(ErrorCode::kCorrupt, origin + ": missing '" + std::string(key) + "'");
    const std::string& v = it->second.value;
    if (v.empty() || v.size() > 10 || v.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(v) > max) {
      return Error(ErrorCode::kCorrupt, it->second.origin + ": bad value '" + v + "' for " + key);
    }
    *out = static_cast<uint32_t>(std::stoull(v));
    return Status::Ok();
  };
  DeltaMeta d;
  XBAK_RETURN_IF_ERROR(num("page-size", 65536, &d.page_size));
  XBAK_RETURN_IF_ERROR(num("zip-size", 65536, &d.zip_size));
  XBAK_RETURN_IF_ERROR(num("space-id", 0xFFFFFFFEu, &d.space_id));
  if (!ValidPhysicalSize(d.page_size)) {
    return Error(ErrorCode::kCorrupt,
                 origin + ": page_size " + std::to_string(d.page_size) + " is not valid");
  }
  if (d.zip_size != 0 && (!ValidPhysicalSize(d.zip_size) || d.zip_size > 16384)) {
    return Error(ErrorCode::kCorrupt, origin + ": zip_size " + std::to_string(d.zip_size) + " is not valid");
  }
  return d;
}

// The block grows with the pages added (a block of 16 KiB pages holds up to
// 64 MiB): a table with one changed page, or none, costs one header page,
// not a whole zeroed block. Thousands of small tables made that fixed cost
// most of an incremental backup's time.
DeltaWriter::DeltaWriter(uint32_t page_size, Output out)
    : page_size_(page_size), slots_(page_size / 4), out_(std::move(out)), block_(page_size, 0) {}

Status DeltaWriter::FlushBlock(uint32_t magic) {
  util::StoreBE32(block_.data(), magic);
  if (used_ < slots_) util::StoreBE32(block_.data() + used_ * 4, kDeltaListEnd);
  XBAK_RETURN_IF_ERROR(out_(block_.data(), block_.size()));
  block_.resize(page_size_);  // keeps the capacity for the next block of a big table
  std::memset(block_.data(), 0, page_size_);
  used_ = 1;
  return Status::Ok();
}

Status DeltaWriter::AddPage(uint32_t page_no, const uint8_t* page) {
  // A full block is written only when another page comes, so that the last
  // block, full or not, is the one marked "XTRA" (as mariabackup does).
  if (used_ == slots_) XBAK_RETURN_IF_ERROR(FlushBlock(kDeltaMagicMore));
  util::StoreBE32(block_.data() + used_ * 4, page_no);
  block_.insert(block_.end(), page, page + page_size_);
  used_++;
  pages_++;
  return Status::Ok();
}

Status DeltaWriter::Finish() { return FlushBlock(kDeltaMagicLast); }

DeltaReader::DeltaReader(const util::File& file, uint32_t page_size, uint32_t max_page_no)
    : file_(file), page_size_(page_size), max_page_no_(max_page_no) {}

Result<DeltaBlockHeader> ParseDeltaBlockHeader(const uint8_t* slot0, uint32_t page_size,
                                               uint32_t max_page_no) {
  const uint32_t magic = util::LoadBE32(slot0);
  if (magic != kDeltaMagicMore && magic != kDeltaMagicLast) {
    return Error(ErrorCode::kCorrupt,
                 "not a delta block (magic " + util::Hex32(magic) + ", expected \"xtra\" or \"XTRA\")");
  }
  DeltaBlockHeader h;
  h.last = magic == kDeltaMagicLast;
  const uint32_t slots = page_size / 4;
  for (uint32_t i = 1; i < slots; i++) {
    const uint32_t p = util::LoadBE32(slot0 + i * 4);
    if (p == kDeltaListEnd) break;
    if (p > max_page_no) {
      return Error(ErrorCode::kCorrupt, "page number " + std::to_string(p) + " in slot " + std::to_string(i) +
                                            " is past any sane tablespace size");
    }
    if (!h.page_nos.empty() && p <= h.page_nos.back()) {
      return Error(ErrorCode::kCorrupt, "page numbers not increasing (" + std::to_string(h.page_nos.back()) +
                                            " then " + std::to_string(p) + ") in slot " + std::to_string(i));
    }
    h.page_nos.push_back(p);
  }
  return h;
}

Result<bool> DeltaReader::Next() {
  page_nos_.clear();
  if (done_) return false;
  const std::string where = file_.path() + " at byte " + std::to_string(offset_);
  std::vector<uint8_t> header(page_size_);
  XBAK_ASSIGN_OR_RETURN(size_t n, file_.PRead(header.data(), header.size(), offset_));
  if (n == 0 && offset_ > 0) {
    return Error(ErrorCode::kCorrupt, where + ": delta ends without its last (\"XTRA\") block");
  }
  if (n < header.size()) return Error(ErrorCode::kCorrupt, where + ": truncated delta header block");
  auto h = ParseDeltaBlockHeader(header.data(), page_size_, max_page_no_);
  if (!h.ok()) return Error(ErrorCode::kCorrupt, where + ": " + h.status().message());
  page_nos_ = std::move(h->page_nos);
  block_.resize((page_nos_.size() + 1) * size_t{page_size_});
  std::memcpy(block_.data(), header.data(), page_size_);
  size_t body = page_nos_.size() * size_t{page_size_};
  XBAK_ASSIGN_OR_RETURN(size_t got, file_.PRead(block_.data() + page_size_, body, offset_ + page_size_));
  if (got < body) {
    return Error(ErrorCode::kCorrupt,
                 where + ": truncated: the block lists " + std::to_string(page_nos_.size()) +
                     " pages but the file holds only " + std::to_string(got / page_size_));
  }
  offset_ += page_size_ + body;
  if (h->last) done_ = true;
  return true;
}

}  // namespace xbak::innodb
