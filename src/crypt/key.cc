#include "xbak/crypt/key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "xbak/util/file.h"
#include "xbak/util/hex.h"

namespace xbak::crypt {

Result<std::unique_ptr<Key>> Key::FromBytes(std::string_view bytes, const std::string& origin) {
  if (bytes.size() != kKeyBytes) {
    return Error(ErrorCode::kInvalidArgument, origin + ": an AES256 key is " + std::to_string(kKeyBytes) +
                                                  " bytes, this one is " + std::to_string(bytes.size()) +
                                                  " (make one with: openssl rand -base64 24)");
  }
  // A page of its own, so that locking it and keeping it out of core dumps
  // touches nothing else. mmap rather than the heap: the bytes never sit in
  // memory that malloc may hand out again unwiped.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ErrnoError("map memory for", "the encryption key", errno);
  // Best effort: RLIMIT_MEMLOCK may be small for unprivileged users; the key
  // is still wiped on release.
  (void)::mlock(p, page);
  (void)::madvise(p, page, MADV_DONTDUMP);
  std::unique_ptr<Key> key(new Key(static_cast<uint8_t*>(p), page, origin));
  std::memcpy(key->bytes_, bytes.data(), kKeyBytes);
  static constexpr char kIdLabel[] = "xbak key id";
  uint8_t input[sizeof kIdLabel - 1 + kKeyBytes];
  std::memcpy(input, kIdLabel, sizeof kIdLabel - 1);
  std::memcpy(input + sizeof kIdLabel - 1, key->bytes_, kKeyBytes);
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  const bool ok = EVP_Digest(input, sizeof input, digest, &len, EVP_sha256(), nullptr) == 1;
  OPENSSL_cleanse(input, sizeof input);
  if (!ok) return Error(ErrorCode::kInternal, "SHA-256 failed (OpenSSL)");
  std::memcpy(key->id_.data(), digest, key->id_.size());
  return key;
}

Key::Key(uint8_t* page, size_t page_size, std::string origin)
    : page_(page), page_size_(page_size), bytes_(page), origin_(std::move(origin)) {}

Key::~Key() {
  OPENSSL_cleanse(page_, page_size_);
  (void)::munlock(page_, page_size_);
  (void)::munmap(page_, page_size_);
}

std::string KeyIdHex(const KeyId& id) { return util::HexBytes(id.data(), id.size()); }

namespace {

// One trailing newline (or CRLF) is not part of the key: `openssl rand
// -base64 24 > key` writes one.
std::string_view WithoutNewline(std::string_view s) {
  if (s.ends_with("\r\n")) return s.substr(0, s.size() - 2);
  if (s.ends_with('\n')) return s.substr(0, s.size() - 1);
  return s;
}

}  // namespace

Result<std::unique_ptr<Key>> LoadKeyFile(const std::string& path) {
  util::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open the key file", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat", path, errno);
  if (!S_ISREG(st.st_mode))
    return Error(ErrorCode::kInvalidArgument, path + ": the key file is not a regular file");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return Error(
        ErrorCode::kInvalidArgument,
        path + ": the key file may be read or written by others than its owner (mode " +
            [&] {
              char m[8];
              std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(st.st_mode & 07777));
              return std::string(m);
            }() +
            "); whoever reads it can read every backup made with it: chmod 600 " + path);
  }
  if (st.st_size > 64) {
    return Error(ErrorCode::kInvalidArgument, path + ": a key file holds the 32-byte key, this one is " +
                                                  std::to_string(st.st_size) + " bytes");
  }
  // A small stack buffer, wiped: the key is copied once, into its locked page.
  char buf[65];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("read", path, errno);
  auto key = Key::FromBytes(WithoutNewline(std::string_view(buf, static_cast<size_t>(n))), path);
  OPENSSL_cleanse(buf, sizeof buf);
  return key;
}

Result<std::unique_ptr<Key>> KeyFromEnvironment(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::unique_ptr<Key>();
  return Key::FromBytes(WithoutNewline(v), std::string("environment variable ") + name);
}

}  // namespace xbak::crypt
