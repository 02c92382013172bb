#include "file_stream.h"

#include <fcntl.h>

#include <algorithm>
#include <memory>

#include "xbak/util/file.h"

namespace xbak::verify {
namespace {
constexpr size_t kReadBytes = size_t{4} << 20;  // one read per 4 MiB: few syscalls, bounded memory
}  // namespace

Status StreamFile(const std::string& path, const Decoding& how, const Consumer& consume,
                  uint64_t* content_bytes) {
  if (how.encrypted && how.keys == nullptr) {
    return Error(ErrorCode::kInvalidArgument,
                 path + ": encrypted, not checked: --verify needs the backup's key (--encrypt-key-file)");
  }
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  ::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  *content_bytes = 0;
  // The chain, last stage first: the consumer, the decompressor, the decryptor.
  const sink::FileDecoder::Output content = [&](const uint8_t* d, size_t n) {
    *content_bytes += n;
    consume(d, n);
    return Status::Ok();
  };
  std::unique_ptr<sink::Decompressor> dec;
  if (how.algo) {
    XBAK_ASSIGN_OR_RETURN(dec, sink::Decompressor::Create(*how.algo, path));
  }
  const sink::FileDecoder::Output plain = [&](const uint8_t* d, size_t n) {
    return dec ? dec->Feed(d, n, content) : content(d, n);
  };
  std::unique_ptr<crypt::Decryptor> decrypt;
  if (how.encrypted) decrypt = std::make_unique<crypt::Decryptor>(*how.keys, path, how.name, plain);
  // Sized to the file (one page more, so that one short read ends it) and not zero-filled: a
  // zeroed 4 MiB buffer for each of 20,000 small tables cost more than reading them. Holes (the
  // backup is sparse) are zero-filled here rather than read through the page cache.
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  const size_t cap = static_cast<size_t>(std::min<uint64_t>(kReadBytes, size + 4096));
  auto buf = std::make_unique_for_overwrite<uint8_t[]>(cap);
  uint64_t off = 0;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PReadData(buf.get(), cap, off));
    if (n == 0) break;
    XBAK_RETURN_IF_ERROR(decrypt ? decrypt->Write(buf.get(), n) : plain(buf.get(), n));
    ::posix_fadvise(f.fd(), static_cast<off_t>(off), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    off += n;
    if (n < cap) break;
  }
  if (decrypt) XBAK_RETURN_IF_ERROR(decrypt->Finish());
  if (dec) XBAK_RETURN_IF_ERROR(dec->Finish());
  return Status::Ok();
}

}  // namespace xbak::verify
