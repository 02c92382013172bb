#include "xbak/innodb/log_crypt.h"

#include <cstring>
#include <vector>

#include "xbak/util/endian.h"

namespace xbak::innodb {

Result<AesKey> DeriveLogKey(const LogHeader& h, const EncryptionKeys& keys) {
  if (h.format != kRedoFormatEnc11) {
    return Error(
        ErrorCode::kUnsupported,
        "the redo log is encrypted in the legacy format of MariaDB 10.8 to 10.11.13 (FORMAT_ENC_10_8), "
        "which xbak does not read; prepare this backup with mariabackup");
  }
  const uint32_t id = util::LoadBE32(h.crypt.data());
  const uint32_t version = util::LoadBE32(h.crypt.data() + 4);
  auto k = keys.Get(id, version);
  if (!k.ok()) return k.status().With("the redo log's key");
  return DeriveKey(**k, h.crypt.data() + 8);
}

Status DecryptMtr(const uint8_t* mtr, size_t records_length, const AesKey& key, CryptMode mode,
                  uint8_t* out) {
  // Gather the bodies into one stream, decrypt it, and put it back. Headers
  // are copied as they are.
  std::vector<uint8_t> stream;
  stream.reserve(records_length);
  uint8_t iv[16] = {};
  std::memcpy(iv, mtr + records_length + 1, kMtrNonceSize);  // after the terminator
  for (size_t p = 0; p < records_length;) {
    RecordFrame f;
    if (DecodeRecordLength(mtr + p, records_length - p, &f) != DecodeResult::kOk ||
        f.total() > records_length - p) {
      return Error(ErrorCode::kCorrupt, "invalid record length at mtr offset " + std::to_string(p));
    }
    if (p == 0) std::memcpy(iv + kMtrNonceSize, mtr, f.header_length);  // at most 6 bytes
    std::memcpy(out + p, mtr + p, f.header_length);
    stream.insert(stream.end(), mtr + p + f.header_length, mtr + p + f.total());
    p += f.total();
  }
  XBAK_RETURN_IF_ERROR(AesNoPad(mode, false, key, iv, stream.data(), stream.data(), stream.size()));
  const uint8_t* s = stream.data();
  for (size_t p = 0; p < records_length;) {
    RecordFrame f;
    (void)DecodeRecordLength(out + p, records_length - p, &f);  // walked above
    std::memcpy(out + p + f.header_length, s, f.payload_length);
    s += f.payload_length;
    p += f.total();
  }
  return Status::Ok();
}

}  // namespace xbak::innodb
