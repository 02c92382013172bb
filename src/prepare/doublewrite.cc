#include "xbak/prepare/doublewrite.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "xbak/innodb/page.h"
#include "xbak/util/crc32c.h"
#include "xbak/util/endian.h"

namespace xbak::prepare {
namespace {

// The file: a 4 KiB header, then slot after slot of fixed-size entries.
// Header: "XBAKDBLW", version, stride, slot pages, slots, the tag, the boot
// id (36 bytes), CRC-32C of what precedes it. Entry: a 2 KiB header ("XBPG",
// the tag, space id, offset, length, the two file names, CRC-32C of the
// header and the bytes at its end), then the page's bytes.
constexpr size_t kFileHeader = 4096;
constexpr size_t kBootIdAt = 40, kBootIdLen = 36, kHeaderCrc = kBootIdAt + kBootIdLen;
constexpr size_t kEntryHeader = 2048;
constexpr size_t kEntryCrc = kEntryHeader - 4;
constexpr size_t kNamesAt = 40;
constexpr char kFileMagic[] = "XBAKDBLW";
constexpr char kEntryMagic[] = "XBPG";
constexpr uint32_t kVersion = 1;
// Offsets a page can be at: below 64 TiB (the largest InnoDB file), on a
// 512-byte boundary (the smallest unit of any page write).
constexpr uint64_t kMaxOffset = uint64_t{1} << 46;

std::vector<uint8_t> FileHeader(DoublewriteTag tag, size_t stride, size_t slot_pages, size_t slots) {
  std::vector<uint8_t> h(kFileHeader, 0);
  std::memcpy(h.data(), kFileMagic, 8);
  util::StoreBE32(h.data() + 8, kVersion);
  util::StoreBE32(h.data() + 12, static_cast<uint32_t>(stride));
  util::StoreBE32(h.data() + 16, static_cast<uint32_t>(slot_pages));
  util::StoreBE32(h.data() + 20, static_cast<uint32_t>(slots));
  util::StoreBE64(h.data() + 24, tag.checkpoint_lsn);
  util::StoreBE64(h.data() + 32, tag.end_lsn);
  const std::string boot = BootId();
  std::memcpy(h.data() + kBootIdAt, boot.data(), std::min(boot.size(), kBootIdLen));
  util::StoreBE32(h.data() + kHeaderCrc, util::crc32c::Value(h.data(), kHeaderCrc));
  return h;
}

struct Entry {
  uint32_t space_id = 0;
  uint64_t offset = 0;
  std::string rel, space_rel;
  std::vector<uint8_t> bytes;
};

// The entry at `e` (one stride), if it is whole and of `tag`.
std::optional<Entry> ParseEntry(const uint8_t* e, size_t stride, DoublewriteTag tag) {
  if (std::memcmp(e, kEntryMagic, 4) != 0) return std::nullopt;
  if (util::LoadBE64(e + 4) != tag.checkpoint_lsn || util::LoadBE64(e + 12) != tag.end_lsn)
    return std::nullopt;
  const uint32_t len = util::LoadBE32(e + 32);
  const size_t rel_len = util::LoadBE16(e + 36), space_len = util::LoadBE16(e + 38);
  const uint64_t offset = util::LoadBE64(e + 24);
  if (len == 0 || len > stride - kEntryHeader || kNamesAt + rel_len + space_len > kEntryCrc ||
      offset % 512 != 0 || offset >= kMaxOffset)
    return std::nullopt;
  uint32_t crc = util::crc32c::Extend(util::crc32c::Value(e, kEntryCrc), e + kEntryHeader, len);
  if (crc != util::LoadBE32(e + kEntryCrc)) return std::nullopt;  // torn itself: its page was not begun
  Entry out;
  out.space_id = util::LoadBE32(e + 20);
  out.offset = offset;
  out.rel.assign(reinterpret_cast<const char*>(e + kNamesAt), rel_len);
  out.space_rel.assign(reinterpret_cast<const char*>(e + kNamesAt + rel_len), space_len);
  out.bytes.assign(e + kEntryHeader, e + kEntryHeader + len);
  // Names from the file are joined to the directory: never outside it.
  for (const std::string* n : {&out.rel, &out.space_rel}) {
    if (n->empty() || n->front() == '/' || n->find("..") != std::string::npos ||
        n->find('\0') != std::string::npos)
      return std::nullopt;
  }
  return out;
}

// The tablespace id on page 0 of DIR/REL (never encrypted nor compressed).
std::optional<uint32_t> SpaceIdOf(const std::string& dir, const std::string& rel) {
  auto f = util::File::OpenRead(util::JoinPath(dir, rel));
  if (!f.ok()) return std::nullopt;
  uint8_t id[4];
  auto n = f->PRead(id, sizeof id, innodb::kFilPageSpaceId);
  if (!n.ok() || *n != sizeof id) return std::nullopt;
  return util::LoadBE32(id);
}

}  // namespace

Doublewrite::Doublewrite(util::File file, DoublewriteTag tag, size_t slots, size_t slot_pages,
                         size_t page_size)
    : file_(std::move(file)),
      tag_(tag),
      slot_pages_(slot_pages),
      stride_(kEntryHeader + page_size),
      busy_(slots, false) {}

Result<std::unique_ptr<Doublewrite>> Doublewrite::Create(const std::string& dir, DoublewriteTag tag,
                                                         size_t slots, size_t slot_pages, size_t page_size) {
  const std::string path = util::JoinPath(dir, kDoublewriteFile);
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(path));
  XBAK_RETURN_IF_ERROR(f.Truncate(0));
  const auto h = FileHeader(tag, kEntryHeader + page_size, slot_pages, slots);
  XBAK_RETURN_IF_ERROR(f.PWrite(h.data(), h.size(), 0));
  // Once per step, so free: without it a power loss could keep pages
  // written in place and lose the file that says they may be torn.
  XBAK_RETURN_IF_ERROR(f.Sync());
  XBAK_RETURN_IF_ERROR(util::SyncDir(dir));
  return std::unique_ptr<Doublewrite>(new Doublewrite(std::move(f), tag, slots, slot_pages, page_size));
}

