// Byte-order helpers. InnoDB pages and redo are big-endian ("mach_read_from_N");
// xbstream headers are little-endian. memcpy keeps these free of alignment UB.
#pragma once

#include <cstdint>
#include <cstring>

namespace xbak::util {

inline uint16_t LoadBE16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t LoadBE32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline uint64_t LoadBE64(const uint8_t* p) { return (uint64_t{LoadBE32(p)} << 32) | LoadBE32(p + 4); }
inline void StoreBE16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void StoreBE32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}
inline void StoreBE64(uint8_t* p, uint64_t v) {
  StoreBE32(p, uint32_t(v >> 32));
  StoreBE32(p + 4, uint32_t(v));
}

inline uint32_t LoadLE32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t LoadLE64(const uint8_t* p) {
  return uint64_t{LoadLE32(p)} | (uint64_t{LoadLE32(p + 4)} << 32);
}
inline void StoreLE32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v >> 16);
  p[3] = uint8_t(v >> 24);
}
inline void StoreLE64(uint8_t* p, uint64_t v) {
  StoreLE32(p, uint32_t(v));
  StoreLE32(p + 4, uint32_t(v >> 32));
}

}  // namespace xbak::util
