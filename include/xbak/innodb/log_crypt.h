// The encrypted redo log of MariaDB 10.11 (innodb_encrypt_log=ON, the
// FORMAT_ENC_11 header). The log key is AES-ECB(key 1 of the header's key
// version, the header's 16-byte crypt message). In every mini-transaction
// the record headers (type byte and length) stay plain; the bodies of all its
// records are one stream, encrypted with IV = the mtr's 8-byte nonce (after
// its terminator) followed by its first record's header bytes, zero padded.
// The legacy FORMAT_ENC_10_8 log (per-record IVs from the page id) is not
// read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xbak/innodb/key_file.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

// The key id (always 1) and key version the header names, and the log key
// derived from them; kUnsupported for the legacy format, kNotFound when
// `keys` lacks the key.
Result<AesKey> DeriveLogKey(const LogHeader& h, const EncryptionKeys& keys);

// Decrypts a whole, checksummed mtr of an encrypted log (`records_length`
// bytes of records, then the terminator and the nonce) into `out`
// (records_length bytes): record headers as they are, bodies decrypted.
Status DecryptMtr(const uint8_t* mtr, size_t records_length, const AesKey& key, CryptMode mode, uint8_t* out);

}  // namespace xbak::innodb
