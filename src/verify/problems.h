// How --verify reports: every problem is one line naming the file, and a
// file's problems beyond a limit are counted, not listed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "xbak/verify/verify.h"

namespace xbak::verify {

class Reporter {
 public:
  explicit Reporter(const VerifyOptions& o) : o_(o) {}
  void Add(std::string line) {
    std::lock_guard<std::mutex> l(mu_);
    if (o_.on_problem) o_.on_problem(line);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(lines_);
  }
  // Problems not listed line by line (beyond a file's limit), counted only.
  std::atomic<uint64_t> unlisted{0};

 private:
  const VerifyOptions& o_;
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// The problems of one file: the first `max` get a line each, the rest one
// line with their count (a backup with a million bad pages must not print a
// million lines).
class FileProblems {
 public:
  FileProblems(Reporter& r, std::string file, size_t max) : r_(r), file_(std::move(file)), max_(max) {}
  ~FileProblems() {
    if (suppressed_ > 0) {
      r_.Add(file_ + ": " + std::to_string(suppressed_) + " more problem(s) like the above not listed");
      r_.unlisted += suppressed_ - 1;  // the summary line above counts as one
    }
  }
  void Add(const std::string& what) {
    count_++;
    if (count_ <= max_) {
      r_.Add(file_ + ": " + what);
    } else {
      suppressed_++;
    }
  }
  const std::string& file() const { return file_; }
  uint64_t count() const { return count_; }

 private:
  Reporter& r_;
  std::string file_;
  size_t max_;
  uint64_t count_ = 0, suppressed_ = 0;
};

}  // namespace xbak::verify
