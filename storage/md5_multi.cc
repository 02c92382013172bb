#include "xbak/storage/md5_multi.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace xbak::storage {
namespace {

#if defined(__x86_64__)

// Feeds one message to a lane as 64-byte blocks, MD5 padding included
// (RFC 1321 3.1-3.2: a 0x80 byte, zeros, and the bit length in the last 8
// bytes of the last block). Whole blocks inside a piece are used in place;
// a block that straddles pieces, or holds the padding, is assembled in `tmp`.
class BlockSource {
 public:
  BlockSource() = default;
  explicit BlockSource(const Md5Pieces* pieces) : pieces_(pieces) {
    for (auto p : *pieces) bits_ += static_cast<uint64_t>(p.size()) * 8;
  }

  // The next block, or nullptr after the last one.
  const uint8_t* Next(uint8_t* tmp) {
    if (state_ == State::kDone) return nullptr;
    if (state_ == State::kLengthBlock) {
      std::memset(tmp, 0, 56);
      PutLength(tmp);
      state_ = State::kDone;
      return tmp;
    }
    SkipEmpty();
    if (piece_ < pieces_->size() && (*pieces_)[piece_].size() - offset_ >= 64) {
      const auto* p = reinterpret_cast<const uint8_t*>((*pieces_)[piece_].data()) + offset_;
      offset_ += 64;
      return p;
    }
    size_t n = 0;  // bytes of message in this block
    while (n < 64 && piece_ < pieces_->size()) {
      std::string_view p = (*pieces_)[piece_];
      size_t take = std::min(64 - n, p.size() - offset_);
      std::memcpy(tmp + n, p.data() + offset_, take);
      n += take;
      offset_ += take;
      SkipEmpty();
    }
    if (n == 64) return tmp;
    // The message ends in this block.
    tmp[n] = 0x80;
    std::memset(tmp + n + 1, 0, 63 - n);
    if (n + 1 <= 56) {
      PutLength(tmp);
      state_ = State::kDone;
    } else {
      state_ = State::kLengthBlock;  // no room for the length: one more block
    }
    return tmp;
  }

 private:
  enum class State { kData, kLengthBlock, kDone };

  void SkipEmpty() {
    while (piece_ < pieces_->size() && offset_ == (*pieces_)[piece_].size()) {
      piece_++;
      offset_ = 0;
    }
  }
  void PutLength(uint8_t* block) const {
    for (int i = 0; i < 8; i++) block[56 + i] = static_cast<uint8_t>(bits_ >> (8 * i));
  }

  const Md5Pieces* pieces_ = nullptr;
  size_t piece_ = 0, offset_ = 0;
  uint64_t bits_ = 0;
  State state_ = State::kData;
};

constexpr std::array<uint32_t, 4> kInit = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
// Left rotations per step, four per round (RFC 1321 3.4).
constexpr int kShift[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

// T[i] = floor(2^32 * |sin(i + 1)|), as RFC 1321 defines it; computed in
// double precision, which gives every one of the 64 values exactly (the unit
// test compares whole digests with OpenSSL's).
const std::array<uint32_t, 64>& SineTable() {
  static const std::array<uint32_t, 64> table = [] {
    std::array<uint32_t, 64> t{};
    for (int i = 0; i < 64; i++) t[i] = static_cast<uint32_t>(std::fabs(std::sin(i + 1.0)) * 4294967296.0);
    return t;
  }();
  return table;
}

// Message word used by step i.
constexpr int WordIndex(int i) {
  return i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16;
}

Md5Digest DigestOf(const uint32_t state[4]) {
  Md5Digest d{};
  for (int i = 0; i < 4; i++) {
    for (int b = 0; b < 4; b++) d[4 * i + b] = static_cast<uint8_t>(state[i] >> (8 * b));
  }
  return d;
}

namespace avx2 {
#define XBAK_MD5_TARGET __attribute__((target("avx2")))
#define XBAK_MD5_AVX512VL 0
#include "md5_multi_lanes.inc"
#undef XBAK_MD5_TARGET
#undef XBAK_MD5_AVX512VL
}  // namespace avx2

namespace avx512vl {
#define XBAK_MD5_TARGET __attribute__((target("avx2,avx512f,avx512vl")))
#define XBAK_MD5_AVX512VL 1
#include "md5_multi_lanes.inc"
#undef XBAK_MD5_TARGET
#undef XBAK_MD5_AVX512VL
}  // namespace avx512vl

enum class Path { kScalar, kAvx2, kAvx512vl };

Path Detect() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return Path::kAvx512vl;
  if (__builtin_cpu_supports("avx2")) return Path::kAvx2;
  return Path::kScalar;
}

#else

enum class Path { kScalar };
Path Detect() { return Path::kScalar; }

#endif

Path Chosen() {
  static const Path path = Detect();
  return path;
}

const char* Name(Path p) {
  switch (p) {
    case Path::kScalar:
      return "scalar";
#if defined(__x86_64__)
    case Path::kAvx2:
      return "avx2";
    case Path::kAvx512vl:
      return "avx512vl";
#endif
  }
  return "scalar";
}

void Run([[maybe_unused]] Path p, std::span<const Md5Pieces> messages, std::span<Md5Digest> out) {
#if defined(__x86_64__)
  if (messages.size() > 1 && p == Path::kAvx512vl) return avx512vl::Md5ManyLanes(messages, out);
  if (messages.size() > 1 && p == Path::kAvx2) return avx2::Md5ManyLanes(messages, out);
#endif
  for (size_t i = 0; i < messages.size(); i++) {
    Md5Builder b;
    for (auto piece : messages[i]) b.Update(piece.data(), piece.size());
    out[i] = b.Finish();
  }
}

}  // namespace

const char* Md5ManyPath() { return Name(Chosen()); }

bool Md5ManyIsVectorized() { return Chosen() != Path::kScalar; }

void Md5Many(std::span<const Md5Pieces> messages, std::span<Md5Digest> out) { Run(Chosen(), messages, out); }

bool Md5ManyOn(std::string_view path, std::span<const Md5Pieces> messages, std::span<Md5Digest> out) {
  Path best = Detect();
  for (Path p : {
         Path::kScalar
#if defined(__x86_64__)
             ,
             Path::kAvx2, Path::kAvx512vl
#endif
       }) {
    if (path != Name(p)) continue;
    if (static_cast<int>(p) > static_cast<int>(best)) return false;  // not on this CPU
    Run(p, messages, out);
    return true;
  }
  return false;
}

}  // namespace xbak::storage
