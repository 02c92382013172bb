#include "xbak/util/status.h"

#include <cerrno>
#include <cstring>

namespace xbak {

Status ErrnoError(const std::string& what, const std::string& path, int err) {
  ErrorCode code = (err == ENOSPC || err == EDQUOT) ? ErrorCode::kNoSpace
                   : (err == ENOENT)                ? ErrorCode::kNotFound
                   : (err == EEXIST)                ? ErrorCode::kAlreadyExists
                                                    : ErrorCode::kIo;
  std::string msg = what;
  if (!path.empty()) msg += " " + path;
  msg += ": ";
  msg += std::strerror(err);
  return Status(code, msg);
}

}  // namespace xbak
