#include "xbak/storage/md5_multi.h"

#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace xbak::storage {
namespace {

std::string Random(size_t n, std::mt19937& rng) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Splits `s` into pieces at random points (empty pieces included).
Md5Pieces Split(const std::string& s, std::mt19937& rng) {
  Md5Pieces p;
  size_t off = 0;
  while (off < s.size()) {
    size_t n = std::min<size_t>(s.size() - off, rng() % 3 == 0 ? 0 : rng() % 300);
    p.push_back(std::string_view(s).substr(off, n));
    off += n;
  }
  if (rng() % 2) p.push_back({});
  return p;
}

// Every path this CPU has, the chosen one first.
std::vector<std::string> Paths() {
  std::vector<std::string> p = {Md5ManyPath()};
  for (const char* q : {"scalar", "avx2", "avx512vl"}) {
    std::vector<Md5Digest> out(2);
    std::vector<Md5Pieces> two = {{"a"}, {"b"}};
    if (q != p[0] && Md5ManyOn(q, two, out)) p.push_back(q);
  }
  return p;
}

void RunAll(const std::vector<Md5Pieces>& msgs, std::vector<Md5Digest>* out, const std::string& path) {
  out->assign(msgs.size(), {});
  ASSERT_TRUE(Md5ManyOn(path, msgs, *out)) << path;
}

TEST(Md5Many, KnownVectors) {
  // RFC 1321 A.5.
  std::vector<std::string> text = {
      "",
      "a",
      "abc",
      "message digest",
      "abcdefghijklmnopqrstuvwxyz",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
      "1234567890123456789012345678901234567890123456789012345678901234567890123456789"
      "0"};
  std::vector<std::string> want = {"d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
                                   "900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
                                   "c3fcd3d76192e4007dfb496cca67e13b", "d174ab98d277d9f5a5611c2c9f419d9f",
                                   "57edf4a22be3c955ac49da2e2107b67a"};
  std::vector<Md5Pieces> msgs;
  for (const auto& t : text) msgs.push_back({t});
  std::vector<Md5Digest> out(msgs.size());
  Md5Many(msgs, out);
  for (size_t i = 0; i < text.size(); i++) EXPECT_EQ(Md5Hex(out[i]), want[i]) << "'" << text[i] << "'";
  for (const auto& path : Paths()) {
    RunAll(msgs, &out, path);
    for (size_t i = 0; i < text.size(); i++)
      EXPECT_EQ(Md5Hex(out[i]), want[i]) << path << " '" << text[i] << "'";
  }
}

TEST(Md5Many, EqualsOpenSslForEveryLengthAroundTheBlockEdges) {
  std::mt19937 rng(7);
  std::vector<std::string> data;
  for (size_t n = 0; n <= 200; n++) data.push_back(Random(n, rng));  // 55, 56, 63, 64, 119, 120 ...
  std::vector<Md5Pieces> msgs;
  for (const auto& d : data) msgs.push_back(Split(d, rng));
  std::vector<Md5Digest> out;
  for (const auto& path : Paths()) {
    RunAll(msgs, &out, path);
    for (size_t i = 0; i < data.size(); i++)
      EXPECT_EQ(out[i], Md5(data[i])) << path << " length " << data[i].size();
  }
}

TEST(Md5Many, MixedSizesAndCounts) {
  // Lanes freed by short messages take the next ones; any count works.
  std::mt19937 rng(11);
  for (size_t count : {1u, 2u, 3u, 7u, 8u, 9u, 17u, 40u}) {
    std::vector<std::string> data;
    for (size_t i = 0; i < count; i++) {
      size_t n = rng() % 4 == 0 ? rng() % 100 : rng() % (300 << 10);
      data.push_back(Random(n, rng));
    }
    std::vector<Md5Pieces> msgs;
    for (const auto& d : data) msgs.push_back(rng() % 2 ? Md5Pieces{d} : Split(d, rng));
    std::vector<Md5Digest> out;
    for (const auto& path : Paths()) {
      RunAll(msgs, &out, path);
      for (size_t i = 0; i < count; i++) {
        EXPECT_EQ(out[i], Md5(data[i])) << path << " count " << count << " message " << i;
      }
    }
  }
}

TEST(Md5Many, ReportsItsPath) {
  std::vector<Md5Digest> out(2);
  std::vector<Md5Pieces> two = {{"a"}, {"b"}};
  EXPECT_TRUE(Md5ManyOn("scalar", two, out));
  EXPECT_FALSE(Md5ManyOn("no such path", two, out));
#if defined(__x86_64__)
  EXPECT_EQ(Md5ManyOn("avx2", two, out), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(Md5ManyIsVectorized(), __builtin_cpu_supports("avx2") != 0);
#else
  EXPECT_FALSE(Md5ManyIsVectorized());
  EXPECT_FALSE(Md5ManyOn("avx2", two, out));
#endif
  std::cout << "Md5Many path on this CPU: " << Md5ManyPath() << "\n";
}

}  // namespace
}  // namespace xbak::storage
