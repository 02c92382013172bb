// The command line of backup encryption (docs/backup-encryption.md):
// --encrypt, --encrypt-key-file, --encrypt-threads, --encrypt-chunk-size for
// --backup; the keys for --decrypt and --extract --decrypt; and --decrypt
// itself. Keys come from key files or XBAK_ENCRYPT_KEY, never from the
// command line.
#pragma once

#include <boost/program_options.hpp>
#include <optional>

#include "xbak/crypt/stream.h"
#include "xbak/sink/encrypt.h"

namespace xbak::cli {

inline constexpr const char* kKeyEnvironment = "XBAK_ENCRYPT_KEY";

// What no mode accepts: a key on the command line, --encrypt without --backup.
std::optional<int> CheckEncryptionOptions(const boost::program_options::variables_map& vm);

// --backup's encryption into *o (o->key set) when --encrypt is given, or
// nothing; an exit status after saying why when the options do not fit.
std::optional<int> EncryptOutput(const boost::program_options::variables_map& vm, bool* encrypt,
                                 sink::EncryptOptions* o);

// Whether any key is given (--encrypt-key-file or XBAK_ENCRYPT_KEY): the
// modes that read a backup take them only then.
bool KeysGiven(const boost::program_options::variables_map& vm);

// Every key given (each --encrypt-key-file, then XBAK_ENCRYPT_KEY): a reader
// picks each file's by its id. An exit status after saying why when none
// is given or one cannot be read.
std::optional<int> ReadKeys(const boost::program_options::variables_map& vm, const char* mode,
                            crypt::KeyRing* ring);

// --incremental-basedir=DIR of an encrypted backup (its checkpoints are
// DIR/xtrabackup_checkpoints.xbenc): the base LSN, read with the keys given.
// nullopt when DIR holds no such file (*lsn untouched), else an exit status
// (0 with *lsn set).
std::optional<int> EncryptedBaseLsn(const boost::program_options::variables_map& vm,
                                    const std::string& basedir, uint64_t* lsn);

// --prepare of an encrypted backup: when `dir` holds .xbenc files, decrypts
// them in place with the keys given (removing the originals), then
// decompresses what that leaves compressed. An exit status after saying why
// (no key, a wrong key, damage), nullopt when done or nothing to do.
std::optional<int> DecryptForPrepare(const boost::program_options::variables_map& vm, const std::string& dir,
                                     int parallel);

// --decrypt=ALGORITHM --target-dir=DIR [--remove-original] [--parallel=N].
int RunDecryptMode(const boost::program_options::variables_map& vm, int parallel);

}  // namespace xbak::cli
