// Helpers shared by the stream tests: scratch directories, in-memory fds,
// chunk builders that can produce deliberately broken streams.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "util/temp_dir.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::testing {

// An fd holding `bytes`, positioned at 0.
inline util::UniqueFd MemFd(const std::string& bytes) {
  int fd = ::memfd_create("xbstream_test", MFD_CLOEXEC);
  if (fd < 0) return util::UniqueFd();
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  ::lseek(fd, 0, SEEK_SET);
  return util::UniqueFd(fd);
}

inline util::UniqueFd EmptyMemFd() { return MemFd(""); }

// Everything written to fd so far.
inline std::string ReadAllFromStart(int fd) {
  std::string out;
  char buf[65536];
  off_t off = 0;
  while (true) {
    ssize_t r = ::pread(fd, buf, sizeof(buf), off);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
    off += r;
  }
  return out;
}

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
}

// Raw chunk builders; `crc` and `type` may be set wrong on purpose.
inline std::string PChunk(const std::string& path, const std::string& data, uint64_t offset) {
  return stream::EncodePayloadChunkHeader(path, data.size(), offset,
                                          stream::XbstreamCrc32(data.data(), data.size())) +
         data;
}
inline std::string EChunk(const std::string& path) { return stream::EncodeEofChunk(path); }

inline std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// All regular files under dir, relative path -> content.
inline std::map<std::string, std::string> TreeContents(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) {
      out[std::filesystem::relative(it->path(), dir).string()] = ReadFileOrEmpty(it->path().string());
    }
  }
  return out;
}

}  // namespace xbak::testing
