// Per-file encryption of a backup (`--encrypt=AES256`, `--encrypt-threads`,
// `--encrypt-chunk-size`): every file X of the inner sink is stored as
// X.xbenc in the format of docs/backup-encryption.md (crypt/format.h), its
// chunks sealed on a pool of threads shared by all files. Below compression
// when both are on: X.zst.xbenc.
#pragma once

#include <memory>

#include "xbak/crypt/format.h"
#include "xbak/crypt/key.h"
#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::sink {

struct EncryptOptions {
  crypt::Algorithm algorithm = crypt::Algorithm::kAes256Gcm;
  std::shared_ptr<const crypt::Key> key;
  crypt::BackupId backup_id{};  // one per backup: every file's header carries it
  int threads = 1;
  size_t chunk_size = crypt::kDefaultChunkBytes;
};

Result<std::unique_ptr<Sink>> MakeEncryptingSink(std::unique_ptr<Sink> inner, EncryptOptions options);

}  // namespace xbak::sink
