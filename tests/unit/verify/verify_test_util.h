// Helpers shared by the --verify tests: tablespaces of synthetic pages and a
// backup redo log that holds only its checkpoint.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/synthetic_chain.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/verify/verify.h"

namespace xbak::verify::test {

constexpr uint64_t kCkpt = 20000;  // the backup log's checkpoint LSN

inline std::vector<uint8_t> Tablespace(uint32_t space, uint32_t pages) {
  std::vector<uint8_t> out;
  for (uint32_t i = 0; i < pages; i++) {
    auto p = testing::MakePage(space, i, static_cast<uint8_t>(i + 1), pages);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

inline void Write(const std::string& path, const void* data, size_t n) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}
inline void Write(const std::string& path, const std::string& s) { Write(path, s.data(), s.size()); }
inline void Write(const std::string& path, const std::vector<uint8_t>& v) { Write(path, v.data(), v.size()); }

inline std::vector<uint8_t> Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// A backup log: header, checkpoint, one mtr holding a FILE_CHECKPOINT record.
inline std::vector<uint8_t> BackupLog() {
  auto log = innodb::MakeBackupLogHeader(innodb::kRedoFormat10_8, kCkpt, kCkpt, "Backup 10.11.19");
  uint8_t rec[11] = {0xFA, 0, 0};  // FILE_CHECKPOINT, 10 bytes: space 0, page 0, LSN
  util::StoreBE64(rec + 3, kCkpt);
  log.insert(log.end(), rec, rec + sizeof rec);
  log.push_back(1);
  uint8_t crc[4];
  util::StoreBE32(crc, util::crc32c::Value(rec, sizeof rec));
  log.insert(log.end(), crc, crc + 4);
  return log;
}
constexpr uint64_t kLogEnd = kCkpt + 16;

// The problem lines of a result, one per line, for failure messages.
inline std::string All(const VerifyResult& r) {
  std::string s;
  for (const auto& l : r.problems) s += l + "\n";
  return s;
}

}  // namespace xbak::verify::test
