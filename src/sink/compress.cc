#include "xbak/sink/compress.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <vector>

#include "transform_sink.h"

namespace xbak::sink {
namespace {

const char* AlgoName(CompressOptions::Algo algo) { return algo == CompressOptions::kZstd ? "zstd" : "lz4"; }

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// Compresses one frame; each worker thread owns one.
class FrameCompressor : public WorkerState {
 public:
  static Result<std::unique_ptr<FrameCompressor>> Create(const CompressOptions& o) {
    std::unique_ptr<FrameCompressor> c(new FrameCompressor());
    c->algo_ = o.algo;
    if (o.algo == CompressOptions::kZstd) {
      c->zstd_.reset(ZSTD_createCCtx());
      if (!c->zstd_) return Error(ErrorCode::kInternal, "cannot allocate a zstd compression context");
      // The content size is on by default and filled in by ZSTD_compress2;
      // the checksum is what lets --decompress (and zstd -d) detect damage.
      for (auto [param, value] : {std::pair{ZSTD_c_compressionLevel, o.zstd_level},
                                  std::pair{ZSTD_c_checksumFlag, 1}, std::pair{ZSTD_c_contentSizeFlag, 1}}) {
        size_t r = ZSTD_CCtx_setParameter(c->zstd_.get(), param, value);
        if (ZSTD_isError(r)) {
          return Error(ErrorCode::kInvalidArgument, std::string("zstd: ") + ZSTD_getErrorName(r));
        }
      }
    } else {
      c->lz4_prefs_ = LZ4F_preferences_t{};
      c->lz4_prefs_.frameInfo.blockSizeID = o.chunk_size <= (size_t{64} << 10)    ? LZ4F_max64KB
                                            : o.chunk_size <= (size_t{256} << 10) ? LZ4F_max256KB
                                            : o.chunk_size <= (size_t{1} << 20)   ? LZ4F_max1MB
                                                                                  : LZ4F_max4MB;
      c->lz4_prefs_.frameInfo.blockMode = LZ4F_blockIndependent;
      c->lz4_prefs_.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
      c->lz4_prefs_.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
      c->lz4_prefs_.compressionLevel = 0;  // LZ4's fast mode, as Percona's LZ4_compress_default
    }
    return c;
  }

  Status Compress(ChunkJob& job) {
    const std::vector<uint8_t>& in = job.in;
    if (algo_ == CompressOptions::kZstd) {
      const size_t bound = ZSTD_compressBound(in.size());
      size_t r = ZSTD_compress2(zstd_.get(), job.out.Reserve(bound), bound, in.data(), in.size());
      if (ZSTD_isError(r)) {
        return Error(ErrorCode::kInternal, std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
      }
      job.out.set_size(r);
    } else {
      LZ4F_preferences_t prefs = lz4_prefs_;
      prefs.frameInfo.contentSize = in.size();
      const size_t bound = LZ4F_compressFrameBound(in.size(), &prefs);
      size_t r = LZ4F_compressFrame(job.out.Reserve(bound), bound, in.data(), in.size(), &prefs);
      if (LZ4F_isError(r)) {
        return Error(ErrorCode::kInternal, std::string("lz4 compression failed: ") + LZ4F_getErrorName(r));
      }
      job.out.set_size(r);
    }
    return Status::Ok();
  }

 private:
  FrameCompressor() = default;
  CompressOptions::Algo algo_ = CompressOptions::kZstd;
  std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree> zstd_;
  LZ4F_preferences_t lz4_prefs_{};
};

// Every file is compressed alike: a frame per chunk, by the worker's compressor.
class CompressFile : public FileTransform {
 public:
  // An empty file still gets one (empty) frame: a zero-byte .zst is not
  // something zstd -d accepts.
  bool Closing(uint64_t chunks) const override { return chunks == 0; }
  Status Apply(ChunkJob& job, WorkerState* worker) const override {
    return static_cast<FrameCompressor*>(worker)->Compress(job);
  }
};

class CompressSpec : public TransformSpec {
 public:
  explicit CompressSpec(CompressOptions o) : o_(o) {}
  std::string Suffix() const override { return std::string(CompressSuffix(o_.algo)); }
  std::string Describe() const override { return std::string(AlgoName(o_.algo)) + "-compressed"; }
  // A value above kCompressFrameBytes (lz4's --compress-chunk-size) also raises the frame size to it.
  size_t ChunkBytes() const override { return std::max(kCompressFrameBytes, o_.chunk_size); }
  int Threads() const override { return o_.threads; }
  Result<std::unique_ptr<WorkerState>> NewWorker() const override {
    XBAK_ASSIGN_OR_RETURN(std::unique_ptr<FrameCompressor> c, FrameCompressor::Create(o_));
    return std::unique_ptr<WorkerState>(std::move(c));
  }
  Result<std::unique_ptr<FileTransform>> ForFile(const std::string&) const override {
    return std::unique_ptr<FileTransform>(std::make_unique<CompressFile>());
  }

 private:
  const CompressOptions o_;
};

}  // namespace

std::string_view CompressSuffix(CompressOptions::Algo algo) {
  return algo == CompressOptions::kZstd ? ".zst" : ".lz4";
}

std::optional<CompressOptions::Algo> CompressedWith(std::string_view name) {
  for (auto algo : {CompressOptions::kZstd, CompressOptions::kLz4}) {
    if (name.ends_with(CompressSuffix(algo))) return algo;
  }
  return std::nullopt;
}

Result<std::unique_ptr<Sink>> MakeCompressingSink(std::unique_ptr<Sink> inner, CompressOptions options) {
  if (!inner) return Error(ErrorCode::kInvalidArgument, "compressing sink needs an inner sink");
  if (options.algo != CompressOptions::kZstd && options.algo != CompressOptions::kLz4) {
    return Error(ErrorCode::kInvalidArgument, "unknown compression algorithm");
  }
  if (options.threads < 1 || options.threads > 1024) {
    return Error(ErrorCode::kInvalidArgument,
                 "--compress-threads must be between 1 and 1024, got " + std::to_string(options.threads));
  }
  if (options.algo == CompressOptions::kZstd &&
      (options.zstd_level < ZSTD_minCLevel() || options.zstd_level > ZSTD_maxCLevel() ||
       options.zstd_level == 0)) {
    return Error(ErrorCode::kInvalidArgument, "--compress-zstd-level must be between " +
                                                  std::to_string(ZSTD_minCLevel()) + " and " +
                                                  std::to_string(ZSTD_maxCLevel()) + " (not 0), got " +
                                                  std::to_string(options.zstd_level));
  }
  if (options.algo == CompressOptions::kLz4 &&
      (options.chunk_size == 0 || options.chunk_size > (size_t{4} << 20))) {
    return Error(ErrorCode::kInvalidArgument,
                 "--compress-chunk-size must be between 1 byte and 4 MiB for lz4, got " +
                     std::to_string(options.chunk_size));
  }
  return MakeTransformingSink(std::move(inner), std::make_unique<CompressSpec>(options));
}

}  // namespace xbak::sink
