// A set of pages of tablespaces, as a bitmap per tablespace: a bit per page
// up to the highest one added, so that the pages of a terabyte of deltas
// (64 million) take 8 MiB, not the gigabytes a hash set of them would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace xbak::prepare {

class PageSet {
 public:
  void Add(uint32_t space_id, uint32_t page_no) {
    std::vector<uint64_t>& bits = spaces_[space_id];
    if (bits.size() <= page_no / 64) bits.resize(page_no / 64 + 1);
    uint64_t& word = bits[page_no / 64];
    const uint64_t bit = uint64_t{1} << (page_no % 64);
    if ((word & bit) == 0) count_++;
    word |= bit;
  }
  bool Contains(uint32_t space_id, uint32_t page_no) const {
    auto it = spaces_.find(space_id);
    if (it == spaces_.end() || it->second.size() <= page_no / 64) return false;
    return (it->second[page_no / 64] >> (page_no % 64)) & 1;
  }
  size_t size() const { return count_; }

 private:
  std::unordered_map<uint32_t, std::vector<uint64_t>> spaces_;
  size_t count_ = 0;
};

}  // namespace xbak::prepare
