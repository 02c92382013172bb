#include "xbak/storage/md5_multi.h"

#include <gtest/gtest.h>

#include <algorithm>
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
Md5Pieces Split(std::string_view s, std::mt19937& rng) {
  Md5Pieces p;
  size_t off = 0;
  while (off < s.size()) {
    size_t n = std::min<size_t>(s.size() - off, rng() % 3 == 0 ? 0 : rng() % 300);
    p.push_back(s.substr(off, n));
    off += n;
  }
  if (rng() % 2) p.push_back({});
  return p;
}

// The MD5 of every message in one Md5Advance call on a given path.
bool ManyOn(const std::string& path, const std::vector<Md5Pieces>& msgs, std::vector<Md5Digest>* out) {
  out->assign(msgs.size(), {});
  std::vector<Md5State> states(msgs.size());
  std::vector<Md5Step> steps;
  for (size_t i = 0; i < msgs.size(); i++) steps.push_back({&states[i], msgs[i], true, &(*out)[i]});
  return Md5AdvanceOn(path, steps);
}

// Every path this CPU has, the chosen one first.
std::vector<std::string> Paths() {
  std::vector<std::string> p = {Md5ManyPath()};
  for (const char* q : {"scalar", "avx2", "avx512vl"}) {
    std::vector<Md5Digest> out;
    if (q != p[0] && ManyOn(q, {{"a"}, {"b"}}, &out)) p.push_back(q);
  }
  return p;
}

void RunAll(const std::vector<Md5Pieces>& msgs, std::vector<Md5Digest>* out, const std::string& path) {
  ASSERT_TRUE(ManyOn(path, msgs, out)) << path;
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
  std::vector<Md5Digest> out;
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

TEST(Md5Advance, PieceByPieceEqualsWhole) {
  // Several messages fed in block-aligned steps of different sizes, all in
  // flight together (as xbcloud get hashes ranges while others download).
  std::mt19937 rng(5);
  for (const auto& path : Paths()) {
    std::vector<std::string> data;
    for (int i = 0; i < 11; i++) data.push_back(Random(rng() % (200 << 10), rng));
    std::vector<Md5State> states(data.size());
    std::vector<size_t> fed(data.size(), 0);
    std::vector<Md5Digest> digest(data.size());
    std::vector<bool> done(data.size(), false);
    for (int round = 0; round < 1000; round++) {
      std::vector<Md5Step> steps;
      for (size_t i = 0; i < data.size(); i++) {
        if (done[i] || rng() % 3 == 0) continue;  // not every message every time
        size_t left = data[i].size() - fed[i];
        size_t n = (rng() % 600) * 64;
        bool last = n >= left;
        if (last) n = left;
        std::string_view piece = std::string_view(data[i]).substr(fed[i], n);
        steps.push_back({&states[i], rng() % 2 ? Md5Pieces{piece} : Split(piece, rng), last, &digest[i]});
        fed[i] += n;
        done[i] = last;
      }
      if (!steps.empty()) {
        ASSERT_TRUE(Md5AdvanceOn(path, steps));
      }
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    }
    for (size_t i = 0; i < data.size(); i++) {
      ASSERT_TRUE(done[i]);
      EXPECT_EQ(digest[i], Md5(data[i])) << path << " message " << i << " of " << data[i].size() << " bytes";
      EXPECT_EQ(states[i].bytes, data[i].size());
    }
  }
}

TEST(Md5Advance, RefusesAPartialBlockBeforeTheEnd) {
  Md5State st;
  std::vector<Md5Step> steps = {{&st, {"abc"}, false, nullptr}};
  EXPECT_THROW(Md5Advance(steps), std::invalid_argument);
}

TEST(Md5Many, ReportsItsPath) {
  std::vector<Md5Digest> out;
  EXPECT_TRUE(ManyOn("scalar", {{"a"}, {"b"}}, &out));
  EXPECT_FALSE(ManyOn("no such path", {{"a"}}, &out));
#if defined(__x86_64__)
  EXPECT_EQ(ManyOn("avx2", {{"a"}, {"b"}}, &out), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(Md5ManyIsVectorized(), __builtin_cpu_supports("avx2") != 0);
#else
  EXPECT_FALSE(Md5ManyIsVectorized());
  EXPECT_FALSE(ManyOn("avx2", {{"a"}, {"b"}}, &out));
#endif
  std::cout << "Md5Advance path on this CPU: " << Md5ManyPath() << "\n";
}

}  // namespace
}  // namespace xbak::storage
