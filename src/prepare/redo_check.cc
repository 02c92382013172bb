#include "redo_check.h"

#include <sys/resource.h>

#include "xbak/backupdir/metadata.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/innodb/redo_record.h"
#include "xbak/prepare/log_file_ops.h"
#include "xbak/util/endian.h"

namespace xbak::prepare {

using innodb::PageRecord;
using innodb::RecordType;

void RaiseOpenFileLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

bool IsPassOver(const CheckedLog* c, const std::string& log_path, uint64_t required_lsn, uint32_t page_size) {
  return c != nullptr && c->log_path == log_path && c->required_lsn == required_lsn &&
         c->page_size == page_size;
}

namespace {

// What the first pass learns from one page record of the mtr at `lsn`.
void NotePageRecord(const PageRecord& r, uint64_t lsn, uint32_t page_size, LogCheck* out) {
  const uint64_t key = (uint64_t{r.space_id} << 32) | r.page_no;
  out->page_records++;
  if (r.type == RecordType::kFreePage) {
    out->freed_at_end.insert(key);
  } else if (!out->freed_at_end.empty()) {
    out->freed_at_end.erase(key);
  }
  if (r.type == RecordType::kFreePage || r.type == RecordType::kInitPage) out->last_init[key] = lsn;
  if (innodb::IsTrimPages(r)) {
    out->ddl.spaces.insert(r.space_id);
    out->trims[r.space_id].push_back({lsn, r.page_no});
  }
  if (r.type != RecordType::kWrite || r.page_no != 0 || r.data_len < r.length) return;
  // The crypt data the server wrote (write_page0): the last one of each
  // tablespace decides how its pages are written.
  if (auto c = innodb::CryptDataFromWrite(page_size, r.offset, r.data, r.length))
    out->log_crypt[r.space_id] = *c;
  if (r.offset <= innodb::kFspSize && r.offset + r.length >= innodb::kFspSize + 4)
    out->sized.insert(r.space_id);
  // The flags of a tablespace created during the backup, whose page 0 will
  // only come from the log.
  if (r.offset <= innodb::kFspSpaceFlags && r.offset + r.length >= innodb::kFspSpaceFlags + 4) {
    out->log_flags[r.space_id] = util::LoadBE32(r.data + (innodb::kFspSpaceFlags - r.offset));
  }
}

}  // namespace

Result<LogCheck> CheckLog(const RedoApplyOptions& o, const std::string& log_path, uint32_t page_size,
                          LogScanner& scanner) {
  LogCheck out;
  FileNames& names = out.names;
  uint64_t& end_lsn = out.end_lsn;
  std::string why;
  uint64_t released = scanner.checkpoint().checkpoint_lsn;
  Status walk = scanner.Scan(
      [&](const MtrView& m) -> Status {
        for (const auto& op : m.info->file_ops) {
          auto rel = BackupRelName(op.type == innodb::FileOp::Type::kRename ? op.new_name : op.name);
          if (!rel) {
            return Error(ErrorCode::kCorrupt, log_path + ": FILE_ record at " +
                                                  innodb::FormatLsn(m.start_lsn) +
                                                  " names an impossible path '" + op.name + "'");
          }
          names.last_name[op.space_id] = *rel;
          if (op.type != innodb::FileOp::Type::kModify) {
            out.ddl.spaces.insert(op.space_id);
            out.ddl.names.insert(*rel);
            if (op.type == innodb::FileOp::Type::kRename) {
              if (auto from = BackupRelName(op.name)) out.ddl.names.insert(*from);
            }
          }
          if (op.type == innodb::FileOp::Type::kDelete) {
            names.deleted.insert(op.space_id);
          } else {
            names.deleted.erase(op.space_id);
          }
        }
        if (m.start_lsn - released >= (64u << 20)) {
          scanner.Release(m.start_lsn);
          released = m.start_lsn;
        }
        Status st = innodb::ForEachPageRecord(m.bytes, m.records_len, page_size, [&](const PageRecord& r) {
          NotePageRecord(r, m.start_lsn, page_size, &out);
          return Status::Ok();
        });
        return st.ok() ? st : st.With(log_path + ": mini-transaction at " + innodb::FormatLsn(m.start_lsn));
      },
      &end_lsn, &why);
  XBAK_RETURN_IF_ERROR(walk);
  // New crypt data or flags on page 0: a tablespace being encrypted, or one
  // created during the backup.
  for (const auto& [id, c] : out.log_crypt) out.ddl.spaces.insert(id);
  for (const auto& [id, f] : out.log_flags) out.ddl.spaces.insert(id);
  if (end_lsn < o.required_lsn) {
    const bool corrupt =
        why.find("checksum") != std::string::npos || why.find("sequence bit") != std::string::npos;
    return Error(ErrorCode::kCorrupt,
                 log_path + (corrupt ? ": the redo log is corrupt at " : ": the redo log ends at ") +
                     innodb::FormatLsn(end_lsn) + " (" + why + "), but the backup needs it up to " +
                     innodb::FormatLsn(o.required_lsn) + (corrupt ? "" : ": the log is truncated"));
  }
  return out;
}

Result<CheckedLogPtr> CheckRedoLog(const std::string& log_dir, const std::string& data_dir,
                                   uint64_t required_lsn, const KeyOptions& keys) {
  RaiseOpenFileLimit();
  const std::string log_path = util::JoinPath(log_dir, "ib_logfile0");
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf cnf, backupdir::ReadBackupCnf(data_dir));
  XBAK_ASSIGN_OR_RETURN(auto crypt, PrepareCrypt::Load(data_dir, keys));
  XBAK_ASSIGN_OR_RETURN(auto scanner, LogScanner::Open(log_path, crypt.get()));
  RedoApplyOptions o;
  o.dir = data_dir;
  o.required_lsn = required_lsn;
  auto c = std::make_shared<CheckedLog>();
  XBAK_ASSIGN_OR_RETURN(c->check, CheckLog(o, log_path, cnf.page_size, *scanner));
  c->log_path = log_path;
  c->required_lsn = required_lsn;
  c->checkpoint_lsn = scanner->checkpoint().checkpoint_lsn;
  c->page_size = cnf.page_size;
  return CheckedLogPtr(std::move(c));
}

