// Reading what the encrypting sink (encrypt.h) wrote: xbak --decrypt over a
// backup directory, and the decryption of X.xbenc files as an xbstream is
// extracted (--extract --decrypt), both with crypt's Decryptor.
#pragma once

#include <string>

#include "xbak/crypt/stream.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/status.h"

namespace xbak::sink {

struct DecryptOptions {
  std::string target_dir;
  int parallel = 1;              // files decrypted at once
  bool remove_original = false;  // delete X.xbenc once X is complete and durable
};

// Decrypts every X.xbenc under target_dir into X, as DecompressBackup does
// (refusals first, .xbpartial then rename, damage named with file and byte).
// Before anything is written, every file's header is read and checked: its
// key is among `keys` and its header tag holds (a wrong key is one error,
// naming the file and both key ids), its name is the one it was encrypted
// under, and all files come from one backup.
Status DecryptBackup(const DecryptOptions& options, const crypt::KeyRing& keys);

// The content of one small encrypted file, decrypted in memory (never on
// disk): an encrypted base's xtrabackup_checkpoints for the next
// incremental. `rel` is its name in the backup; refused above `limit` bytes.
Result<std::string> ReadEncryptedFile(const std::string& path, const std::string& rel,
                                      const crypt::KeyRing& keys, size_t limit = size_t{1} << 20);

// For ExtractOptions::filter: X.xbenc in the stream is extracted as X,
// decrypted and checked as it arrives; other files as they are.
stream::ExtractFilterFactory DecryptingExtractFilter(const crypt::KeyRing& keys);

}  // namespace xbak::sink
