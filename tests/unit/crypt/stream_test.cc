// The encrypted-file format end to end: round trips, the golden vector of the
// independent Python implementation (tests/crypt/xbenc_reference.py), and
// every tampering the format promises to catch, each named with its offset
// and caught before its bytes are handed on.
#include "xbak/crypt/stream.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "xbak/crypt/cipher.h"
#include "xbak/crypt/format.h"

namespace xbak::crypt {
namespace {

std::unique_ptr<Key> MakeKey(char fill) {
  auto k = Key::FromBytes(std::string(kKeyBytes, fill), "test key");
  EXPECT_TRUE(k.ok());
  return std::move(k).value();
}

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

std::string Hex(const std::string& s) {
  static constexpr char d[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

class CryptStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = MakeKey('k');
    ring_.Add(MakeKey('k'));
    auto b = NewBackupId();
    ASSERT_TRUE(b.ok());
    backup_ = *b;
  }

  std::string Encrypt(const std::string& plain, const std::string& path = "db/t.ibd", size_t chunk = 1000,
                      Algorithm a = Algorithm::kAes256Gcm) {
    std::string out;
    auto e = Encryptor::Create(*key_, a, backup_, path, chunk, [&](const uint8_t* d, size_t n) {
      out.append(reinterpret_cast<const char*>(d), n);
      return Status::Ok();
    });
    EXPECT_TRUE(e.ok()) << e.status().message();
    // In uneven pieces: chunking must not depend on how the caller writes.
    for (size_t at = 0; at < plain.size();) {
      const size_t n = std::min(plain.size() - at, size_t{1} + (at % 777));
      EXPECT_TRUE((*e)->Write(plain.data() + at, n).ok());
      at += n;
    }
    EXPECT_TRUE((*e)->Finish().ok());
    return out;
  }

  // Decrypts `blob` fed in pieces of `piece` bytes; the plaintext handed on so far in *plain.
  Status Decrypt(const std::string& blob, std::string* plain, const std::string& path = "db/t.ibd",
                 size_t piece = 333) {
    plain->clear();
    Decryptor d(ring_, path + ".xbenc", path, [&](const uint8_t* p, size_t n) {
      plain->append(reinterpret_cast<const char*>(p), n);
      return Status::Ok();
    });
    for (size_t at = 0; at < blob.size(); at += piece) {
      XBAK_RETURN_IF_ERROR(d.Write(blob.data() + at, std::min(piece, blob.size() - at)));
    }
    return d.Finish();
  }

  // Byte offsets of the chunks of an encrypted file (after its header).
  static std::vector<size_t> ChunkOffsets(const std::string& blob) {
    std::vector<size_t> at;
    size_t pos = static_cast<uint8_t>(blob[10]) << 8 | static_cast<uint8_t>(blob[11]);
    while (pos < blob.size()) {
      at.push_back(pos);
      const size_t n = size_t{static_cast<uint8_t>(blob[pos])} << 24 |
                       size_t{static_cast<uint8_t>(blob[pos + 1])} << 16 |
                       size_t{static_cast<uint8_t>(blob[pos + 2])} << 8 | static_cast<uint8_t>(blob[pos + 3]);
      pos += 4 + n + kTagBytes;
    }
    return at;
  }

  std::unique_ptr<Key> key_;
  KeyRing ring_;
  BackupId backup_{};
};

TEST_F(CryptStreamTest, RoundTripsAnySizeInEitherAlgorithm) {
  for (Algorithm a : {Algorithm::kAes256Gcm, Algorithm::kChaCha20Poly1305}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{999}, size_t{1000}, size_t{1001}, size_t{25000}}) {
      const std::string plain = Pattern(n);
      const std::string blob = Encrypt(plain, "db/t.ibd", 1000, a);
      if (n >= 64) {
        EXPECT_EQ(blob.find(plain.substr(0, 64)), std::string::npos) << "plaintext in the output";
      }
      std::string back;
      Status st = Decrypt(blob, &back);
      ASSERT_TRUE(st.ok()) << AlgorithmName(a) << " " << n << ": " << st.message();
      EXPECT_EQ(back, plain);
    }
  }
}

