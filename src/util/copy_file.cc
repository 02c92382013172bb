#include "xbak/util/copy_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/sparse.h"

namespace xbak {

Status PlaceFile(const std::string& src, const std::string& dest, const PlaceFileOptions& o,
                 Progress* progress) {
  if (o.move) {
    if (::rename(src.c_str(), dest.c_str()) == 0) {
      if (progress) {
        struct stat st {};
        if (::stat(dest.c_str(), &st) == 0) progress->AddDone(static_cast<uint64_t>(st.st_size));
        progress->FileDone();
      }
      return Status::Ok();
    }
    if (errno != EXDEV) return ErrnoError("rename " + src + " to", dest, errno);
  }
  XBAK_ASSIGN_OR_RETURN(File in, File::OpenRead(src));
  const std::string tmp = dest + ".xbtmp";
  ::unlink(tmp.c_str());
  XBAK_ASSIGN_OR_RETURN(File out, File::CreateNew(tmp));
  SparseWriter sparse(out);
  std::vector<uint8_t> buf(4 << 20);
  uint64_t off = 0;
  for (;;) {
    XBAK_ASSIGN_OR_RETURN(size_t n, in.PRead(buf.data(), buf.size(), off));
    if (n == 0) break;
    XBAK_RETURN_IF_ERROR(sparse.Write(buf.data(), n));
    off += n;
    if (progress) progress->AddDone(n);
  }
  XBAK_RETURN_IF_ERROR(sparse.Finish());
  if (o.sync) XBAK_RETURN_IF_ERROR(out.Sync());
  XBAK_RETURN_IF_ERROR(out.Close());
  if (::rename(tmp.c_str(), dest.c_str()) != 0) return ErrnoError("rename " + tmp + " to", dest, errno);
  if (o.move && ::unlink(src.c_str()) != 0) return ErrnoError("remove", src, errno);
  if (progress) progress->FileDone();
  return Status::Ok();
}

}  // namespace xbak
