#include <lz4frame.h>
#include <zstd.h>

#include <memory>
#include <string>
#include <vector>

#include "decode_files.h"
#include "xbak/sink/decompress.h"

namespace xbak::sink {
namespace {

constexpr size_t kDecodeOutBytes = size_t{1} << 20;

// Not zero-filled: filling 1 MiB for each of 20,000 small files was a twentieth of a
// --decompress's time.
std::unique_ptr<uint8_t[]> NewOutBuffer() {
  return std::make_unique_for_overwrite<uint8_t[]>(kDecodeOutBytes);
}

std::string Truncated(const char* algo, const std::string& name, uint64_t end, uint64_t frame_start) {
  return std::string("truncated ") + algo + " data in " + name + ": ends at byte " + std::to_string(end) +
         " inside the frame at byte " + std::to_string(frame_start);
}

class ZstdDecompressor : public Decompressor {
 public:
  explicit ZstdDecompressor(std::string name)
      : name_(std::move(name)), dctx_(ZSTD_createDCtx()), out_(NewOutBuffer()) {}
  ~ZstdDecompressor() override { ZSTD_freeDCtx(dctx_); }
  ZstdDecompressor(const ZstdDecompressor&) = delete;
  ZstdDecompressor& operator=(const ZstdDecompressor&) = delete;
  bool ok() const { return dctx_ != nullptr; }

  Status Feed(const uint8_t* data, size_t n, const Output& out) override {
    ZSTD_inBuffer in{data, n, 0};
    while (true) {
      ZSTD_outBuffer ob{out_.get(), kDecodeOutBytes, 0};
      const size_t before = in.pos;
      size_t r = ZSTD_decompressStream(dctx_, &ob, &in);
      if (ZSTD_isError(r)) {
        return Error(ErrorCode::kCorrupt, "corrupt zstd data in " + name_ + " at byte " +
                                              std::to_string(frame_start_) + ": " + ZSTD_getErrorName(r));
      }
      if (in.pos > before) in_frame_ = true;
      if (ob.pos > 0) XBAK_RETURN_IF_ERROR(out(out_.get(), ob.pos));
      if (r == 0 && in_frame_) {
        // A frame ended (checksum and size checked); the next starts here.
        ++frames_;
        in_frame_ = false;
        frame_start_ = consumed_ + in.pos;
      }
      // Done when all input is taken and the decoder has nothing more to
      // give: it filled less than the whole output buffer.
      if (in.pos == in.size && ob.pos < ob.size) break;
      if (in.pos == before && ob.pos == 0) {
        return Error(ErrorCode::kInternal, "zstd decoder stalled in " + name_);  // cannot happen; never spin
      }
    }
    consumed_ += n;
    return Status::Ok();
  }

  Status Finish() override {
    if (in_frame_ || frames_ == 0) {
      return Error(ErrorCode::kCorrupt, Truncated("zstd", name_, consumed_, frame_start_));
    }
    return Status::Ok();
  }

 private:
  const std::string name_;
  ZSTD_DCtx* dctx_;
  std::unique_ptr<uint8_t[]> out_;
  uint64_t consumed_ = 0, frame_start_ = 0, frames_ = 0;
  bool in_frame_ = false;
};

class Lz4Decompressor : public Decompressor {
 public:
  explicit Lz4Decompressor(std::string name) : name_(std::move(name)), out_(NewOutBuffer()) {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx_, LZ4F_VERSION))) dctx_ = nullptr;
  }
  ~Lz4Decompressor() override {
    if (dctx_ != nullptr) LZ4F_freeDecompressionContext(dctx_);
  }
  Lz4Decompressor(const Lz4Decompressor&) = delete;
  Lz4Decompressor& operator=(const Lz4Decompressor&) = delete;
  bool ok() const { return dctx_ != nullptr; }

  Status Feed(const uint8_t* data, size_t n, const Output& out) override {
    size_t pos = 0;
    while (true) {
      size_t src = n - pos;
      size_t dst = kDecodeOutBytes;
      size_t r = LZ4F_decompress(dctx_, out_.get(), &dst, data + pos, &src, nullptr);
      if (LZ4F_isError(r)) {
        return Error(ErrorCode::kCorrupt, "corrupt lz4 data in " + name_ + " at byte " +
                                              std::to_string(frame_start_) + ": " + LZ4F_getErrorName(r));
      }
      pos += src;
      if (src > 0) in_frame_ = true;
      if (dst > 0) XBAK_RETURN_IF_ERROR(out(out_.get(), dst));
      if (r == 0 && in_frame_) {
        ++frames_;
        in_frame_ = false;
        frame_start_ = consumed_ + pos;
      }
      if (pos == n && dst < kDecodeOutBytes) break;
      if (src == 0 && dst == 0) {
        return Error(ErrorCode::kInternal, "lz4 decoder stalled in " + name_);  // cannot happen; never spin
      }
    }
    consumed_ += n;
    return Status::Ok();
  }

  Status Finish() override {
    if (in_frame_ || frames_ == 0) {
      return Error(ErrorCode::kCorrupt, Truncated("lz4", name_, consumed_, frame_start_));
    }
    return Status::Ok();
  }

 private:
  const std::string name_;
  LZ4F_dctx* dctx_ = nullptr;
  std::unique_ptr<uint8_t[]> out_;
  uint64_t consumed_ = 0, frame_start_ = 0, frames_ = 0;
  bool in_frame_ = false;
};

}  // namespace

Result<std::unique_ptr<Decompressor>> Decompressor::Create(CompressOptions::Algo algo, std::string name) {
  if (algo == CompressOptions::kZstd) {
    auto d = std::make_unique<ZstdDecompressor>(std::move(name));
    if (!d->ok()) return Error(ErrorCode::kInternal, "cannot allocate a zstd decompression context");
    return std::unique_ptr<Decompressor>(std::move(d));
  }
  auto d = std::make_unique<Lz4Decompressor>(std::move(name));
  if (!d->ok()) return Error(ErrorCode::kInternal, "cannot allocate an lz4 decompression context");
  return std::unique_ptr<Decompressor>(std::move(d));
}

Status DecompressBackup(const DecompressOptions& options) {
  DecodeRun run{"--decompress", "decompress", options.target_dir, options.parallel, options.remove_original};
  std::string qpress;  // the first file of mariabackup's older format, refused
  XBAK_ASSIGN_OR_RETURN(
      std::vector<DecodeJob> jobs,
      FindDecodeJobs(run, [&qpress](const std::string& path, uint64_t size) -> std::optional<DecodeJob> {
        if (path.ends_with(".qp") && qpress.empty()) qpress = path;
        const auto algo = CompressedWith(path);
        if (!algo) return std::nullopt;
        return DecodeJob{path, path.substr(0, path.size() - CompressSuffix(*algo).size()), size,
                         [algo = *algo, path]() -> Result<std::unique_ptr<FileDecoder>> {
                           XBAK_ASSIGN_OR_RETURN(auto d, Decompressor::Create(algo, path));
                           return std::unique_ptr<FileDecoder>(std::move(d));
                         }};
      }));
  if (!qpress.empty()) {
    // Left as it is, the backup would look decompressed and lack the file.
    return Error(ErrorCode::kUnsupported,
                 qpress +
                     " is compressed with qpress (mariabackup --compress), which xbak "
                     "does not read: decompress it with qpress -d; nothing was decompressed");
  }
  return RunDecodeJobs(run, std::move(jobs));
}

}  // namespace xbak::sink
