// Sizes as users write them on the command line: "65536", "512K", "64M", "2G"
// (binary multiples, either case). One parser for every size option of both
// commands, so that they all accept and refuse the same things.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace xbak {

// The value in bytes, or nullopt for an empty string, a non-number, an
// unknown suffix or a value above 1 TiB (no size option needs more, and the
// bound keeps every product in range).
std::optional<uint64_t> ParseSize(std::string_view text);

}  // namespace xbak
