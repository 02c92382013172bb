// Reading a backup's files for --verify: each byte once, decompressed on the
// fly, pushed in pieces to a checker; and gathering pushed bytes into the
// fixed-size units (pages, delta blocks) the checkers look at.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xbak/crypt/stream.h"
#include "xbak/sink/decompress.h"
#include "xbak/util/status.h"

namespace xbak::verify {

using Consumer = std::function<void(const uint8_t* data, size_t n)>;

// How a stored file is turned back into its content: decrypted (X.xbenc,
// whose header must name `name`), then decompressed.
struct Decoding {
  std::optional<sink::CompressOptions::Algo> algo;
  bool encrypted = false;
  std::string name;                      // the file's name in its backup without .xbenc
  const crypt::KeyRing* keys = nullptr;  // for an encrypted file
};

// Pushes the (decrypted, decompressed) content of `path` to `consume` in
// pieces. Errors (I/O, damaged or truncated encrypted or compressed data, no
// key) are returned; what was consumed before them stays consumed.
Status StreamFile(const std::string& path, const Decoding& how, const Consumer& consume,
                  uint64_t* content_bytes);

// Gathers pushed bytes into fixed-size units (pages, delta blocks) and hands
// each whole unit to `unit`, without copying when a unit lies whole in the
// input. `size` may change between units (set_size).
class Chunker {
 public:
  explicit Chunker(size_t size) : size_(size) {}
  void set_size(size_t s) { size_ = s; }
  template <typename F>
  void Feed(const uint8_t* d, size_t n, F&& unit) {
    while (n > 0) {
      if (pending_.empty() && n >= size_) {
        size_t s = size_;
        unit(d);
        d += s;
        n -= s;
        continue;
      }
      size_t take = std::min(n, size_ - pending_.size());
      pending_.insert(pending_.end(), d, d + take);
      d += take;
      n -= take;
      if (pending_.size() == size_) {
        std::vector<uint8_t> u;
        u.swap(pending_);
        unit(u.data());
      }
    }
  }
  size_t leftover() const { return pending_.size(); }
  const std::vector<uint8_t>& pending() const { return pending_; }

 private:
  size_t size_;
  std::vector<uint8_t> pending_;
};

}  // namespace xbak::verify
