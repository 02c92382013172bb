// Wall time of a long command's phases, for its last log line: where the
// time of a large run went ("listing 0.80 s, base page 0s 1.68 s, ...").
// benchmarks/scale_bench.sh reads the incremental apply's.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace xbak::util {

class PhaseClock {
 public:
  void Mark(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    parts_.emplace_back(name, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  double Total() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::string Summary() const {
    std::string out;
    char b[64];
    for (const auto& [name, secs] : parts_) {
      std::snprintf(b, sizeof b, "%s%s %.2f s", out.empty() ? "" : ", ", name, secs);
      out += b;
    }
    return out;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
  std::vector<std::pair<const char*, double>> parts_;
};

}  // namespace xbak::util
