#include "xbak/storage/md5_multi.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace xbak::storage {
namespace {

// Feeds one step to a lane as 64-byte blocks, and for a last step the MD5
// padding (RFC 1321 3.1-3.2: a 0x80 byte, zeros, and the message's bit
// length in the last 8 bytes of the last block). Whole blocks inside a piece
// are used in place; a block that straddles pieces, or holds the padding, is
// assembled in `tmp`.
class BlockSource {
 public:
  BlockSource() = default;
  BlockSource(const Md5Pieces* pieces, bool last, uint64_t bytes_before) : pieces_(pieces), last_(last) {
    uint64_t n = bytes_before;
    for (auto p : *pieces) n += p.size();
    bits_ = n * 8;
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
    if (!last_) {  // n == 0: Md5Advance checked the step is whole blocks
      state_ = State::kDone;
      return nullptr;
    }
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
  bool last_ = false;
  size_t piece_ = 0, offset_ = 0;
  uint64_t bits_ = 0;
  State state_ = State::kData;
};

// Writes a step's result back: the new state and, for a last step, the digest.
void Complete(Md5Step& step, const uint32_t h[4]) {
  uint64_t n = step.state->bytes;
  for (auto p : step.pieces) n += p.size();
  for (int k = 0; k < 4; k++) step.state->h[k] = h[k];
  step.state->bytes = n;
  if (step.last && step.digest != nullptr) {
    for (int i = 0; i < 4; i++) {
      for (int b = 0; b < 4; b++) (*step.digest)[4 * i + b] = static_cast<uint8_t>(h[i] >> (8 * b));
    }
  }
}

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

// One 64-byte block into one state: the portable path (and the reference
// the vector paths are tested against).
void CompressScalar(uint32_t h[4], const uint8_t* block, const uint32_t* sine) {
  uint32_t w[16];
  for (int j = 0; j < 16; j++) {
    w[j] = static_cast<uint32_t>(block[4 * j]) | static_cast<uint32_t>(block[4 * j + 1]) << 8 |
           static_cast<uint32_t>(block[4 * j + 2]) << 16 | static_cast<uint32_t>(block[4 * j + 3]) << 24;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  for (int i = 0; i < 64; i++) {
    int round = i / 16;
    uint32_t f = round == 0   ? d ^ (b & (c ^ d))
                 : round == 1 ? c ^ (d & (b ^ c))
                 : round == 2 ? b ^ c ^ d
                              : c ^ (b | ~d);
    uint32_t t = a + f + w[WordIndex(i)] + sine[i];
    int s = kShift[round][i % 4];
    a = d;
    d = c;
    c = b;
    b = b + ((t << s) | (t >> (32 - s)));
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
}

void AdvanceScalar(std::span<Md5Step> steps) {
  const uint32_t* sine = SineTable().data();
  alignas(16) uint8_t tmp[64];
  for (auto& step : steps) {
    uint32_t h[4] = {step.state->h[0], step.state->h[1], step.state->h[2], step.state->h[3]};
    BlockSource source(&step.pieces, step.last, step.state->bytes);
    while (const uint8_t* block = source.Next(tmp)) CompressScalar(h, block, sine);
    Complete(step, h);
  }
}

#if defined(__x86_64__)

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

void Run(Path p, std::span<Md5Step> steps) {
  for (const auto& step : steps) {
    uint64_t bytes = 0;
    for (auto piece : step.pieces) bytes += piece.size();
    if (!step.last && bytes % 64 != 0) {
      throw std::invalid_argument("Md5Advance: a step that is not the last must be whole 64-byte blocks");
    }
  }
#if defined(__x86_64__)
  if (p == Path::kAvx512vl) return avx512vl::AdvanceLanes(steps);
  if (p == Path::kAvx2) return avx2::AdvanceLanes(steps);
#endif
  (void)p;
  AdvanceScalar(steps);
}

}  // namespace

const char* Md5ManyPath() { return Name(Chosen()); }

bool Md5ManyIsVectorized() { return Chosen() != Path::kScalar; }

void Md5Advance(std::span<Md5Step> steps) { Run(Chosen(), steps); }

bool Md5AdvanceOn(std::string_view path, std::span<Md5Step> steps) {
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
    Run(p, steps);
    return true;
  }
  return false;
}

}  // namespace xbak::storage
