#include "xbak/crypt/stream.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>

#include "xbak/util/endian.h"

namespace xbak::crypt {

Result<const Key*> KeyRing::Find(const KeyId& id, const std::string& origin) const {
  std::string have;
  for (const auto& k : keys_) {
    if (k->id() == id) return k.get();
    have += (have.empty() ? "" : ", ") + KeyIdHex(k->id()) + " (" + k->origin() + ")";
  }
  return Error(ErrorCode::kInvalidArgument, origin + " was encrypted with key id " + KeyIdHex(id) +
                                                "; the key" + (keys_.size() == 1 ? "" : "s") + " given " +
                                                (keys_.size() == 1 ? "has id " : "have ids ") +
                                                (have.empty() ? "(none)" : have));
}

Result<std::unique_ptr<FileCipher>> OpenHeader(const uint8_t* data, size_t n, const KeyRing& keys,
                                               const std::string& origin, const std::string& expected_path,
                                               size_t* header_len) {
  size_t body = 0, need = 0;
  XBAK_ASSIGN_OR_RETURN(FileHeader h, ParseHeader(data, n, origin, &body, &need));
  if (need > 0 || n < body + kTagBytes) return std::unique_ptr<FileCipher>();
  if (!expected_path.empty() && h.path != expected_path) {
    return Error(ErrorCode::kCorrupt,
                 origin + ": the header says this is " + h.path +
                     " of its backup: the file was renamed or moved, or comes from elsewhere");
  }
  XBAK_ASSIGN_OR_RETURN(const Key* key, keys.Find(h.key_id, origin));
  XBAK_ASSIGN_OR_RETURN(auto cipher, FileCipher::Create(*key, h, origin));
  XBAK_RETURN_IF_ERROR(cipher->CheckHeaderTag(data + body));
  *header_len = body + kTagBytes;
  return cipher;
}

Result<std::unique_ptr<Encryptor>> Encryptor::Create(const Key& key, Algorithm algorithm,
                                                     const BackupId& backup, const std::string& path,
                                                     size_t chunk_bytes, ByteWriter out) {
  if (chunk_bytes == 0 || chunk_bytes > kMaxChunkBytes) {
    return Error(ErrorCode::kInvalidArgument, "--encrypt-chunk-size must be between 1 byte and " +
                                                  std::to_string(kMaxChunkBytes >> 20) + " MiB, got " +
                                                  std::to_string(chunk_bytes));
  }
  FileHeader h;
  h.algorithm = algorithm;
  h.chunk_size = static_cast<uint32_t>(chunk_bytes);
  h.key_id = key.id();
  h.backup_id = backup;
  XBAK_ASSIGN_OR_RETURN(h.file_id, NewFileId());
  h.path = path;
  std::unique_ptr<Encryptor> e(new Encryptor());
  XBAK_ASSIGN_OR_RETURN(e->cipher_, FileCipher::Create(key, h, path + std::string(kEncryptedSuffix)));
  e->out_ = std::move(out);
  e->chunk_bytes_ = chunk_bytes;
  return e;
}

Status Encryptor::Emit(bool last) {
  sealed_.clear();
  if (!header_written_) {
    sealed_ = cipher_->header_bytes();
    header_written_ = true;
  }
  if (!pending_.empty())
    XBAK_RETURN_IF_ERROR(cipher_->Seal(next_index_++, false, pending_.data(), pending_.size(), &sealed_));
  if (last) XBAK_RETURN_IF_ERROR(cipher_->Seal(next_index_++, true, nullptr, 0, &sealed_));
  OPENSSL_cleanse(pending_.data(), pending_.size());
  pending_.clear();
  return sealed_.empty() ? Status::Ok()
                         : out_(reinterpret_cast<const uint8_t*>(sealed_.data()), sealed_.size());
}

Status Encryptor::Write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const size_t take = std::min(n, chunk_bytes_ - pending_.size());
    pending_.insert(pending_.end(), p, p + take);
    p += take;
    n -= take;
    if (pending_.size() == chunk_bytes_) XBAK_RETURN_IF_ERROR(Emit(false));
  }
  return Status::Ok();
}

