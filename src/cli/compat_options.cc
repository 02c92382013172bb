#include "compat_options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "xbak/util/ascii.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

// Options mariabackup takes whose value xbak does not need, and why.
struct Compat {
  const char* name;
  bool takes_value;
  const char* why;
};
constexpr Compat kCompat[] = {
    // Server settings for mariabackup's embedded InnoDB: xbak reads the files
    // itself and takes the layout from the running server or backup-my.cnf.
    {"innodb-flush-method", true, "server setting; xbak does its own I/O"},
    {"innodb-log-write-ahead-size", true, "server setting; xbak writes whole pages"},
    {"innodb-page-size", true, "the server's layout is taken from the server or backup-my.cnf"},
    {"innodb-log-file-size", true, "the server's layout is taken from the server or backup-my.cnf"},
    {"innodb-log-buffer-size", true, "server setting"},
    {"innodb-buffer-pool-size", true, "server setting; --use-memory bounds --prepare"},
    {"innodb-file-per-table", true, "server setting"},
    {"innodb-undo-tablespaces", true, "the server's layout is taken from the server or backup-my.cnf"},
    {"innodb-checksum-algorithm", true, "every page is checked by its own format"},
    {"innodb-encrypt-log", true, "read from backup-my.cnf or the redo log itself"},
    {"innodb-compression-level", true, "server setting"},
    {"innodb-doublewrite", true, "server setting"},
    {"innodb-read-io-threads", true, "server setting; --parallel sets xbak's threads"},
    {"innodb-write-io-threads", true, "server setting; --parallel sets xbak's threads"},
    {"innodb-use-native-aio", true, "server setting"},
    {"open-files-limit", true, "xbak opens files as it needs them"},
    {"plugin-dir", true, "xbak loads no plugins"},
    {"plugin-load", true, "xbak loads no plugins"},
    {"rocksdb-datadir", true, "MyRocks is not backed up"},
    // mariabackup's FLUSH TABLES WITH READ LOCK and its waits: xbak takes
    // BACKUP STAGE locks, which wait for no long query (--lock-wait-timeout).
    {"lock-ddl-per-table", false, "BACKUP STAGE START already blocks what DDL would break the copy"},
    {"ftwrl-wait-threshold", true, "no FLUSH TABLES WITH READ LOCK is taken"},
    {"ftwrl-wait-query-type", true, "no FLUSH TABLES WITH READ LOCK is taken"},
    {"kill-long-queries-timeout", true, "no FLUSH TABLES WITH READ LOCK is taken"},
    {"kill-long-query-type", true, "no FLUSH TABLES WITH READ LOCK is taken"},
    {"backup-lock-timeout", true, "use --lock-wait-timeout"},
    {"backup-lock-retry-count", true, "use --lock-wait-timeout"},
    {"binlog-info", true, "the binary log position is always recorded, under BACKUP STAGE BLOCK_COMMIT"},
    {"no-backup-locks", false, "BACKUP STAGE is always used"},
    // Checks and debugging that xbak does always, or not at all.
    {"log-innodb-page-corruption", false, "a corrupt page fails the backup"},
    {"close-files", false, "xbak keeps no file open longer than its copy"},
    {"check-privileges", false, "the privileges are always checked"},
    {"core-file", false, "debug switch"},
    {"dbug", true, "debug builds of mariabackup only"},
    {"debug-sync", true, "debug builds of mariabackup only"},
    {"verbose", false, "xbak's log is the same at every level"},
    {"no-version-check", false, "xbak never calls home"},
    {"sst-max-binlogs", true, "Galera SST only"},
    {"rsync", false, "xbak copies the files itself"},
    {"character-sets-dir", true, "client setting"},
    {"default-character-set", true, "client setting"},
    // innobackupex's switches (xbak reads its positional directory).
    {"no-timestamp", false, "innobackupex: xbak writes into the directory given"},
};

}  // namespace

void DescribeCompatOptions(po::options_description* desc) {
  for (const Compat& c : kCompat) {
    const std::string help = std::string("no effect: ") + c.why;
    if (c.takes_value)
      desc->add_options()(c.name, po::value<std::string>(), help.c_str());
    else
      desc->add_options()(c.name, help.c_str());
  }
}

std::optional<CompatError> CheckCompatOptions(const po::variables_map& vm) {
  if (vm.count("innodb-flush-method")) {
    // The server's values (an enum: my_getopt refuses any other, 13).
    constexpr std::array<std::string_view, 6> kMethods = {"fsync",  "o_dsync",  "littlesync",
                                                          "nosync", "o_direct", "o_direct_no_fsync"};
    const std::string v = vm["innodb-flush-method"].as<std::string>();
    const std::string l = util::AsciiLower(v);
    const bool number = l.size() == 1 && std::isdigit(static_cast<unsigned char>(l[0])) &&
                        static_cast<size_t>(l[0] - '0') < kMethods.size();
    if (!number && std::find(kMethods.begin(), kMethods.end(), l) == kMethods.end()) {
      return CompatError{13, "invalid value '" + v +
                                 "' for innodb-flush-method (fsync, O_DSYNC, littlesync, "
                                 "nosync, O_DIRECT or O_DIRECT_NO_FSYNC)"};
    }
  }
  if (vm.count("innodb-log-write-ahead-size")) {
    // The server takes a power of 2 from 512 to 4096, and clamps one out of
    // range (my_getopt); one in range that is no power of 2 stops its InnoDB.
    const std::string v = vm["innodb-log-write-ahead-size"].as<std::string>();
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || end == v.c_str() || *end != '\0' || errno == ERANGE) {
      return CompatError{13, "invalid value '" + v + "' for innodb-log-write-ahead-size (a number)"};
    }
    if (n >= 512 && n <= 4096 && (n & (n - 1)) != 0) {
      return CompatError{1, "innodb-log-write-ahead-size=" + v + " is not a power of 2 (512 to 4096)"};
    }
  }
  return std::nullopt;
}

}  // namespace xbak::cli
