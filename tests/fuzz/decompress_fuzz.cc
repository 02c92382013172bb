// libFuzzer target for the --decompress decoders: arbitrary bytes as a .zst
// and as a .lz4 file, fed whole and in pieces whose sizes come from the input.
// Whatever the bytes, the decoder must fail cleanly or succeed (no crash, no
// sanitizer report, no endless loop), and feeding in pieces must give exactly
// the same outcome and output as feeding at once: the frame-boundary and
// byte-offset bookkeeping must not depend on how reads are cut.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"

namespace {

// Decompressed output is hashed, not kept: a small input may legitimately
// expand a lot (a zstd frame of zeros), and the fuzzer must not run out of
// memory on valid data.
struct Digest {
  uint64_t bytes = 0;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  void Add(const uint8_t* p, size_t n) {
    bytes += n;
    for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  }
  bool operator==(const Digest&) const = default;
};

// Stops decoding once this much came out: enough to cover every code path,
// small enough to keep each input fast.
constexpr uint64_t kMaxOutput = uint64_t{64} << 20;

struct Outcome {
  bool ok = false;
  std::string message;
  Digest digest;
};

Outcome Run(xbak::sink::CompressOptions::Algo algo, const std::vector<uint8_t>& in,
            const std::vector<size_t>& cuts) {
  Outcome o;
  auto dec = xbak::sink::Decompressor::Create(algo, "fuzz");
  if (!dec.ok()) std::abort();
  auto out = [&o](const uint8_t* p, size_t n) -> xbak::Status {
    o.digest.Add(p, n);
    if (o.digest.bytes > kMaxOutput) return xbak::Error(xbak::ErrorCode::kCancelled, "output limit");
    return xbak::Status::Ok();
  };
  size_t pos = 0;
  xbak::Status st;
  for (size_t cut : cuts) {
    size_t n = std::min(cut, in.size() - pos);
    // Exact-size copies, so that ASan catches any read past a piece.
    std::vector<uint8_t> piece(in.begin() + static_cast<long>(pos), in.begin() + static_cast<long>(pos + n));
    st = (*dec)->Feed(piece.data(), piece.size(), out);
    pos += n;
    if (!st.ok()) break;
  }
  if (st.ok()) st = (*dec)->Finish();
  o.ok = st.ok();
  o.message = st.message();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> in(data, data + size);
  // Piece sizes: 1..16 bytes, taken cyclically from the input itself.
  std::vector<size_t> pieces;
  for (size_t pos = 0, k = 0; pos < size; ++k) {
    size_t n = 1 + (size > 0 ? data[k % size] % 16 : 0);
    pieces.push_back(n);
    pos += n;
  }
  for (auto algo : {xbak::sink::CompressOptions::kZstd, xbak::sink::CompressOptions::kLz4}) {
    Outcome whole = Run(algo, in, {size});
    Outcome split = Run(algo, in, pieces);
    // The output limit can cut the two runs at different points; compare
    // only runs that stayed under it.
    if (whole.digest.bytes > kMaxOutput || split.digest.bytes > kMaxOutput) continue;
    if (whole.ok != split.ok) std::abort();
    if (whole.ok && !(whole.digest == split.digest)) std::abort();
    // A failure must say what and where: the name and a byte offset.
    if (!whole.ok && whole.message.find("fuzz") == std::string::npos) std::abort();
  }
  return 0;
}