std::string BootId() {
  // Read with read(2): /proc files say they are empty to stat.
  util::UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return "";
  char buf[64];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.substr(0, kBootIdLen);
}

Result<size_t> Doublewrite::Acquire() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (abandoned_) {
      return Error(ErrorCode::kCancelled,
                   file_.path() + ": not written after a failed write of a page in place");
    }
    for (size_t i = 0; i < busy_.size(); i++) {
      if (!busy_[i]) {
        busy_[i] = true;
        return i;
      }
    }
    freed_.wait(l);
  }
}

void Doublewrite::Release(size_t slot) {
  {
    std::lock_guard<std::mutex> l(mu_);
    busy_[slot] = false;
  }
  freed_.notify_one();
}

void Doublewrite::Abandon(size_t slot) {
  {
    std::lock_guard<std::mutex> l(mu_);
    busy_[slot] = true;  // never reused: it holds the only whole copy of a page that may be torn
    abandoned_ = true;
  }
  freed_.notify_all();
}

Status Doublewrite::Write(size_t slot, std::span<const PageImage> images) {
  if (images.size() > slot_pages_)
    return Error(ErrorCode::kInternal, "doublewrite: too many pages for a slot");
  std::vector<uint8_t> buf(images.size() * stride_, 0);
  for (size_t i = 0; i < images.size(); i++) {
    const PageImage& p = images[i];
    uint8_t* e = buf.data() + i * stride_;
    if (p.bytes.size() > stride_ - kEntryHeader || kNamesAt + p.rel.size() + p.space_rel.size() > kEntryCrc) {
      return Error(ErrorCode::kInternal,
                   std::string(p.rel) + ": a page or file name too long for the doublewrite file");
    }
    std::memcpy(e, kEntryMagic, 4);
    util::StoreBE64(e + 4, tag_.checkpoint_lsn);
    util::StoreBE64(e + 12, tag_.end_lsn);
    util::StoreBE32(e + 20, p.space_id);
    util::StoreBE64(e + 24, p.offset);
    util::StoreBE32(e + 32, static_cast<uint32_t>(p.bytes.size()));
    util::StoreBE16(e + 36, static_cast<uint16_t>(p.rel.size()));
    util::StoreBE16(e + 38, static_cast<uint16_t>(p.space_rel.size()));
    std::memcpy(e + kNamesAt, p.rel.data(), p.rel.size());
    std::memcpy(e + kNamesAt + p.rel.size(), p.space_rel.data(), p.space_rel.size());
    std::memcpy(e + kEntryHeader, p.bytes.data(), p.bytes.size());
    util::StoreBE32(e + kEntryCrc, util::crc32c::Extend(util::crc32c::Value(e, kEntryCrc), e + kEntryHeader,
                                                        p.bytes.size()));
  }
  return file_.PWrite(buf.data(), buf.size(), kFileHeader + slot * slot_pages_ * stride_);
}

