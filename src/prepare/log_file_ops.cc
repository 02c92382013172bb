#include "xbak/prepare/log_file_ops.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "xbak/innodb/page.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::prepare {

Status RenameAsTheLogSays(const std::string& dir, const FileNames& names, Catalog& catalog) {
  for (auto& [id, s] : catalog.all()) {
    if (names.deleted.count(id)) continue;
    auto it = names.last_name.find(id);
    if (it == names.last_name.end() || it->second == s.rel || !s.flags_known) continue;
    const std::string from = util::JoinPath(dir, s.rel), to = util::JoinPath(dir, it->second);
    if (util::PathExists(to) || !util::PathExists(from)) continue;
    XBAK_RETURN_IF_ERROR(util::MakeDirs(to.substr(0, to.rfind('/'))));
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename " + from + " to", to, errno);
    util::LogInfo("renamed " + s.rel + " to " + it->second + " as the redo log says");
    s.rel = it->second;
  }
  return Status::Ok();
}

Status RemoveDroppedFiles(const std::string& dir, const FileNames& names) {
  for (uint32_t id : names.deleted) {
    auto it = names.last_name.find(id);
    if (it == names.last_name.end()) continue;
    const std::string path = util::JoinPath(dir, it->second);
    // Only the file that still holds that tablespace id.
    std::vector<uint8_t> page(innodb::kFspHeaderEnd);
    auto f = util::File::OpenRead(path);
    if (!f.ok()) continue;
    auto n = f->PRead(page.data(), page.size(), 0);
    if (!n.ok() || n.value() < page.size() || util::LoadBE32(page.data() + innodb::kFspSpaceId) != id)
      continue;
    if (::unlink(path.c_str()) != 0) return ErrnoError("remove", path, errno);
    util::LogInfo("removed " + it->second + ": the table was dropped during the backup");
  }
  return Status::Ok();
}

}  // namespace xbak::prepare