TEST_F(CryptStreamTest, TheGoldenVectorOfTheIndependentImplementation) {
  // tests/crypt/xbenc_reference.py vector: key 00 01 .. 1f, backup id b0.., file id f1..,
  // path db/t.ibd, chunks of 4 bytes, "hello, xbak".
  const std::string want =
      "5842414b454e4331010100520000000427471a613424a7afb0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0f1f1f1f1f1f1f1f1f1f1f1"
      "f1"
      "f1f1f1f1000864622f742e6962640f93d20382d299cd3bb8c3df207a014600000004193fa01168b3b471dddca4b1c3047d1a90"
      "7f"
      "1d770000000441a0124858350501c264fad88668d4db05bac0ee000000031e8dce7da6f30ac6ddf2093394b5b91efbb1360000"
      "00"
      "00d91e86d704291cd28a5017076382fa93";
  std::string key_bytes;
  for (int i = 0; i < 32; i++) key_bytes += static_cast<char>(i);
  auto key = Key::FromBytes(key_bytes, "vector key");
  ASSERT_TRUE(key.ok());
  FileHeader h;
  h.chunk_size = 4;
  h.key_id = (*key)->id();
  h.backup_id.fill(0xB0);
  h.file_id.fill(0xF1);
  h.path = "db/t.ibd";
  auto c = FileCipher::Create(**key, h, "vector");
  ASSERT_TRUE(c.ok());
  std::string out = (*c)->header_bytes();
  const std::string plain = "hello, xbak";
  uint64_t i = 0;
  for (size_t at = 0; at < plain.size(); at += 4, i++) {
    ASSERT_TRUE((*c)->Seal(i, false, reinterpret_cast<const uint8_t*>(plain.data() + at),
                           std::min<size_t>(4, plain.size() - at), &out)
                    .ok());
  }
  ASSERT_TRUE((*c)->Seal(i, true, nullptr, 0, &out).ok());
  EXPECT_EQ(Hex(out), want);
}

TEST_F(CryptStreamTest, AFlippedByteAnywhereIsCaughtAndNamed) {
  const std::string plain = Pattern(5000);
  const std::string blob = Encrypt(plain);
  const auto chunks = ChunkOffsets(blob);
  ASSERT_EQ(chunks.size(), 6u);  // five of 1000 bytes and the end chunk
  // In the header, in a chunk's length, its ciphertext, its tag, in the end chunk.
  for (size_t at : {size_t{20}, size_t{60}, chunks[2] + 3, chunks[2] + 100, chunks[3] - 1, blob.size() - 1}) {
    std::string bad = blob;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    std::string back;
    Status st = Decrypt(bad, &back);
    EXPECT_FALSE(st.ok()) << "byte " << at;
    EXPECT_NE(st.message().find("db/t.ibd.xbenc"), std::string::npos) << st.message();
    EXPECT_LE(back.size(), at) << "bytes at or after the damage were handed on: " << st.message();
  }
  std::string bad = blob;
  bad[chunks[2] + 100] ^= 1;
  std::string back;
  Status st = Decrypt(bad, &back);
  EXPECT_NE(st.message().find("chunk 2 at byte " + std::to_string(chunks[2]) + " fails authentication"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(back, plain.substr(0, 2000));  // what came before is intact
}

TEST_F(CryptStreamTest, AChunkRemovedSwappedOrRepeatedIsCaught) {
  const std::string blob = Encrypt(Pattern(5000));
  const auto c = ChunkOffsets(blob);
  auto piece = [&](size_t i) { return blob.substr(c[i], c[i + 1] - c[i]); };
  const std::string head = blob.substr(0, c[0]);
  const std::string removed = head + piece(0) + piece(2) + piece(3) + piece(4) + blob.substr(c[5]);
  const std::string swapped = head + piece(1) + piece(0) + piece(2) + piece(3) + piece(4) + blob.substr(c[5]);
  const std::string repeated =
      head + piece(0) + piece(0) + piece(1) + piece(2) + piece(3) + piece(4) + blob.substr(c[5]);
  for (const auto& [what, bad] :
       {std::pair{"removed", removed}, {"swapped", swapped}, {"repeated", repeated}}) {
    std::string back;
    Status st = Decrypt(bad, &back);
    EXPECT_FALSE(st.ok()) << what;
    EXPECT_NE(st.message().find("fails authentication"), std::string::npos) << what << ": " << st.message();
  }
}

TEST_F(CryptStreamTest, ATruncatedFileIsCaughtWhereverItIsCut) {
  const std::string blob = Encrypt(Pattern(3000));
  const auto c = ChunkOffsets(blob);
  // Inside the header, at a chunk boundary, inside a chunk, just before the end chunk.
  for (size_t cut : {size_t{30}, c[0], c[1], c[1] + 10, c.back(), blob.size() - 1}) {
    std::string back;
    Status st = Decrypt(blob.substr(0, cut), &back);
    ASSERT_FALSE(st.ok()) << "cut at " << cut;
    EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("ends at byte " + std::to_string(cut)), std::string::npos) << st.message();
  }
  std::string back;
  Status trailing = Decrypt(blob + "x", &back);
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("bytes after the end chunk, from byte " + std::to_string(blob.size())),
            std::string::npos)
      << trailing.message();
}

TEST_F(CryptStreamTest, AChunkFromAnotherFileOrBackupUnderTheSameKeyIsCaught) {
  const std::string mine = Encrypt(Pattern(3000), "db/t.ibd");
  const std::string other_file = Encrypt(Pattern(3000), "db/t.ibd");  // same path and backup: other file id
  BackupId other_backup_id = backup_;
  other_backup_id[0] ^= 1;
  std::swap(backup_, other_backup_id);
  const std::string other_backup = Encrypt(Pattern(3000), "db/t.ibd");
  std::swap(backup_, other_backup_id);
  const auto c = ChunkOffsets(mine);
  for (const std::string* donor : {&other_file, &other_backup}) {
    const auto d = ChunkOffsets(*donor);
    std::string bad = mine.substr(0, c[1]) + donor->substr(d[1], d[2] - d[1]) + mine.substr(c[2]);
    std::string back;
    Status st = Decrypt(bad, &back);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("chunk 1 at byte " + std::to_string(c[1]) + " fails authentication"),
              std::string::npos)
        << st.message();
  }
}

