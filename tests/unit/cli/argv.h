// A writable argv, as main() gets it, for the command line's tests.
#pragma once

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace xbak::cli {

class Argv {
 public:
  Argv(std::initializer_list<const char*> args) {
    for (const char* a : args) store_.emplace_back(a, a + std::strlen(a) + 1);
    for (auto& s : store_) ptrs_.push_back(s.data());
  }
  int argc() const { return static_cast<int>(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }
  std::string operator[](size_t i) const { return ptrs_[i]; }

 private:
  std::vector<std::vector<char>> store_;
  std::vector<char*> ptrs_;
};

}  // namespace xbak::cli
