#include "xbak/util/size.h"

#include <charconv>

namespace xbak::util {

std::optional<uint64_t> ParseSize(std::string_view text, uint64_t max) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  uint64_t mul = 1;
  if (suffix == "K" || suffix == "k") {
    mul = uint64_t{1} << 10;
  } else if (suffix == "M" || suffix == "m") {
    mul = uint64_t{1} << 20;
  } else if (suffix == "G" || suffix == "g") {
    mul = uint64_t{1} << 30;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  if (v > max / mul) return std::nullopt;
  return v * mul;
}

}  // namespace xbak::util
