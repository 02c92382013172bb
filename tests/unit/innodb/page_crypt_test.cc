// Against pages and key files written by a real MariaDB 10.11.19 server with
// throwaway keys (testdata/: the page in hex with its space, key id and the
// SHA-256 of its plaintext form).
#include "xbak/innodb/page_crypt.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <fstream>
#include <map>
#include <sstream>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/key_file.h"
#include "xbak/util/file.h"

namespace xbak::innodb {
namespace {

std::string TestData(const std::string& name) { return std::string(XBAK_TESTDATA) + "/" + name; }

std::vector<uint8_t> HexBytes(const std::string& h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::string Sha256Hex(const uint8_t* p, size_t n) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(p, n, md, &len, EVP_sha256(), nullptr);
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; i++) {
    s += d[md[i] >> 4];
    s += d[md[i] & 15];
  }
  return s;
}

std::map<std::string, std::string> ReadVector(const std::string& name) {
  std::ifstream in(TestData(name));
  std::map<std::string, std::string> v;
  std::string k, val;
  while (in >> k >> val) v[k] = val;
  return v;
}

EncryptionKeys PlainKeys() {
  auto k = LoadKeyFile({TestData("keys_plain.txt"), ""});
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? std::move(k.value()) : EncryptionKeys();
}

TEST(KeyFile, PlainAndOpensslEncryptedFilesGiveTheSameKeys) {
  EncryptionKeys plain = PlainKeys();
  EXPECT_EQ(plain.size(), 4u);  // ids 1, 2, 3 and 100
  auto enc = LoadKeyFile({TestData("keys_encrypted.bin"), "secretpw"});
  ASSERT_TRUE(enc.ok()) << enc.status().message();
  for (uint32_t id : {1u, 2u, 3u, 100u}) {
    auto a = plain.Get(id, 1);
    auto b = enc->Get(id, 1);
    ASSERT_TRUE(a.ok() && b.ok()) << id;
    EXPECT_EQ(**a, **b) << id;
  }
  EXPECT_EQ((*plain.Get(100, 1))->size(), 24u);
  EXPECT_FALSE(plain.Get(7, 1).ok());
  EXPECT_FALSE(plain.Get(1, 2).ok());  // file_key_management has version 1 only

  auto wrong = LoadKeyFile({TestData("keys_encrypted.bin"), "not the password"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("wrong filekey"), std::string::npos);
  auto none = LoadKeyFile({TestData("keys_encrypted.bin"), ""});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("file_key_management_filekey"), std::string::npos);
}

TEST(KeyFile, DebugKeyManagementKeysAreTheirVersionBigEndian) {
  // MariaDB's debug_key_management test plugin: key id 1, version v -> BE32(v) and 12 zero bytes.
  EncryptionKeys k = DebugKeyManagementKeys();
  auto v2 = k.Get(1, 2);
  ASSERT_TRUE(v2.ok());
  std::vector<uint8_t> want(16, 0);
  want[3] = 2;
  EXPECT_EQ(**v2, want);
  auto v258 = k.Get(1, 258);
  ASSERT_TRUE(v258.ok());
  EXPECT_EQ((**v258)[2], 1);
  EXPECT_EQ((**v258)[3], 2);
  EXPECT_FALSE(k.Get(2, 1).ok());  // key id 1 only
  EXPECT_FALSE(k.Get(1, 0).ok());
}

TEST(KeyFile, ParsesAsThePluginDoesAndNamesLineAndColumn) {
  auto ok = ParseKeyFile(
      "1;00112233445566778899aabbccddeeff # c\r\n\r\n  \t# x\n5;00112233445566778899AABBCCDDEEFF", "k");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 2u);
  auto shortkey = ParseKeyFile("1;00112233445566778899aabbccddeeff\n2;0011\n", "k");
  ASSERT_FALSE(shortkey.ok());
  EXPECT_NE(shortkey.status().message().find("line 2"), std::string::npos) << shortkey.status().message();
  EXPECT_FALSE(ParseKeyFile("1 ;00112233445566778899aabbccddeeff\n", "k").ok());
  EXPECT_FALSE(ParseKeyFile("1;" + std::string(66, 'a') + "\n", "k").ok());
  auto no1 = ParseKeyFile("2;00112233445566778899aabbccddeeff\n", "k");
  ASSERT_FALSE(no1.ok());
  EXPECT_NE(no1.status().message().find("key id 1 is missing"), std::string::npos);
  // Key bytes never appear in messages.
  auto odd = ParseKeyFile("1;00112233445566778899aabbccddeeff0\n", "k");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message().find("00112233"), std::string::npos);
}