TEST_F(CryptStreamTest, AFileUnderAnotherNameIsCaught) {
  const std::string blob = Encrypt(Pattern(100), "db/a.ibd");
  std::string back;
  Status st = Decrypt(blob, &back, "db/b.ibd");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the header says this is db/a.ibd of its backup"), std::string::npos)
      << st.message();
}

TEST_F(CryptStreamTest, AWrongKeyIsOneClearErrorBeforeAnythingIsHandedOn) {
  const std::string blob = Encrypt(Pattern(3000));
  KeyRing wrong;
  wrong.Add(MakeKey('w'));
  std::string plain;
  Decryptor d(wrong, "db/t.ibd.xbenc", "db/t.ibd", [&](const uint8_t* p, size_t n) {
    plain.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  });
  Status st = d.Write(blob.data(), blob.size());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(plain.empty());
  EXPECT_NE(st.message().find("db/t.ibd.xbenc was encrypted with key id " + KeyIdHex(key_->id()) +
                              "; the key given has id " +
                              KeyIdHex(wrong.Find(MakeKey('w')->id(), "x").value()->id())),
            std::string::npos)
      << st.message();
  // Two keys (rotation): the right one is picked by id.
  KeyRing both;
  both.Add(MakeKey('w'));
  both.Add(MakeKey('k'));
  std::string back;
  Decryptor d2(both, "f", "", [&](const uint8_t* p, size_t n) {
    back.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  });
  ASSERT_TRUE(d2.Write(blob.data(), blob.size()).ok());
  ASSERT_TRUE(d2.Finish().ok());
  EXPECT_EQ(back, Pattern(3000));
}

TEST_F(CryptStreamTest, AHeaderChangedToAnotherFilesIdsFailsItsTag) {
  const std::string blob = Encrypt(Pattern(100));
  std::string bad = blob;
  bad[45] ^= 1;  // the file id: another file key, and the header tag no longer matches
  std::string back;
  Status st = Decrypt(bad, &back);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the header (bytes 0-"), std::string::npos) << st.message();
  EXPECT_TRUE(back.empty());
}

// Files written by the independent Python implementation (tests/crypt/xbenc_reference.py, key
// "f" x 32; also the fuzzer's seeds) decrypt here: the reader follows the document too.
TEST(CryptFormatTest, FilesOfTheIndependentImplementationDecrypt) {
  KeyRing ring;
  ring.Add(MakeKey('f'));
  std::string pages;
  for (int i = 0; i < 8; i++) {
    for (int b = 0; b < 256; b++) pages += static_cast<char>(b);
  }
  const std::pair<const char*, std::string> files[] = {{"small_aes", "row one|row two|row three|"},
                                                       {"small_chacha", "0123456789abcdefghij"},
                                                       {"pages", pages}};
  for (const auto& [name, want] : files) {
    std::ifstream in(std::string(XBAK_TESTDATA) + "/" + name, std::ios::binary);
    const std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(blob.empty()) << name;
    std::string plain;
    Decryptor d(ring, name, "", [&](const uint8_t* p, size_t n) {
      plain.append(reinterpret_cast<const char*>(p), n);
      return Status::Ok();
    });
    ASSERT_TRUE(d.Write(blob.data(), blob.size()).ok()) << name;
    Status st = d.Finish();
    ASSERT_TRUE(st.ok()) << name << ": " << st.message();
    EXPECT_EQ(plain, want) << name;
  }
}

TEST(CryptFormatTest, AlgorithmsByXtrabackupsNames) {
  EXPECT_EQ(*ParseAlgorithm("AES256"), Algorithm::kAes256Gcm);
  EXPECT_EQ(*ParseAlgorithm("aes256"), Algorithm::kAes256Gcm);
  EXPECT_EQ(*ParseAlgorithm("CHACHA20"), Algorithm::kChaCha20Poly1305);
  auto aes128 = ParseAlgorithm("AES128");
  ASSERT_FALSE(aes128.ok());
  EXPECT_EQ(aes128.status().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(ParseAlgorithm("rot13").ok());
}

TEST(CryptFormatTest, NotAnEncryptedFileIsSaidAtByteZero) {
  KeyRing ring;
  ring.Add(MakeKey('k'));
  Decryptor d(ring, "plain.ibd.xbenc", "", [](const uint8_t*, size_t) { return Status::Ok(); });
  Status st = d.Write("PLAINTEXTPLAINTEXT", 18);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("plain.ibd.xbenc: not an xbak encrypted file (no XBAKENC1 header at byte 0)"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace xbak::crypt
