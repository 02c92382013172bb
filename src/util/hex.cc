#include "xbak/util/hex.h"

#include <cstdio>

namespace xbak::util {

std::string Hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

}  // namespace xbak::util
