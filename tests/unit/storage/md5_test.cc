// MD5 (OpenSSL EVP, storage/md5.cc) against the RFC 1321 test suite (appendix A.5) and a
// million-byte vector, run the same on every architecture (scripts/cross-aarch64.sh runs this
// binary on AArch64 under qemu, where OpenSSL takes its AArch64 code path).
#include "xbak/storage/md5.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace xbak::storage {
namespace {

TEST(Md5Rfc1321, TestSuite) {
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", "d41d8cd98f00b204e9800998ecf8427e"},
      {"a", "0cc175b9c0f1b6a831c399e269772661"},
      {"abc", "900150983cd24fb0d6963f7d28e17f72"},
      {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
      {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
      {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"},
      {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
       "57edf4a22be3c955ac49da2e2107b67a"},
  };
  for (const auto& [in, hex] : vectors) EXPECT_EQ(Md5Hex(Md5(in)), hex) << '"' << in << '"';
}

TEST(Md5Rfc1321, MillionAs) {
  std::string s(1000000, 'a');
  EXPECT_EQ(Md5Hex(Md5(s)), "7707d6ae4e027c70eea2a935c2296f21");
}

TEST(Md5Rfc1321, UnalignedInputsGiveTheSameDigest) {
  std::string buf(4096 + 16, '\0');
  for (size_t i = 0; i < buf.size(); i++) buf[i] = static_cast<char>((i * 131 + 7) & 0xff);
  const Md5Digest ref = Md5(buf.data(), 4096);
  for (size_t off = 1; off < 16; off++) {
    std::string moved(off, 'x');
    moved.append(buf, 0, 4096);
    EXPECT_EQ(Md5(moved.data() + off, 4096), ref) << "offset " << off;
  }
}

TEST(Md5Rfc1321, Base64IsTheContentMd5Header) {
  EXPECT_EQ(Md5Base64(Md5("abc")), "kAFQmDzST7DWlj99KOF/cg==");
}

}  // namespace
}  // namespace xbak::storage