void DecryptsRealPage(const std::string& vector_file) {
  auto v = ReadVector(vector_file);
  std::vector<uint8_t> page = HexBytes(v["page_hex"]);
  ASSERT_EQ(page.size(), 16384u);
  auto flags = DecodeSpaceFlags(static_cast<uint32_t>(std::stoul(v["fsp_flags"], nullptr, 16)));
  ASSERT_TRUE(flags.ok());
  std::vector<uint8_t> page0(16384, 0);
  auto area = HexBytes(v["page0_crypt_area_at_10428"]);
  std::copy(area.begin(), area.end(), page0.begin() + 10428);
  auto crypt = ReadCryptData(page0.data(), *flags);
  ASSERT_TRUE(crypt.has_value());
  EXPECT_EQ(crypt->key_id, std::stoul(v["key_id"]));
  EncryptionKeys keys = PlainKeys();
  auto plugin_key = keys.Get(crypt->key_id, 1);
  ASSERT_TRUE(plugin_key.ok());
  auto key = DeriveKey(**plugin_key, crypt->iv.data());
  ASSERT_TRUE(key.ok());
  auto mode = ParseCryptMode(v["algorithm"]);
  ASSERT_TRUE(mode.ok());

  // As stored: valid by its post-encryption checksum, and marked encrypted.
  PageCheck before = CheckPage(page.data(), *flags, 3);
  EXPECT_EQ(before.verdict, PageVerdict::kOk) << before.detail;
  EXPECT_TRUE(before.encrypted);

  ASSERT_TRUE(DecryptPage(page.data(), *flags, std::stoul(v["space_id"]), *key, *mode).ok());
  // The research's plaintext hash leaves the key version and the stored
  // checksums as they were on disk; compare the decrypted bytes in that form.
  std::vector<uint8_t> as_research = page;
  std::vector<uint8_t> stored = HexBytes(v["page_hex"]);
  if (flags->full_crc32) {
    std::copy(stored.begin(), stored.begin() + 4, as_research.begin());
    std::copy(stored.end() - 4, stored.end(), as_research.end() - 4);
  } else {
    std::copy(stored.begin() + 26, stored.begin() + 34, as_research.begin() + 26);
  }
  EXPECT_EQ(Sha256Hex(as_research.data(), as_research.size()), v["plaintext_sha256"]);
  // And as the server holds it after a read: a valid plain page.
  PageCheck after = CheckPage(page.data(), *flags, 3);
  EXPECT_EQ(after.verdict, PageVerdict::kOk) << after.detail;
  EXPECT_FALSE(after.encrypted);
  EXPECT_EQ(PageKeyVersion(page.data(), *flags), 0u);

  // Written back as the server's flush does, it is the page as stored, byte for byte.
  ASSERT_TRUE(EncryptPage(page.data(), *flags, std::stoul(v["space_id"]), 1, *key, *mode).ok());
  EXPECT_TRUE(page == stored);
}

TEST(PageCrypt, DecryptsARealFullCrc32PageWithAesCbc) { DecryptsRealPage("page_full_crc32_aes_cbc.txt"); }
TEST(PageCrypt, DecryptsARealCrc32FormatPageWithAesCtr) { DecryptsRealPage("page_crc32_aes_ctr.txt"); }

TEST(PageCrypt, NoPadAesRoundTripsAnyLengthInBothModes) {
  AesKey key{};
  for (size_t i = 0; i < key.size(); i++) key[i] = static_cast<uint8_t>(i * 7 + 1);
  uint8_t iv[16];
  for (int i = 0; i < 16; i++) iv[i] = static_cast<uint8_t>(200 - i);
  for (CryptMode m : {CryptMode::kCbc, CryptMode::kCtr}) {
    for (size_t n : {1u, 15u, 16u, 17u, 31u, 16354u}) {
      std::vector<uint8_t> plain(n), enc(n), back(n);
      for (size_t i = 0; i < n; i++) plain[i] = static_cast<uint8_t>(i * 13);
      ASSERT_TRUE(AesNoPad(m, true, key, iv, plain.data(), enc.data(), n).ok());
      EXPECT_NE(enc, plain);
      ASSERT_TRUE(AesNoPad(m, false, key, iv, enc.data(), back.data(), n).ok());
      EXPECT_EQ(back, plain) << n;
    }
  }
  EXPECT_FALSE(ParseCryptMode("aes_gcm").ok());
}

}  // namespace
}  // namespace xbak::innodb
