#include "xbak/prepare/recorded_binlog.h"

#include <map>
#include <vector>

#include "xbak/backupdir/meta_names.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/page.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace xbak::prepare {
namespace {

// One page of `s` as the server reads it: decrypted if it is encrypted.
// `open`: the tablespaces opened so far (most rollback segments share a few).
Status ReadPlain(const std::string& dir, Catalog& catalog, const Space& s, uint32_t page_no,
                 std::map<uint32_t, SpaceFiles>& open, std::vector<uint8_t>& frame) {
  const size_t ps = s.flags.physical_size;
  frame.assign(ps, 0);
  auto it = open.find(s.id);
  if (it == open.end()) {
    XBAK_ASSIGN_OR_RETURN(SpaceFiles files, OpenSpace(dir, s));
    it = open.emplace(s.id, std::move(files)).first;
  }
  XBAK_ASSIGN_OR_RETURN(size_t n, it->second.PRead(frame.data(), ps, uint64_t{page_no} * ps));
  if (n < ps) {
    return Error(ErrorCode::kCorrupt, PageName(s, page_no) +
                                          " is past the end of the file: the TRX_SYS page " +
                                          "lists a rollback segment there");
  }
  if (innodb::ClaimsEncryption(frame.data(), s.flags, s.id, page_no) &&
      innodb::CheckPage(frame.data(), s.flags, page_no).encrypted) {
    const auto* crypt = catalog.crypt();
    XBAK_RETURN_IF_ERROR(
        DecryptForApply(s, page_no, frame.data(), crypt ? crypt->mode() : innodb::CryptMode::kCbc));
  }
  return Status::Ok();
}

}  // namespace

Result<std::optional<innodb::RecordedBinlog>> ReadRecordedBinlog(const std::string& dir, Catalog& catalog,
                                                                 uint32_t page_size) {
  Space* system = catalog.Find(0);
  if (system == nullptr || system->flags.physical_size != page_size)
    return std::optional<innodb::RecordedBinlog>{};
  std::map<uint32_t, SpaceFiles> open;
  std::vector<uint8_t> trx_sys, page;
  XBAK_RETURN_IF_ERROR(ReadPlain(dir, catalog, *system, innodb::kTrxSysPageNo, open, trx_sys));
  std::optional<innodb::RecordedBinlog> best;
  for (const innodb::RsegSlot& slot : innodb::RsegSlots(trx_sys.data(), page_size)) {
    Space* s = catalog.Find(slot.space_id);
    // Rollback segments live in the system and undo tablespaces, whose pages
    // are full-size: a slot naming anything else is damaged, and its page
    // too small for the fields read.
    if (s == nullptr || s->flags.physical_size != page_size) continue;
    XBAK_RETURN_IF_ERROR(ReadPlain(dir, catalog, *s, slot.page_no, open, page));
    auto b = innodb::RsegBinlog(page.data(), page_size);
    if (b && (!best || b->page_lsn > best->page_lsn)) best = std::move(b);
  }
  // The pre-10.3.5 place counts only when no rollback segment has one: an
  // upgraded server leaves a stale position there.
  if (!best) best = innodb::LegacyTrxSysBinlog(trx_sys.data(), page_size);
  return best;
}

std::optional<innodb::RecordedBinlog> RecordedBinlogIfNeeded(const std::string& dir, Catalog& catalog,
                                                             uint32_t page_size) {
  // Only a --no-lock backup, which has no position of its own: a locked
  // backup of a server without a binary log has none either, though its
  // rollback segments may still name one from before log_bin was turned off.
  // (An incremental's prepare brings the incremental's info file into the base.)
  if (util::PathExists(backupdir::MetaPath(dir, backupdir::Meta::kBinlogInfo))) return std::nullopt;
  auto info = util::ReadSmallFile(backupdir::MetaPath(dir, backupdir::Meta::kInfo), 1 << 20);
  if (!info.ok() || backupdir::InfoField(*info, "backup_locks") != "none") return std::nullopt;
  auto recorded = ReadRecordedBinlog(dir, catalog, page_size);
  if (recorded.ok()) return *recorded;
  util::LogWarning("the binary log position InnoDB recorded could not be read: " +
                   recorded.status().message());
  return std::nullopt;
}

}  // namespace xbak::prepare