Status CheckRedoApplicable(const std::string& log_dir, const std::string& data_dir, uint64_t required_lsn,
                           const KeyOptions& keys, int parallel,
                           const std::vector<std::pair<std::string, innodb::CryptData>>& incoming,
                           const std::set<std::string>* only_tables, CheckedLogPtr* checked) {
  RaiseOpenFileLimit();
  XBAK_ASSIGN_OR_RETURN(backupdir::BackupCnf cnf, backupdir::ReadBackupCnf(data_dir));
  XBAK_ASSIGN_OR_RETURN(auto crypt, PrepareCrypt::Load(data_dir, keys));
  CheckedLogPtr c = checked != nullptr ? *checked : nullptr;
  if (!IsPassOver(c.get(), util::JoinPath(log_dir, "ib_logfile0"), required_lsn, cnf.page_size)) {
    XBAK_ASSIGN_OR_RETURN(c, CheckRedoLog(log_dir, data_dir, required_lsn, keys));
  }
  Catalog probe(crypt, c->check.log_crypt);
  XBAK_RETURN_IF_ERROR(probe.CheckLogSpaces(c->check.log_flags, incoming));
  XBAK_RETURN_IF_ERROR(probe.Scan(data_dir, cnf.page_size, cnf.system_files, parallel,
                                  Catalog::ScanMode::kCheck, only_tables));
  if (checked != nullptr) *checked = std::move(c);
  return Status::Ok();
}

}  // namespace xbak::prepare
