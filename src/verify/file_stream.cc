#include "file_stream.h"

#include <fcntl.h>

#include <memory>

#include "xbak/util/file.h"

namespace xbak::verify {
namespace {
constexpr size_t kReadBytes = size_t{4} << 20;  // one read per 4 MiB: few syscalls, bounded memory
}  // namespace

Status StreamFile(const std::string& path, std::optional<sink::CompressOptions::Algo> algo,
                  const Consumer& consume, uint64_t* content_bytes) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  ::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<sink::Decompressor> dec;
  if (algo) {
    XBAK_ASSIGN_OR_RETURN(dec, sink::Decompressor::Create(*algo, path));
  }
  std::vector<uint8_t> buf(kReadBytes);
  uint64_t off = 0;
  *content_bytes = 0;
  const sink::Decompressor::Output out = [&](const uint8_t* d, size_t n) {
    *content_bytes += n;
    consume(d, n);
    return Status::Ok();
  };
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buf.data(), buf.size(), off));
    if (n == 0) break;
    if (dec) {
      XBAK_RETURN_IF_ERROR(dec->Feed(buf.data(), n, out));
    } else {
      XBAK_RETURN_IF_ERROR(out(buf.data(), n));
    }
    ::posix_fadvise(f.fd(), static_cast<off_t>(off), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    off += n;
    if (n < buf.size()) break;
  }
  if (dec) XBAK_RETURN_IF_ERROR(dec->Finish());
  return Status::Ok();
}

}  // namespace xbak::verify
