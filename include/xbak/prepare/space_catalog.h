// The tablespaces of a backup directory as --prepare sees them: each file's
// id, flags and crypt data from its page 0 (or, for tablespaces created
// during the backup, from the redo log), and what --prepare refuses before
// it writes anything (a PAGE_COMPRESSED algorithm this build lacks, an
// encrypted tablespace without its key).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xbak/backupdir/table_filter.h"
#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/page.h"
#include "xbak/innodb/page_crypt.h"
#include "xbak/prepare/prepare_crypt.h"
#include "xbak/prepare/space_files.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

struct Space {
  uint32_t id = 0;
  std::string rel;                // path inside the backup directory
  std::vector<std::string> more;  // the system tablespace's further files (ibdata2, ...), in order
  innodb::SpaceFlags flags;
  bool flags_known = false;  // false: page 0 is still to come from the log (deferred creation)
  // Data-at-rest encryption: the crypt data (page 0's, or the last the log
  // wrote) and, when it may encrypt, the key of its pages (key version 1,
  // the only one file_key_management has).
  std::optional<innodb::CryptData> crypt;
  std::optional<innodb::AesKey> key;
};

// "./db/t.ibd", "/data/dir/db/t.ibd" -> "db/t.ibd": the last two components,
// as mariabackup --prepare maps DATA DIRECTORY paths into the backup.
std::optional<std::string> BackupRelName(const std::string& logged);

// "db/t.ibd page 7 (tablespace 12)", for messages.
std::string PageName(const Space& s, uint32_t page_no);

Result<SpaceFiles> OpenSpace(const std::string& dir, const Space& s);

// What prepare says, before writing anything, of a PAGE_COMPRESSED algorithm
// this build cannot decompress (its library was not found at build time).
Status RefuseCompression(const std::string& where, uint32_t algo);

// Decrypts an encrypted page of `s` in place (its key version field is set
// and its post-encryption checksum holds) and checks that the result is a
// valid page: a wrong key or algorithm gives garbage, never an error of its
// own. PAGE_COMPRESSED pages stay compressed.
Status DecryptForApply(const Space& s, uint32_t page_no, uint8_t* frame, innodb::CryptMode mode);

// The FILE_ records of the whole log: each tablespace's last name.
struct FileNames {
  std::map<uint32_t, std::string> last_name;  // rel name after the last FILE_ record
  std::set<uint32_t> deleted;                 // last FILE_ record was FILE_DELETE
};

class Catalog {
 public:
  // `crypt`: the keys (null: the backup names none). `log_crypt`: the crypt
  // data the log writes last for each tablespace (the key rotation threads
  // may have begun encrypting one after its page 0 was copied).
  Catalog(std::shared_ptr<const PrepareCrypt> crypt, std::map<uint32_t, innodb::CryptData> log_crypt)
      : crypt_(std::move(crypt)), log_crypt_(std::move(log_crypt)) {}

  // kBuild: reads every tablespace's page 0 into the catalog. kCheck: also
  // looks at the .new files the DDL markers will install, and only refuses
  // what xbak cannot apply to (before anything is written: PAGE_COMPRESSED
  // algorithms, keys, a first decryption). kCheckAndBuild: both in one pass
  // over the files (each opened once: tens of thousands of tables). `system`
  // names the system tablespace's files in order (ibdata1 first); only the
  // first has a page 0. Files are read on `parallel` threads. `only_tables`
  // (kCheck): of the files in database directories, look at these alone.
  enum class ScanMode { kBuild, kCheck, kCheckAndBuild };
  Status Scan(const std::string& dir, uint32_t page_size, const std::vector<std::string>& system,
              int parallel, ScanMode mode = ScanMode::kBuild,
              const std::set<std::string>* only_tables = nullptr);

  // Whether the last Scan saw DDL markers (.new, .ren, .del) in a database
  // directory. Installing them moves files, so a catalog built before they
  // run must be rebuilt (Rebuild) before anything is written.
  bool saw_ddl_markers() const { return saw_ddl_markers_; }

  // Forgets every tablespace and reads the files' page 0s again (kBuild).
  Status Rebuild(const std::string& dir, uint32_t page_size, const std::vector<std::string>& system,
                 int parallel);

  // Tablespaces that the log names but whose file holds no page 0 yet (or no
  // file at all): their page 0 must come from the log.
  void AddDeferred(const std::string& dir, const FileNames& names, const backupdir::TableFilter& filter);

  // A deferred tablespace's page 0 as the log rebuilt it: its flags and
  // crypt data.
  Status Resolve(Space& s, const uint8_t* page0, size_t n, uint32_t page_size);

  // Before anything is written, what the log alone says of tablespaces:
  // the keys of those it encrypts must be there, and those it creates
  // (`flags`: the FSP flags it writes to page 0) must be ones xbak applies to.
  // `incoming`: tablespaces that arrive before the log is applied (an
  // incremental's deltas, named), whose keys must be there too.
  Status CheckLogSpaces(const std::map<uint32_t, uint32_t>& flags,
                        const std::vector<std::pair<std::string, innodb::CryptData>>& incoming = {}) const;

  Space* Find(uint32_t id) {
    auto it = spaces_.find(id);
    return it == spaces_.end() ? nullptr : &it->second;
  }
  std::map<uint32_t, Space>& all() { return spaces_; }
  const PrepareCrypt* crypt() const { return crypt_.get(); }

 private:
  // Sets s.crypt (page 0's, or the log's) and, if it may encrypt, s.key;
  // refuses what cannot be decrypted. `where` names the file.
  Status SetCrypt(Space& s, std::optional<innodb::CryptData> page0, const std::string& where) const;
  // Scan's steps: the files that may be tablespaces (relative to dir), each
  // one's page 0 (nothing when it comes from the log; `check` reads further,
  // see ScanMode), and the spaces found added to the catalog.
  Result<std::vector<std::string>> ListCandidates(const std::string& dir,
                                                  const std::vector<std::string>& system, ScanMode mode,
                                                  const std::set<std::string>* only_tables);
  Result<std::optional<Space>> ReadPage0(const std::string& dir, const std::string& rel, uint32_t page_size,
                                         bool check) const;
  Status Add(const std::string& dir, const std::vector<std::string>& system, const std::string& rel,
             Space sp);

  std::shared_ptr<const PrepareCrypt> crypt_;
  std::map<uint32_t, innodb::CryptData> log_crypt_;
  std::map<uint32_t, Space> spaces_;
  std::set<std::string> unidentified_;
  bool saw_ddl_markers_ = false;
};

}  // namespace xbak::prepare
