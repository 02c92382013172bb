// Sizes as users write them on the command line: "65536", "512K", "64M", "2G"
// (binary multiples, either case). One parser for every size option of both
// commands, and for the sizes of innodb_data_file_path, so that they all
// accept and refuse the same things.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace xbak::util {

inline constexpr uint64_t kMaxOptionSize = uint64_t{1} << 40;

// The value in bytes, or nullopt for an empty string, a non-number, an
// unknown suffix or a value above `max`: by default 1 TiB (no size option
// needs more); any `max` up to UINT64_MAX is safe, as the number times its
// suffix is checked against it without overflowing.
std::optional<uint64_t> ParseSize(std::string_view text, uint64_t max = kMaxOptionSize);

}  // namespace xbak::util
