#include "xbak/innodb/mysql_redo.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::innodb::mysql_redo {
namespace {

constexpr size_t kHdrFormat = 0, kHdrUuid = 4, kHdrStartLsn = 8, kHdrCreator = 16, kHdrCreatorLen = 32,
                 kHdrFlags = 48;
constexpr size_t kCrcAt = kBlockSize - kBlockTrailerSize;  // 508: every block's CRC-32C of [0, 508)
constexpr size_t kCheckpointLsnAt = 8;
constexpr uint32_t kFlushBit = 0x80000000;
constexpr uint16_t kEncryptedBit = 0x8000;
constexpr uint64_t kBlocksPerEpoch = 0x40000000;

bool CrcMatches(const uint8_t* block) {
  return util::LoadBE32(block + kCrcAt) == util::crc32c::Value(block, kCrcAt);
}

void StampCrc(uint8_t* block) { util::StoreBE32(block + kCrcAt, util::crc32c::Value(block, kCrcAt)); }

// "#ib_redo17" -> 17; nullopt for anything else ("#ib_redo17_tmp" among them).
std::optional<uint64_t> FileId(const std::string& name) {
  const std::string_view prefix = kFilePrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  uint64_t id = 0;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  auto [p, ec] = std::from_chars(b, e, id);
  if (ec != std::errc() || p != e) return std::nullopt;
  return id;
}

Result<RedoFile> ReadRedoFile(const std::string& path, uint64_t id) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  std::array<uint8_t, kFileHeaderSize> head{};
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(head.data(), head.size(), 0));
  if (n < head.size() || size % kBlockSize != 0) {
    return Error(ErrorCode::kCorrupt, path + ": " + std::to_string(size) +
                                          " bytes, not a redo file (a 2048-byte header and 512-byte blocks)");
  }
  RedoFile r;
  r.id = id;
  r.path = path;
  r.size = size;
  XBAK_ASSIGN_OR_RETURN(r.header, ParseFileHeader(head.data(), path));
  r.checkpoints = {ParseCheckpoint(head.data() + kCheckpoint1), ParseCheckpoint(head.data() + kCheckpoint2)};
  return r;
}

}  // namespace

Result<FileHeader> ParseFileHeader(const uint8_t* block, const std::string& origin) {
  FileHeader h;
  h.format = util::LoadBE32(block + kHdrFormat);
  if (!CrcMatches(block)) {
    return Error(ErrorCode::kCorrupt, origin +
                                          ": the header block's checksum does not match (not a MySQL redo "
                                          "file, or a damaged one)");
  }
  if (h.format != kFormat8030) {
    return Error(ErrorCode::kUnsupported, origin + ": redo log format " + std::to_string(h.format) +
                                              "; xbak reads format 6 (MySQL 8.0.30 and later) only");
  }
  h.log_uuid = util::LoadBE32(block + kHdrUuid);
  h.start_lsn = util::LoadBE64(block + kHdrStartLsn);
  const char* c = reinterpret_cast<const char*>(block + kHdrCreator);
  h.creator.assign(c, strnlen(c, kHdrCreatorLen));
  h.flags = util::LoadBE32(block + kHdrFlags);
  if (h.start_lsn < kStartLsn || h.start_lsn % kBlockSize != 0) {
    return Error(ErrorCode::kCorrupt, origin + ": start LSN " + std::to_string(h.start_lsn) +
                                          " is not a block boundary at or after " +
                                          std::to_string(kStartLsn));
  }
  return h;
}

std::array<uint8_t, kBlockSize> EncodeFileHeader(const FileHeader& h) {
  std::array<uint8_t, kBlockSize> b{};
  util::StoreBE32(b.data() + kHdrFormat, h.format);
  util::StoreBE32(b.data() + kHdrUuid, h.log_uuid);
  util::StoreBE64(b.data() + kHdrStartLsn, h.start_lsn);
  std::memcpy(b.data() + kHdrCreator, h.creator.data(), std::min(h.creator.size(), kHdrCreatorLen - 1));
  util::StoreBE32(b.data() + kHdrFlags, h.flags);
  StampCrc(b.data());
  return b;
}

std::optional<uint64_t> ParseCheckpoint(const uint8_t* slot) {
  if (!CrcMatches(slot)) return std::nullopt;
  const uint64_t lsn = util::LoadBE64(slot + kCheckpointLsnAt);
  if (lsn < kStartLsn) return std::nullopt;  // a slot of a file created without a checkpoint
  return lsn;
}

