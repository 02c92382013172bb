#include "xbak/innodb/crypt_data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

// The offsets MariaDB 10.11 writes crypt data at, read from real files.
TEST(CryptData, OffsetFollowsThePageAndExtentSizes) {
  EXPECT_EQ(CryptDataOffset(16384, 16384), 10428u);
  EXPECT_EQ(CryptDataOffset(16384, 8192), 5308u);  // ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8
  EXPECT_EQ(CryptDataOffset(16384, 4096), 2748u);
  EXPECT_EQ(CryptDataOffset(16384, 2048), 1468u);
  EXPECT_EQ(CryptDataOffset(16384, 1024), 828u);
  EXPECT_EQ(CryptDataOffset(4096, 4096), 1596u);
  EXPECT_EQ(CryptDataOffset(8192, 8192), 3772u);
  EXPECT_EQ(CryptDataOffset(32768, 32768), 20668u);
  EXPECT_EQ(CryptDataOffset(65536, 65536), 41148u);
}

SpaceFlags SizedFlags(uint32_t logical, uint32_t physical, bool full_crc32) {
  SpaceFlags f;
  f.logical_size = logical;
  f.physical_size = physical;
  f.zip_size = physical == logical ? 0 : physical;
  f.full_crc32 = full_crc32;
  return f;
}

TEST(CryptData, ReadsTheFieldsOfARealPage0) {
  // Page 0 of a table created ENCRYPTED=YES ENCRYPTION_KEY_ID=2 (server A of
  // the research notes): magic, scheme 1, IV length 16, IV, version 1, key 2, ON.
  const uint8_t real[] = {0x73, 0x0e, 0x0c, 0x52, 0x45, 0x74, 0x01, 0x10, 0x44, 0xe6, 0x33,
                          0x33, 0xf1, 0x6f, 0x0b, 0xf7, 0xd5, 0xac, 0x17, 0xd4, 0x5f, 0x80,
                          0xb6, 0xe9, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x01};
  std::vector<uint8_t> page(16384, 0);
  std::memcpy(page.data() + 10428, real, sizeof real);
  auto c = ReadCryptData(page.data(), SizedFlags(16384, 16384, true));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->scheme, 1);
  EXPECT_EQ(c->iv[0], 0x44);
  EXPECT_EQ(c->iv[15], 0xe9);
  EXPECT_EQ(c->min_key_version, 1u);
  EXPECT_EQ(c->key_id, 2u);
  EXPECT_EQ(c->mode, 1);
  EXPECT_TRUE(c->MayEncrypt());

  // ENCRYPTED=NO: the same record, scheme 0, mode 2.
  page[10428 + 6] = 0;
  page[10428 + 32] = 2;
  c = ReadCryptData(page.data(), SizedFlags(16384, 16384, true));
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->MayEncrypt());

  // Elsewhere (a compressed table's page 0 has it at its own offset) or absent.
  EXPECT_FALSE(ReadCryptData(page.data(), SizedFlags(16384, 8192, false)).has_value());
  std::vector<uint8_t> plain(16384, 0);
  EXPECT_FALSE(ReadCryptData(plain.data(), SizedFlags(16384, 16384, true)).has_value());
  // The magic that an earlier xbak looked for is not MariaDB's.
  std::memcpy(plain.data() + 10428, "sCrYpT\x01\x10", 8);
  EXPECT_FALSE(ReadCryptData(plain.data(), SizedFlags(16384, 16384, true)).has_value());
}

TEST(CryptData, PageKeyVersionIsWhereTheFormatKeepsIt) {
  std::vector<uint8_t> page(16384, 0);
  util::StoreBE32(page.data(), 7);
  util::StoreBE32(page.data() + 26, 9);
  EXPECT_EQ(PageKeyVersion(page.data(), SizedFlags(16384, 16384, true)), 7u);
  EXPECT_EQ(PageKeyVersion(page.data(), SizedFlags(16384, 16384, false)), 9u);
}

