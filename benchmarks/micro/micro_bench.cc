// Microbenchmarks of the checksum and compression paths, in bytes per second on one core, next to
// memcpy's on the same machine (benchmarks/run merges the JSON output; docs/benchmarks.md shows it).
//   micro_bench [--benchmark_filter=REGEX] [--benchmark_repetitions=N] [--benchmark_format=json]
// The compression input is synthetic but page-like (see MakePageLikeData), so that the ratios
// printed next to the speeds are in the range of real InnoDB tablespaces.
#include <benchmark/benchmark.h>
#include <lz4frame.h>
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "xbak/crypt/cipher.h"
#include "xbak/crypt/format.h"
#include "xbak/storage/md5_multi.h"
#include "xbak/util/crc32.h"
#include "xbak/util/crc32c.h"

namespace {

constexpr size_t kSmall = size_t{64} << 10;  // an InnoDB extent's worth of 16 KiB pages / 16
constexpr size_t kLarge = size_t{1} << 20;   // the default --read-buffer-size order of magnitude

// Deterministic data: rows of a few fixed-width fields, some repeated text and some random bytes,
// about 2:1 under zstd -3 (1.5:1 under lz4), like a tablespace of mixed rows.
std::vector<uint8_t> MakePageLikeData(size_t n) {
  std::vector<uint8_t> v;
  v.reserve(n + 128);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  static const char* kWords[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
  for (uint64_t id = 0; v.size() < n; id++) {
    char row[128];
    uint64_t r = next();
    int len = std::snprintf(row, sizeof row, "%08llu|%s-%s|%llu|", static_cast<unsigned long long>(id),
                            kWords[r & 7], kWords[(r >> 3) & 7],
                            static_cast<unsigned long long>((r >> 8) % 100000));
    v.insert(v.end(), row, row + len);
    uint64_t rnd = next();  // 8 incompressible bytes per row
    v.insert(v.end(), reinterpret_cast<uint8_t*>(&rnd), reinterpret_cast<uint8_t*>(&rnd) + 8);
  }
  v.resize(n);
  return v;
}

void Bytes(benchmark::State& state, size_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src = MakePageLikeData(n), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  Bytes(state, n);
}

void BM_Crc32c(benchmark::State& state) {  // InnoDB pages and redo (util::crc32c, ISA-L)
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf = MakePageLikeData(n);
  for (auto _ : state) benchmark::DoNotOptimize(xbak::util::crc32c::Value(buf.data(), n));
  Bytes(state, n);
}

void BM_Crc32(benchmark::State& state) {  // xbstream chunks, binlog events (util::crc32, ISA-L)
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf = MakePageLikeData(n);
  for (auto _ : state) benchmark::DoNotOptimize(xbak::util::crc32::Value(buf.data(), n));
  Bytes(state, n);
}

void BM_ZlibCrc32(benchmark::State& state) {  // the same CRC by zlib, which util::crc32 replaced
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf = MakePageLikeData(n);
  for (auto _ : state) benchmark::DoNotOptimize(crc32_z(0, buf.data(), n));
  Bytes(state, n);
  state.SetLabel(std::string("zlib ") + zlibVersion());
}

void Digest(benchmark::State& state, const EVP_MD* md) {  // as storage::Md5: one-shot EVP_Digest
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf = MakePageLikeData(n);
  unsigned char out[EVP_MAX_MD_SIZE];
  for (auto _ : state) {
    unsigned int len = 0;
    if (EVP_Digest(buf.data(), n, out, &len, md, nullptr) != 1) throw std::runtime_error("EVP_Digest");
    benchmark::DoNotOptimize(out);
  }
  Bytes(state, n);
}
void BM_Md5(benchmark::State& state) { Digest(state, EVP_md5()); }
void BM_Sha256(benchmark::State& state) { Digest(state, EVP_sha256()); }

// --encrypt: one chunk of n bytes sealed (BM_Seal) or opened and checked (BM_Open) by
// crypt::FileCipher, as the encrypting sink and --decrypt run them (a cipher context per chunk
// included). Target: 2 GB/s per core with AES-NI or ARMv8's crypto extensions.
std::unique_ptr<xbak::crypt::FileCipher> BenchCipher(xbak::crypt::Algorithm a) {
  auto key = xbak::crypt::Key::FromBytes(std::string(xbak::crypt::kKeyBytes, 'k'), "bench");
  if (!key.ok()) throw std::runtime_error(key.status().message());
  static std::unique_ptr<xbak::crypt::Key> keep;  // outlives every cipher of the run
  keep = std::move(key).value();
  xbak::crypt::FileHeader h;
  h.algorithm = a;
  h.key_id = keep->id();
  h.path = "bench/t.ibd";
  auto c = xbak::crypt::FileCipher::Create(*keep, h, "bench");
  if (!c.ok()) throw std::runtime_error(c.status().message());
  return std::move(c).value();
}

void BM_Seal(benchmark::State& state, xbak::crypt::Algorithm a) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto data = MakePageLikeData(n);
  auto cipher = BenchCipher(a);
  std::string out;
  uint64_t index = 0;
  for (auto _ : state) {
    out.clear();
    if (!cipher->Seal(index++, false, data.data(), n, &out).ok()) state.SkipWithError("seal failed");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Open(benchmark::State& state, xbak::crypt::Algorithm a) {
  const size_t n = static_cast<size_t>(state.range(0));
  const auto data = MakePageLikeData(n);
  auto cipher = BenchCipher(a);
  std::string sealed;
  if (!cipher->Seal(0, false, data.data(), n, &sealed).ok()) throw std::runtime_error("seal failed");
  std::vector<uint8_t> plain(n);
  const auto* p = reinterpret_cast<const uint8_t*>(sealed.data()) + xbak::crypt::kChunkHeaderBytes;
  for (auto _ : state) {
    if (!cipher->Open(0, false, p, n, p + n, plain.data(), 0).ok()) state.SkipWithError("open failed");
    benchmark::DoNotOptimize(plain.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

// storage::Md5Advance (xbcloud get's object check) over `lanes` buffers of n bytes at once, on one
// vector path; bytes per second counts all the buffers.
void BM_Md5Many(benchmark::State& state, const char* path, size_t lanes) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<std::vector<uint8_t>> bufs(lanes, MakePageLikeData(n));
  std::vector<xbak::storage::Md5Pieces> msgs;
  for (auto& b : bufs) msgs.push_back({std::string_view(reinterpret_cast<const char*>(b.data()), n)});
  std::vector<xbak::storage::Md5Digest> out(lanes);
  auto run = [&] {
    std::vector<xbak::storage::Md5State> states(lanes);
    std::vector<xbak::storage::Md5Step> steps;
    for (size_t i = 0; i < lanes; i++) steps.push_back({&states[i], msgs[i], true, &out[i]});
    return xbak::storage::Md5AdvanceOn(path, steps);
  };
  if (!run()) return state.SkipWithError("not on this CPU");
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(out.data());
  }
  Bytes(state, n * lanes);
  state.SetLabel(std::to_string(lanes) + " buffers at once, " + path);
}

// zstd with the parameters of --compress=zstd (src/sink/compress.cc): one frame per chunk,
// content size and checksum on.
struct Zstd {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  explicit Zstd(int level) {
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  }
  ~Zstd() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
  Zstd(const Zstd&) = delete;
  Zstd& operator=(const Zstd&) = delete;
  size_t Compress(const std::vector<uint8_t>& in, std::vector<uint8_t>& out) {
    size_t r = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(r)) throw std::runtime_error(ZSTD_getErrorName(r));
    return r;
  }
};

void BM_ZstdCompress(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Zstd z(static_cast<int>(state.range(1)));
  std::vector<uint8_t> in = MakePageLikeData(n), out(ZSTD_compressBound(n));
  size_t csize = 0;
  for (auto _ : state) benchmark::DoNotOptimize(csize = z.Compress(in, out));
  Bytes(state, n);
  state.counters["ratio"] = static_cast<double>(n) / static_cast<double>(csize);
}

void BM_ZstdDecompress(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  Zstd z(static_cast<int>(state.range(1)));
  std::vector<uint8_t> in = MakePageLikeData(n), comp(ZSTD_compressBound(n)), out(n);
  comp.resize(z.Compress(in, comp));
  for (auto _ : state) {
    size_t r = ZSTD_decompressDCtx(z.d, out.data(), out.size(), comp.data(), comp.size());
    if (r != n) throw std::runtime_error("zstd decompression");
    benchmark::DoNotOptimize(out.data());
  }
  Bytes(state, n);
  if (out != in) state.SkipWithError("zstd round trip differs");
}

// lz4 with the frame settings of --compress=lz4: independent blocks, content checksum, fast mode.
LZ4F_preferences_t Lz4Prefs(size_t n) {
  LZ4F_preferences_t p{};
  p.frameInfo.blockSizeID = n <= kSmall ? LZ4F_max64KB : LZ4F_max1MB;
  p.frameInfo.blockMode = LZ4F_blockIndependent;
  p.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  p.frameInfo.contentSize = n;
  return p;
}

size_t Lz4Compress(const std::vector<uint8_t>& in, std::vector<uint8_t>& out, const LZ4F_preferences_t& p) {
  size_t r = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &p);
  if (LZ4F_isError(r)) throw std::runtime_error(LZ4F_getErrorName(r));
  return r;
}

void BM_Lz4Compress(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  LZ4F_preferences_t p = Lz4Prefs(n);
  std::vector<uint8_t> in = MakePageLikeData(n), out(LZ4F_compressFrameBound(n, &p));
  size_t csize = 0;
  for (auto _ : state) benchmark::DoNotOptimize(csize = Lz4Compress(in, out, p));
  Bytes(state, n);
  state.counters["ratio"] = static_cast<double>(n) / static_cast<double>(csize);
}

void BM_Lz4Decompress(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  LZ4F_preferences_t p = Lz4Prefs(n);
  std::vector<uint8_t> in = MakePageLikeData(n), comp(LZ4F_compressFrameBound(n, &p)), out(n);
  comp.resize(Lz4Compress(in, comp, p));
  LZ4F_dctx* d = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) throw std::runtime_error("lz4 dctx");
  for (auto _ : state) {
    size_t dst = out.size(), src = comp.size();
    size_t r = LZ4F_decompress(d, out.data(), &dst, comp.data(), &src, nullptr);
    if (r != 0 || dst != n) throw std::runtime_error("lz4 decompression");
    benchmark::DoNotOptimize(out.data());
  }
  LZ4F_freeDecompressionContext(d);
  Bytes(state, n);
  if (out != in) state.SkipWithError("lz4 round trip differs");
}

void Sizes(benchmark::internal::Benchmark* b) { b->ArgName("bytes")->Arg(kSmall)->Arg(kLarge); }
void Levels(benchmark::internal::Benchmark* b) {
  b->ArgNames({"bytes", "level"});
  for (int level : {1, 3}) {
    for (size_t n : {kSmall, kLarge}) b->Args({static_cast<int64_t>(n), level});
  }
}

}  // namespace

