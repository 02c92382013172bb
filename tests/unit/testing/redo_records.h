// Redo records as the server frames them (type nibble, length, varints):
// one encoder for every test that writes a synthetic log, whatever layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xbak/innodb/redo_log.h"

namespace xbak::testing::redo_records {

using Bytes = std::vector<uint8_t>;

inline void Append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

inline Bytes Varint(uint32_t v) {
  uint8_t b[5];
  size_t n = innodb::EncodeVarint(v, b);
  return Bytes(b, b + n);
}

// A record with the server's length framing around `payload`.
inline Bytes Record(uint8_t type, const Bytes& payload) {
  Bytes r;
  if (!payload.empty() && payload.size() <= 15) {
    r.push_back(static_cast<uint8_t>(type | payload.size()));
  } else {
    // V = bytes after the first byte, varint included, minus 15; the varint's
    // own length depends on V, so try each length.
    r.push_back(type);
    for (size_t vlen = 1; vlen <= 5; vlen++) {
      uint32_t v = static_cast<uint32_t>(payload.size() + vlen - 15);
      Bytes enc = Varint(v);
      if (enc.size() == vlen) {
        Append(r, enc);
        break;
      }
    }
  }
  Append(r, payload);
  return r;
}

// A FILE_ record (FILE_CREATE, FILE_MODIFY, ...): space id, page 0, name.
inline Bytes FileRecord(uint8_t type, uint32_t space, const std::string& name) {
  Bytes p = Varint(space);
  p.push_back(0);  // page 0
  p.insert(p.end(), name.begin(), name.end());
  return Record(type, p);
}

}  // namespace xbak::testing::redo_records
