// MD5 of several independent messages at once ("multi-buffer" MD5).
//
// MD5 cannot be sped up for one message: every step depends on the one
// before, so a core spends most of its time waiting on that chain (about
// 700 MB/s here). Independent messages can share the core: with AVX2, eight
// messages advance in the eight 32-bit lanes of each instruction, for several
// times the throughput of one; AVX-512VL's rotate and three-input logic make
// each lane about as fast as a lone scalar MD5, so even two objects gain. `xbcloud get` verifies each
// downloaded object against its MD5 and usually has several objects waiting: that check was three quarters of
// its CPU time.
//
// Without AVX2 (other CPUs, other architectures) this falls back to one
// OpenSSL MD5 per message: same results, no speed-up.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "xbak/storage/md5.h"

namespace xbak::storage {

// A message given as consecutive pieces (e.g. the byte ranges one object was
// downloaded in); empty pieces are allowed.
using Md5Pieces = std::vector<std::string_view>;

// out[i] = MD5 of messages[i] (the concatenation of its pieces), for every i;
// out.size() must equal messages.size(). Any number of messages: lanes freed
// by short messages take the next ones.
void Md5Many(std::span<const Md5Pieces> messages, std::span<Md5Digest> out);

// True when Md5Many uses a vector path on this CPU; Md5ManyPath names it
// ("avx512vl", "avx2" or "scalar": one OpenSSL MD5 per message).
bool Md5ManyIsVectorized();
const char* Md5ManyPath();
// Md5Many on the named path, for tests and benchmarks of each path; false
// (and nothing computed) if this CPU lacks it.
bool Md5ManyOn(std::string_view path, std::span<const Md5Pieces> messages, std::span<Md5Digest> out);

}  // namespace xbak::storage