Status Encryptor::Finish() { return Emit(true); }

Decryptor::Decryptor(const KeyRing& keys, std::string origin, std::string expected_path, ByteWriter out)
    : keys_(keys),
      origin_(std::move(origin)),
      expected_path_(std::move(expected_path)),
      out_(std::move(out)) {}

Decryptor::~Decryptor() { OPENSSL_cleanse(plain_.data(), plain_.size()); }

Status Decryptor::Write(const void* data, size_t n) {
  XBAK_RETURN_IF_ERROR(error_);
  // What was consumed is dropped only once it is half the buffer: one move
  // per several chunks, not one per chunk.
  if (pos_ > 0 && pos_ * 2 >= buf_.size()) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + n);
  for (bool progressed = true; progressed;) {
    Status st = Step(&progressed);
    if (!st.ok()) {
      error_ = st;
      return st;
    }
  }
  return Status::Ok();
}

// Consumes one header or one chunk from the buffer when it is whole.
Status Decryptor::Step(bool* progressed) {
  *progressed = false;
  const uint8_t* in = buf_.data() + pos_;
  const size_t have = buf_.size() - pos_;
  if (have == 0) return Status::Ok();
  if (ended_) {
    // Where they start, not how many: that depends on how the input was cut.
    return Error(ErrorCode::kCorrupt,
                 origin_ + ": bytes after the end chunk, from byte " + std::to_string(consumed_));
  }
  if (!cipher_) {
    size_t header_len = 0;
    XBAK_ASSIGN_OR_RETURN(cipher_, OpenHeader(in, have, keys_, origin_, expected_path_, &header_len));
    if (!cipher_) return Status::Ok();
    Consume(header_len);
    *progressed = true;
    return Status::Ok();
  }
  if (have < kChunkHeaderBytes) return Status::Ok();
  const size_t len = util::LoadBE32(in);
  if (len > kMaxChunkBytes) {
    return Error(ErrorCode::kCorrupt, origin_ + ": chunk " + std::to_string(next_index_) + " at byte " +
                                          std::to_string(consumed_) + " claims " + std::to_string(len) +
                                          " bytes, more than any chunk holds: the file is damaged");
  }
  const size_t whole = kChunkHeaderBytes + len + kTagBytes;
  if (have < whole) return Status::Ok();
  plain_.resize(len);
  XBAK_RETURN_IF_ERROR(cipher_->Open(next_index_, len == 0, in + kChunkHeaderBytes, len,
                                     in + kChunkHeaderBytes + len, plain_.data(), consumed_));
  next_index_++;
  if (len == 0) ended_ = true;
  if (len > 0) XBAK_RETURN_IF_ERROR(out_(plain_.data(), len));
  OPENSSL_cleanse(plain_.data(), len);
  Consume(whole);
  *progressed = true;
  return Status::Ok();
}

void Decryptor::Consume(size_t n) {
  pos_ += n;
  consumed_ += n;
}

Status Decryptor::Finish() {
  XBAK_RETURN_IF_ERROR(error_);
  const uint64_t end = consumed_ + (buf_.size() - pos_);
  if (!cipher_) {
    return Error(ErrorCode::kCorrupt, origin_ + ": ends at byte " + std::to_string(end) +
                                          " inside its header: the file is truncated");
  }
  if (!ended_) {
    return Error(ErrorCode::kCorrupt,
                 origin_ + ": ends at byte " + std::to_string(end) + " without its end chunk (after chunk " +
                     std::to_string(next_index_ == 0 ? 0 : next_index_ - 1) + "): the file is truncated");
  }
  return Status::Ok();
}

}  // namespace xbak::crypt