Status Doublewrite::Remove() {
  if (::unlink(file_.path().c_str()) != 0 && errno != ENOENT)
    return ErrnoError("remove", file_.path(), errno);
  // Back after a power loss, the file would refuse a step that had finished.
  return util::SyncDir(std::filesystem::path(file_.path()).parent_path().string());
}

Result<size_t> RestoreDoublewrite(const std::string& dir, DoublewriteTag tag) {
  const std::string path = util::JoinPath(dir, kDoublewriteFile);
  if (!util::PathExists(path)) return size_t{0};
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(path));
  std::vector<uint8_t> h(kFileHeader);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(h.data(), h.size(), 0));
  // A header cut short, of another version or of another log: nothing of
  // this apply was written in place after it.
  if (n < kHeaderCrc + 4 || std::memcmp(h.data(), kFileMagic, 8) != 0 ||
      util::LoadBE32(h.data() + 8) != kVersion ||
      util::LoadBE32(h.data() + kHeaderCrc) != util::crc32c::Value(h.data(), kHeaderCrc) ||
      util::LoadBE64(h.data() + 24) != tag.checkpoint_lsn || util::LoadBE64(h.data() + 32) != tag.end_lsn) {
    return size_t{0};
  }
  std::string boot(reinterpret_cast<const char*>(h.data() + kBootIdAt), kBootIdLen);
  boot.resize(std::strlen(boot.c_str()));
  // No boot id (no /proc): whether the page cache outlived the run cannot
  // be told, so it is treated as lost.
  const std::string now = BootId();
  const bool unknown = boot.empty() || now.empty();
  if (unknown || boot != now) {
    const std::string when = unknown ? "on a boot that cannot be told (no kernel boot id then or now)"
                                     : "on an earlier boot of this machine (boot id " + boot + ")";
    return Error(ErrorCode::kInvalidArgument,
                 dir + ": an interrupted run of this redo apply (" + path + ") was " + when +
                     ": after a power loss or reboot the pages it was writing may be torn on disk. Start "
                     "over from the backup: for xbak --restore, empty the datadir and run it again; for "
                     "xbak --prepare, prepare a fresh copy of the backup");
  }
  const size_t stride = util::LoadBE32(h.data() + 12);
  const uint64_t entries = uint64_t{util::LoadBE32(h.data() + 16)} * util::LoadBE32(h.data() + 20);
  if (stride <= kEntryHeader || stride > kEntryHeader + 65536) {
    return Error(ErrorCode::kCorrupt, path + ": entry size " + std::to_string(stride) + " in its header");
  }
  XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  size = std::min(size, kFileHeader + entries * stride);
  // One file open at a time (the images of one job are of consecutive
  // pages, sorted): a killed run of 16 threads could name 2,048 tables.
  std::optional<util::File> out;
  std::string out_rel;
  std::map<std::string, std::optional<uint32_t>> ids;
  std::vector<uint8_t> e(stride);
  size_t restored = 0;
  for (uint64_t at = kFileHeader; at + stride <= size; at += stride) {
    XBAK_ASSIGN_OR_RETURN(size_t got, f.PRead(e.data(), stride, at));
    if (got < stride) break;
    std::optional<Entry> entry = ParseEntry(e.data(), stride, tag);
    if (!entry) continue;
    // The file must still hold that tablespace (not dropped, nor another
    // table renamed to its name since).
    auto id = ids.find(entry->space_rel);
    if (id == ids.end()) id = ids.emplace(entry->space_rel, SpaceIdOf(dir, entry->space_rel)).first;
    if (id->second != entry->space_id || !util::PathExists(util::JoinPath(dir, entry->rel))) continue;
    if (!out || out_rel != entry->rel) {
      XBAK_ASSIGN_OR_RETURN(util::File w, util::File::OpenWrite(util::JoinPath(dir, entry->rel)));
      out.emplace(std::move(w));
      out_rel = entry->rel;
    }
    Status st = out->PWrite(entry->bytes.data(), entry->bytes.size(), entry->offset);
    if (!st.ok()) return st.With("writing back the copy at byte " + std::to_string(at) + " of " + path);
    restored++;
  }
  return restored;
}

}  // namespace xbak::prepare
