// The server's binlog directory as a BinlogSource (binlog_archive.h).
#include <algorithm>
#include <map>

#include "xbak/cloud/binlog_archive.h"
#include "xbak/util/file.h"

namespace xbak::cloud {
namespace {

class LocalSource final : public BinlogSource {
 public:
  LocalSource(std::string index, std::string dir) : index_(std::move(index)), dir_(std::move(dir)) {}

  Result<std::vector<std::string>> Files() override {
    XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(index_, 16 << 20));
    std::vector<std::string> names;
    paths_.clear();
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(at, nl - at);
      at = nl + 1;
      if (line.empty()) continue;
      const std::string path =
          line.front() == '/' ? line : dir_ + "/" + (line.starts_with("./") ? line.substr(2) : line);
      const std::string name = path.substr(path.rfind('/') + 1);
      if (name.empty() || name == "." || name == "..")
        return Error(ErrorCode::kCorrupt, index_ + ": the line '" + line + "' names no binlog file");
      names.push_back(name);
      paths_[name] = path;
    }
    return names;
  }

  Result<std::string> Read(const std::string& file, uint64_t offset, size_t max) override {
    auto it = paths_.find(file);
    if (it == paths_.end()) return Error(ErrorCode::kNotFound, "binlog " + file + " is not in " + index_);
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(it->second));
    std::string out(max, '\0');
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(out.data(), max, offset));
    out.resize(n);
    return out;
  }

 private:
  std::string index_, dir_;
  std::map<std::string, std::string> paths_;  // name -> path, from the last Files()
};

}  // namespace

Result<std::unique_ptr<BinlogSource>> LocalBinlogs(const std::string& index_file) {
  if (!util::PathExists(index_file))
    return Error(ErrorCode::kInvalidArgument, "no binlog index file " + index_file + " (log_bin_index)");
  const size_t slash = index_file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : index_file.substr(0, slash);
  return std::unique_ptr<BinlogSource>(std::make_unique<LocalSource>(index_file, dir));
}

}  // namespace xbak::cloud
