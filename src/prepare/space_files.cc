#include "xbak/prepare/space_files.h"

#include <sys/stat.h>

namespace xbak::prepare {

Result<SpaceFiles> SpaceFiles::Open(const std::vector<std::string>& paths) {
  if (paths.empty()) return Error(ErrorCode::kInternal, "SpaceFiles::Open: no files");
  std::vector<Part> parts;
  uint64_t start = 0;
  for (const auto& p : paths) {
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(p));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    parts.push_back(Part{std::move(f), start, size});
    start += size;
  }
  return SpaceFiles(std::move(parts));
}

std::pair<size_t, uint64_t> SpaceFiles::Locate(uint64_t offset) const {
  for (size_t i = 0; i + 1 < parts_.size(); i++) {
    if (offset < parts_[i].start + parts_[i].size) return {i, offset - parts_[i].start};
  }
  return {parts_.size() - 1, offset - parts_.back().start};
}

Result<size_t> SpaceFiles::PRead(void* buf, size_t n, uint64_t offset) const {
  auto [i, off] = Locate(offset);
  return parts_[i].file.PRead(buf, n, off);
}

Status SpaceFiles::PWrite(const void* buf, size_t n, uint64_t offset) {
  auto [i, off] = Locate(offset);
  if (i + 1 < parts_.size() && off + n > parts_[i].size) {
    return Error(ErrorCode::kCorrupt, parts_[i].file.path() + ": a page write at offset " +
                                          std::to_string(off) + " crosses the end of the file into the next");
  }
  XBAK_RETURN_IF_ERROR(parts_[i].file.PWrite(buf, n, off));
  if (i + 1 == parts_.size()) parts_[i].size = std::max(parts_[i].size, off + n);
  return Status::Ok();
}

Result<uint64_t> SpaceFiles::Size() const {
  XBAK_ASSIGN_OR_RETURN(uint64_t last, parts_.back().file.Size());
  return parts_.back().start + last;
}

Status SpaceFiles::Truncate(uint64_t size) {
  Part& last = parts_.back();
  if (size < last.start) {
    return Error(ErrorCode::kCorrupt, "the tablespace of " + parts_.front().file.path() +
                                          " would shrink to " + std::to_string(size) +
                                          " bytes, into its fixed-size files (" + std::to_string(last.start) +
                                          " bytes)");
  }
  XBAK_RETURN_IF_ERROR(last.file.Truncate(size - last.start));
  last.size = size - last.start;
  return Status::Ok();
}

void SpaceFiles::PunchHole(uint64_t offset, uint64_t n) {
  auto [i, off] = Locate(offset);
  parts_[i].file.PunchHole(off, n);
}

size_t SpaceFiles::BlockSize() const {
  struct stat st {};
  if (::fstat(parts_.front().file.fd(), &st) != 0 || st.st_blksize <= 0 || st.st_blksize > 4096) return 512;
  return static_cast<size_t>(st.st_blksize);
}

}  // namespace xbak::prepare
