// The page size and tablespace flags of the synthetic tablespaces the tests build: one definition,
// so that tests using both redo_test_util.h and synthetic_chain.h (or built as one unity source)
// name the same constants.
#pragma once

#include <cstdint>

namespace xbak::testing {

constexpr uint32_t kPs = 4096;
constexpr uint32_t kFlags = 0x13;  // full_crc32, 4 KiB pages

}  // namespace xbak::testing
