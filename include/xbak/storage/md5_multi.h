// MD5 of several independent messages at once ("multi-buffer" MD5), also
// piece by piece as their bytes arrive.
//
// MD5 cannot be sped up for one message: every step depends on the one
// before, so a core spends most of its time waiting on that chain (about
// 700 MB/s here, slower than MinIO serves one GET on loopback). Independent
// messages can share the core: with AVX2, eight messages advance in the eight
// 32-bit lanes of each instruction; AVX-512VL's rotate and three-input logic
// make each lane about as fast as a lone scalar MD5, so even two messages
// gain. `xbcloud get` verifies every downloaded object against its MD5, which
// was three quarters of its CPU time; it hashes each object range by range
// while the rest downloads, the ranges of all objects in flight together.
//
// Without AVX2 (other CPUs, other architectures) a portable scalar MD5 runs
// the same steps one message at a time: same results, no speed-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "xbak/storage/md5.h"

namespace xbak::storage {

// A message given as consecutive pieces (e.g. the byte ranges one object was
// downloaded in); empty pieces are allowed.
using Md5Pieces = std::vector<std::string_view>;

// The running state of one message (RFC 1321's A, B, C, D and the length).
struct Md5State {
  uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  uint64_t bytes = 0;  // hashed so far
};

// Advances `state` by `pieces`. Unless `last`, the pieces must add up to a
// multiple of 64 bytes (whole MD5 blocks; std::invalid_argument otherwise);
// with `last`, the padding is hashed too and *digest is set.
struct Md5Step {
  Md5State* state = nullptr;
  Md5Pieces pieces;
  bool last = false;
  Md5Digest* digest = nullptr;
};

// Runs every step (each of a different state), the vector lanes shared among
// them; lanes freed by short steps take the next ones.
void Md5Advance(std::span<Md5Step> steps);

// The path this CPU runs: "avx512vl", "avx2" or "scalar".
const char* Md5ManyPath();
bool Md5ManyIsVectorized();
// Md5Advance on the named path, for tests and benchmarks of each path; false
// (and nothing computed) if this CPU lacks it.
bool Md5AdvanceOn(std::string_view path, std::span<Md5Step> steps);

}  // namespace xbak::storage
