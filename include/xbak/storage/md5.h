// MD5 of object bodies (S3's Content-MD5 and ETag, our .md5 sidecars), from
// OpenSSL's EVP interface, which picks the CPU's fastest implementation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xbak::storage {

using Md5Digest = std::array<uint8_t, 16>;

Md5Digest Md5(const void* data, size_t n);
inline Md5Digest Md5(std::string_view s) { return Md5(s.data(), s.size()); }
std::string Md5Hex(const Md5Digest& d);     // 32 lowercase hex digits (S3 ETag, md5sum)
std::string Md5Base64(const Md5Digest& d);  // 24 characters (Content-MD5 header)
// Standard base64 with padding (headers that carry bytes: SSE-C's key).
std::string Base64(std::string_view bytes);
// Standard base64 decoded (padding required, no white space); nullopt for
// anything else (Azure's account key, the MD5s Azure and Google report).
std::optional<std::string> Base64Decode(std::string_view text);
// 24 base64 characters of 16 bytes; nullopt for anything else.
std::optional<Md5Digest> Md5FromBase64(std::string_view text);
// 32 hex digits (either case); nullopt for anything else.
std::optional<Md5Digest> Md5FromHex(std::string_view hex);

}  // namespace xbak::storage
