// The files of one tablespace in a backup, read and written by page offset.
// Usually one .ibd; the system tablespace may be several files
// (innodb_data_file_path=ibdata1:12M;ibdata2:12M:autoextend) in which page
// numbers run on from one file into the next. Every file but the last keeps
// its size; only the last grows or shrinks, as in the server.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

class SpaceFiles {
 public:
  // `paths` in page order. Opens every file for writing.
  static Result<SpaceFiles> Open(const std::vector<std::string>& paths);

  // Reads or writes n bytes at `offset` of the whole tablespace. A page never
  // straddles two files (their sizes are whole pages); beyond the end a read
  // returns fewer bytes, a write extends the last file.
  Result<size_t> PRead(void* buf, size_t n, uint64_t offset) const;
  Status PWrite(const void* buf, size_t n, uint64_t offset);
  Result<uint64_t> Size() const;
  // Sets the tablespace's size by changing the last file; refuses a size
  // that would cut into the fixed files.
  Status Truncate(uint64_t size);
  // Deallocates [offset, offset + n) (reads back as zeros) where the file
  // system can; elsewhere the bytes stay as written. Best effort.
  void PunchHole(uint64_t offset, uint64_t n);
  // The unit the server rounds a compressed page's write up to: the first
  // file's st_blksize, or 512 when that is 0 or above 4096 (as InnoDB does).
  size_t BlockSize() const;
  // The file holding `offset` (its index in the paths given to Open), and the
  // offset within it.
  std::pair<size_t, uint64_t> Locate(uint64_t offset) const;

 private:
  struct Part {
    util::File file;
    uint64_t start = 0;  // offset of its first byte in the tablespace
    uint64_t size = 0;   // fixed size; the last part's is its current one
  };
  explicit SpaceFiles(std::vector<Part> parts) : parts_(std::move(parts)) {}

  std::vector<Part> parts_;
};

}  // namespace xbak::prepare
