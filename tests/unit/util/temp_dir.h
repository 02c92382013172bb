// A scratch directory for a test, removed with everything in it at the end;
// shared by the tests of every layer (util is below them all).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace xbak::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "xbak_test_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    if (p != nullptr) path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

}  // namespace xbak::testing
