// Bytes and numbers as hexadecimal: one spelling for every layer, so that
// a value reads the same wherever it is reported (and a script matching one
// message matches them all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xbak::util {

// "0x" and eight lowercase hex digits: 0xDEADBEEF -> "0xdeadbeef", 5 ->
// "0x00000005" (checksums, magics, flags, record types).
std::string Hex32(uint32_t v);

// Bytes as lowercase hex digits, two per byte, no prefix (ids: a key id,
// the start of a backup id).
std::string HexBytes(const uint8_t* p, size_t n);

// The value of one hex digit (either case); -1 for any other character.
int HexDigitValue(char c);

// Exactly 2 * n hex digits (either case) into out[0..n); false, with out
// partly written, when `hex` is anything else.
bool ParseHexBytes(std::string_view hex, uint8_t* out, size_t n);

}  // namespace xbak::util
