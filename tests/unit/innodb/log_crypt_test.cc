// Against mini-transactions of an encrypted redo log written by a real
// MariaDB 10.11.19 (innodb_encrypt_log=ON, aes_cbc, throwaway keys in
// testdata/keys_plain.txt): the log key, and the records in plaintext.
#include "xbak/innodb/log_crypt.h"

#include <gtest/gtest.h>

#include <vector>

#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes FromHex(const std::string& h) {
  Bytes out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

LogHeader Header(uint32_t format) {
  LogHeader h;
  h.format = format;
  h.encrypted = true;
  Bytes crypt = FromHex("00000001000000016c89f175bd6cf2dbdb090676ad876f4e01385de3");
  std::copy(crypt.begin(), crypt.end(), h.crypt.begin());
  return h;
}

EncryptionKeys Keys() {
  auto k = LoadKeyFile({std::string(XBAK_TESTDATA) + "/keys_plain.txt", ""});
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? std::move(k.value()) : EncryptionKeys();
}

TEST(LogCrypt, DerivesTheServersLogKey) {
  EncryptionKeys keys = Keys();
  auto key = DeriveLogKey(Header(kRedoFormatEnc11), keys);
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(Bytes(key->begin(), key->end()), FromHex("c1401ea44386e49dc247fcb4ff5a4d11"));
  // The legacy format is refused by name; a key the file lacks is named.
  auto legacy = DeriveLogKey(Header(kRedoFormat10_8), keys);
  ASSERT_FALSE(legacy.ok());
  EXPECT_NE(legacy.status().message().find("FORMAT_ENC_10_8"), std::string::npos);
  LogHeader v2 = Header(kRedoFormatEnc11);
  util::StoreBE32(v2.crypt.data() + 4, 2);
  EXPECT_FALSE(DeriveLogKey(v2, keys).ok());
}

TEST(LogCrypt, DecryptsRealMtrsIntoTheirPlainRecords) {
  EncryptionKeys keys = Keys();
  auto key = DeriveLogKey(Header(kRedoFormatEnc11), keys);
  ASSERT_TRUE(key.ok());
  const std::vector<std::pair<std::string, std::string>> mtrs = {
      // FILE_CHECKPOINT: a body shorter than one block (the CBC tail rule only)
      {"fa3d89d6fd127f7eba5c0701000000000000ad74efd1a0b5", "fa0000000000000000ad74"},
      // two WRITEs to page 0's crypt data (magic, then the 27 bytes): one stream over both bodies
      {"3a62ce9a236ded4c0944a9b00eee7527b33b9398317dfdb42aee2ead9d98b91edb87c8eb384ae5025401000000000000ad8c1"
       "e52fb81",
       "3a0000a83c730e0c524574b00e000110fbf49dbb5e95ae826bb5d12cc963ead4000000000000000100"},
      // an insert: an EXTENDED record with a length varint in the IV
      {"20215b9d9ca3e35bd534b94d5b08ba28ec3b3867e567c7547ada62d14603e8e63f4f0aa3805a71a6d24ec18b49baa10102010"
       "00000"
       "000000c5e4c0febd5d",
       "2021050306001000001500800000010000000000138400000134011068656c6c6f20656e6372797074656420776f726c64"},
  };
  for (const auto& [raw_hex, plain_hex] : mtrs) {
    Bytes raw = FromHex(raw_hex);
    MtrInfo info;
    std::string why;
    ASSERT_EQ(ParseMtr(raw.data(), raw.size(), true, &info, &why, SIZE_MAX, true), MtrStatus::kComplete)
        << why;
    Bytes out(info.records_length);
    ASSERT_TRUE(DecryptMtr(raw.data(), info.records_length, *key, CryptMode::kCbc, out.data()).ok());
    EXPECT_EQ(out, FromHex(plain_hex)) << raw_hex;
    // The plaintext's FILE_ records can now be read.
    ASSERT_EQ(ParseFileRecords(out.data(), out.size(), &info, &why), MtrStatus::kComplete) << why;
    if (raw[0] == 0xfa) {
      EXPECT_TRUE(info.has_checkpoint);
      EXPECT_EQ(info.checkpoint_lsn, 44404u);
    }
    // With the other mode the bytes are garbage, but never out of bounds.
    // (Under one block both modes XOR with AES-ECB(key, IV): the same.)
    ASSERT_TRUE(DecryptMtr(raw.data(), info.records_length, *key, CryptMode::kCtr, out.data()).ok());
    if (info.records_length > 17) {
      EXPECT_NE(out, FromHex(plain_hex));
    }
  }
}

}  // namespace
}  // namespace xbak::innodb
