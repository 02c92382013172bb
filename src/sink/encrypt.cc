#include "xbak/sink/encrypt.h"

#include <string>

#include "transform_sink.h"
#include "xbak/crypt/cipher.h"

namespace xbak::sink {
namespace {

// FileCipher seals on any thread: the workers keep nothing of their own.
class NoState : public WorkerState {};

class EncryptFile : public FileTransform {
 public:
  explicit EncryptFile(std::unique_ptr<crypt::FileCipher> cipher) : cipher_(std::move(cipher)) {}
  std::string Prologue() const override { return cipher_->header_bytes(); }
  bool Closing(uint64_t) const override { return true; }  // the end chunk, which a reader requires
  Status Apply(ChunkJob& job, WorkerState*) const override {
    return Seal(job.in.data(), job.in.size(), job.index, job.last, &job.out);
  }
  // Whole chunks are sealed by the thread that writes them (the copy
  // threads), straight from its buffer; the pool seals what small writes
  // gather.
  bool CanRunInline() const override { return true; }
  Status ApplyInline(const uint8_t* in, size_t n, uint64_t index, ChunkOutput* out) const override {
    return Seal(in, n, index, false, out);
  }

 private:
  Status Seal(const uint8_t* in, size_t n, uint64_t index, bool last, ChunkOutput* out) const {
    const size_t sealed = crypt::FileCipher::SealedSize(n);
    XBAK_RETURN_IF_ERROR(cipher_->SealTo(index, last, in, n, out->Reserve(sealed)));
    out->set_size(sealed);
    return Status::Ok();
  }

  std::unique_ptr<crypt::FileCipher> cipher_;
};

class EncryptSpec : public TransformSpec {
 public:
  explicit EncryptSpec(EncryptOptions o) : o_(std::move(o)) {}
  std::string Suffix() const override { return std::string(crypt::kEncryptedSuffix); }
  std::string Describe() const override {
    return std::string("encrypted (") + std::string(crypt::AlgorithmName(o_.algorithm)) + ", key id " +
           crypt::KeyIdHex(o_.key->id()) + ")";
  }
  size_t ChunkBytes() const override { return o_.chunk_size; }
  int Threads() const override { return o_.threads; }
  Result<std::unique_ptr<WorkerState>> NewWorker() const override {
    return std::unique_ptr<WorkerState>(std::make_unique<NoState>());
  }
  Result<std::unique_ptr<FileTransform>> ForFile(const std::string& relpath) const override {
    crypt::FileHeader h;
    h.algorithm = o_.algorithm;
    h.chunk_size = static_cast<uint32_t>(o_.chunk_size);
    h.key_id = o_.key->id();
    h.backup_id = o_.backup_id;
    XBAK_ASSIGN_OR_RETURN(h.file_id, crypt::NewFileId());
    h.path = relpath;
    XBAK_ASSIGN_OR_RETURN(
        auto cipher, crypt::FileCipher::Create(*o_.key, h, relpath + std::string(crypt::kEncryptedSuffix)));
    return std::unique_ptr<FileTransform>(std::make_unique<EncryptFile>(std::move(cipher)));
  }

 private:
  const EncryptOptions o_;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeEncryptingSink(std::unique_ptr<Sink> inner, EncryptOptions options) {
  if (!options.key) return Error(ErrorCode::kInvalidArgument, "--encrypt needs a key (--encrypt-key-file)");
  if (options.threads < 1 || options.threads > 1024) {
    return Error(ErrorCode::kInvalidArgument,
                 "--encrypt-threads must be between 1 and 1024, got " + std::to_string(options.threads));
  }
  if (options.chunk_size == 0 || options.chunk_size > crypt::kMaxChunkBytes) {
    return Error(ErrorCode::kInvalidArgument, "--encrypt-chunk-size must be between 1 byte and " +
                                                  std::to_string(crypt::kMaxChunkBytes >> 20) + " MiB, got " +
                                                  std::to_string(options.chunk_size));
  }
  return MakeTransformingSink(std::move(inner), std::make_unique<EncryptSpec>(std::move(options)));
}

}  // namespace xbak::sink