BENCHMARK(BM_Memcpy)->Apply(Sizes);
BENCHMARK(BM_Crc32c)->Apply(Sizes);
BENCHMARK(BM_Crc32)->Apply(Sizes);
BENCHMARK(BM_ZlibCrc32)->Apply(Sizes);
BENCHMARK(BM_Md5)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Md5Many, x2_avx2, "avx2", 2)->ArgName("bytes")->Arg(kLarge);
BENCHMARK_CAPTURE(BM_Md5Many, x8_avx2, "avx2", 8)->ArgName("bytes")->Arg(kLarge);
BENCHMARK_CAPTURE(BM_Md5Many, x2_avx512vl, "avx512vl", 2)->ArgName("bytes")->Arg(kLarge);
BENCHMARK_CAPTURE(BM_Md5Many, x8_avx512vl, "avx512vl", 8)->ArgName("bytes")->Arg(kLarge);
BENCHMARK(BM_Sha256)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Seal, aes256gcm, xbak::crypt::Algorithm::kAes256Gcm)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Seal, chacha20poly1305, xbak::crypt::Algorithm::kChaCha20Poly1305)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Open, aes256gcm, xbak::crypt::Algorithm::kAes256Gcm)->Apply(Sizes);
BENCHMARK(BM_ZstdCompress)->Apply(Levels);
BENCHMARK(BM_ZstdDecompress)->Apply(Levels);
BENCHMARK(BM_Lz4Compress)->Apply(Sizes);
BENCHMARK(BM_Lz4Decompress)->Apply(Sizes);

BENCHMARK_MAIN();