std::array<uint8_t, kBlockSize> EncodeCheckpoint(uint64_t lsn) {
  std::array<uint8_t, kBlockSize> b{};
  util::StoreBE64(b.data() + kCheckpointLsnAt, lsn);
  StampCrc(b.data());
  return b;
}

uint32_t BlockNo(uint64_t block_lsn) {
  return static_cast<uint32_t>(1 + (block_lsn / kBlockSize) % kBlocksPerEpoch);
}
uint32_t BlockEpoch(uint64_t block_lsn) {
  return static_cast<uint32_t>(1 + block_lsn / kBlockSize / kBlocksPerEpoch);
}

BlockHeader ParseBlockHeader(const uint8_t* block) {
  BlockHeader h;
  h.no = util::LoadBE32(block) & ~kFlushBit;
  const uint16_t len = static_cast<uint16_t>(util::LoadBE32(block + 4) >> 16);
  h.data_len = len & ~kEncryptedBit;
  h.encrypted = (len & kEncryptedBit) != 0;
  h.first_rec_group = static_cast<uint16_t>(util::LoadBE32(block + 4) & 0xFFFF);
  h.epoch = util::LoadBE32(block + 8);
  return h;
}

BlockState CheckBlock(const uint8_t* block, uint64_t block_lsn) {
  const uint32_t stored = util::LoadBE32(block + kCrcAt);
  if (stored != kNoChecksum && !CrcMatches(block)) return BlockState::kTorn;
  const BlockHeader h = ParseBlockHeader(block);
  const uint64_t want = (uint64_t{BlockEpoch(block_lsn)} << 32) | BlockNo(block_lsn);
  const uint64_t got = (uint64_t{h.epoch} << 32) | h.no;
  if (got < want) return BlockState::kOlder;
  if (got > want) return BlockState::kNewer;
  return BlockState::kOk;
}

void StampBlock(uint8_t* block, uint64_t block_lsn) {
  const uint32_t flush = util::LoadBE32(block) & kFlushBit;
  util::StoreBE32(block, BlockNo(block_lsn) | flush);
  util::StoreBE32(block + 8, BlockEpoch(block_lsn));
  StampCrc(block);
}

Result<std::vector<RedoFile>> ListRedoFiles(const std::string& dir) {
  XBAK_ASSIGN_OR_RETURN(std::vector<std::string> names, util::ListDir(dir));
  std::vector<RedoFile> files;
  for (const std::string& name : names) {
    const auto id = FileId(name);
    if (!id) continue;
    auto f = ReadRedoFile(util::JoinPath(dir, name), *id);
    // Consumed and renamed to a spare between the listing and the open: not part of the set now.
    if (!f.ok() && f.status().code() == ErrorCode::kNotFound) continue;
    XBAK_RETURN_IF_ERROR(f.status());
    files.push_back(std::move(f).value());
  }
  if (files.empty()) return Error(ErrorCode::kNotFound, dir + ": no " + kFilePrefix + "N redo files");
  std::sort(files.begin(), files.end(), [](const RedoFile& a, const RedoFile& b) { return a.id < b.id; });
  for (size_t i = 1; i < files.size(); i++) {
    const RedoFile& a = files[i - 1];
    const RedoFile& b = files[i];
    if (b.header.log_uuid != a.header.log_uuid) {
      return Error(ErrorCode::kCorrupt, b.path + " is of another redo log set than " + a.path +
                                            " (log UUID " + std::to_string(b.header.log_uuid) + ", not " +
                                            std::to_string(a.header.log_uuid) + ")");
    }
    if (b.header.start_lsn != a.end_lsn()) {
      return Error(ErrorCode::kCorrupt, b.path + " starts at LSN " + std::to_string(b.header.start_lsn) +
                                            " but " + a.path + " ends at LSN " + std::to_string(a.end_lsn()));
    }
  }
  return files;
}

Result<uint64_t> FindCheckpoint(const std::vector<RedoFile>& files) {
  std::optional<uint64_t> best;
  for (const RedoFile& f : files) {
    for (const auto& c : f.checkpoints) {
      if (c && *c >= f.header.start_lsn && *c < f.end_lsn() && (!best || *c > *best)) best = c;
    }
  }
  if (!best) {
    return Error(ErrorCode::kCorrupt, "no valid checkpoint in the redo files " +
                                          (files.empty() ? std::string() : files.front().path + " ..."));
  }
  return *best;
}

}  // namespace xbak::innodb::mysql_redo