// The 27-byte WRITE that write_page0 logs after the magic (seen in a real log:
// the rotation threads starting on the system tablespace of a 16k server).
TEST(CryptData, TheWritePage0RecordGivesTheCryptData) {
  std::vector<uint8_t> w = {0x01, 0x10, 0xfb, 0xf4, 0x9d, 0xbb, 0x5e, 0x95, 0xae,
                            0x82, 0x6b, 0xb5, 0xd1, 0x2c, 0xc9, 0x63, 0xea, 0xd4,
                            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00};
  auto c = CryptDataFromWrite(16384, 10428 + 6, w.data(), w.size());
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->scheme, 1);
  EXPECT_EQ(c->iv[0], 0xfb);
  EXPECT_EQ(c->iv[15], 0xd4);
  EXPECT_EQ(c->min_key_version, 0u);
  EXPECT_EQ(c->key_id, 1u);
  EXPECT_EQ(c->mode, 0);
  // The same fields of a ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 tablespace sit elsewhere.
  EXPECT_TRUE(CryptDataFromWrite(16384, 5308 + 6, w.data(), w.size()).has_value());
  EXPECT_TRUE(CryptDataFromWrite(4096, 1596 + 6, w.data(), w.size()).has_value());
  // Any other WRITE to page 0 is not it.
  EXPECT_FALSE(CryptDataFromWrite(16384, 10428, w.data(), w.size()).has_value());
  EXPECT_FALSE(CryptDataFromWrite(16384, 10428 + 6, w.data(), w.size() - 1).has_value());
  w[1] = 8;  // IV length other than 16: the server ignores such metadata
  EXPECT_FALSE(CryptDataFromWrite(16384, 10428 + 6, w.data(), w.size()).has_value());
}

TEST(CryptData, EncryptsOnWriteAsTheServersFlush) {
  CryptData c;
  c.scheme = 1;
  c.mode = 0;  // DEFAULT: follows innodb_encrypt_tables
  EXPECT_TRUE(EncryptsOnWrite(c, true));
  EXPECT_FALSE(EncryptsOnWrite(c, false));
  c.mode = 1;  // ENCRYPTED=YES
  EXPECT_TRUE(EncryptsOnWrite(c, false));
  c.mode = 2;  // ENCRYPTED=NO
  EXPECT_FALSE(EncryptsOnWrite(c, true));
  c.mode = 0;
  c.scheme = 0;  // decrypted by the rotation threads
  EXPECT_FALSE(EncryptsOnWrite(c, true));
}

TEST(CryptData, APageClaimsEncryptionByItsKeyVersion) {
  std::vector<uint8_t> page(16384, 0);
  const SpaceFlags fc = SizedFlags(16384, 16384, true), old = SizedFlags(16384, 16384, false);
  EXPECT_FALSE(ClaimsEncryption(page.data(), fc, 7, 3));
  util::StoreBE32(page.data(), 1);  // full_crc32: key version at 0
  EXPECT_TRUE(ClaimsEncryption(page.data(), fc, 7, 3));
  EXPECT_FALSE(ClaimsEncryption(page.data(), old, 7, 3));
  util::StoreBE32(page.data() + 26, 1);  // older format: at 26
  EXPECT_TRUE(ClaimsEncryption(page.data(), old, 7, 3));
  EXPECT_FALSE(ClaimsEncryption(page.data(), fc, 7, 0));  // page 0: never
  EXPECT_FALSE(ClaimsEncryption(page.data(), fc, 0, 5));  // TRX_SYS: never
  EXPECT_TRUE(ClaimsEncryption(page.data(), fc, 7, 5));
}

TEST(CryptData, PagesNeverEncrypted) {
  std::vector<uint8_t> page(16384, 0);
  const SpaceFlags fc = SizedFlags(16384, 16384, true), old = SizedFlags(16384, 16384, false);
  util::StoreBE16(page.data() + kFilPageType, kPageTypeIndex);
  EXPECT_TRUE(PageTypeMayEncrypt(page.data(), fc, 7, 3));
  EXPECT_FALSE(PageTypeMayEncrypt(page.data(), fc, 7, 0));  // page 0
  EXPECT_FALSE(PageTypeMayEncrypt(page.data(), fc, 0, 5));  // TRX_SYS
  EXPECT_TRUE(PageTypeMayEncrypt(page.data(), fc, 7, 5));
  util::StoreBE16(page.data() + kFilPageType, kPageTypeXdes);
  EXPECT_FALSE(PageTypeMayEncrypt(page.data(), fc, 7, 16384));
  util::StoreBE16(page.data() + kFilPageType, kPageTypeRtree);
  EXPECT_TRUE(PageTypeMayEncrypt(page.data(), fc, 7, 4));
  EXPECT_FALSE(PageTypeMayEncrypt(page.data(), old, 7, 4));
}

}  // namespace
}  // namespace xbak::innodb
