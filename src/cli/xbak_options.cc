#include "xbak_options.h"

#include <string>
#include <vector>

#include "compat_options.h"

namespace po = boost::program_options;

namespace xbak::cli {

const char* const kXbakUsage =
    "Usage: xbak MODE [OPTIONS]\n"
    "Hot backup of a running MariaDB server (InnoDB, Aria, MyISAM, ...). A server version xbak was not\n"
    "tested against is refused by name unless --no-server-version-check (xbak --version lists them).\n\n"
    "Modes:\n"
    "  --backup       copy a running server into --target-dir (or --stream=xbstream to stdout)\n"
    "  --prepare      apply the redo log copied during the backup (in parallel, --use-memory bounds\n"
    "                 it), so that --target-dir holds a consistent copy; with --incremental-dir: apply\n"
    "                 an incremental's deltas and redo log onto a prepared full backup\n"
    "  --copy-back    restore a prepared backup into an empty --datadir\n"
    "  --move-back    like --copy-back, but moves the files\n"
    "  --restore      a chain straight into an empty --datadir, in one pass, without changing the\n"
    "                 backups: --target-dir=FULL [--incremental-dir=INC ...] (repeated, in order;\n"
    "                 unprepared, as they were taken) or --from-stream=FULL.xb --from-stream=INC.xb ...;\n"
    "                 re-run the same command to resume it (see docs/restore.md)\n"
    "  --extract, -x  unpack an xbstream (stdin, --input=FILE or --fifo-streams) into -C DIR\n"
    "  --decompress   decompress the .zst/.lz4 files of a backup in --target-dir\n"
    "  --decrypt=AES256  decrypt the .xbenc files of a backup in --target-dir (with --extract: as the\n"
    "                 stream is unpacked)\n"
    "  --verify       check a backup in --target-dir (and its incrementals: --incremental-dir=INC,\n"
    "                 repeated, in order) without changing it: page checksums, deltas, redo log,\n"
    "                 promised files, LSN chain; one line per problem, exit status 0 only if sound\n\n"
    "Option files: --defaults-file=F replaces ~/.my.cnf; groups [client] and [xbak] give the\n"
    "connection, [mysqld]/[mariadbd] give datadir for --copy-back and --restore. The password may also come "
    "from\n"
    "the MYSQL_PWD environment variable; it never has to be on the command line.\n\n";

// Long on purpose: the list of options, grouped as --help shows them.
void DescribeXbakOptions(po::options_description* all, po::options_description* visible_out) {
  po::options_description modes("Modes");
  modes.add_options()("backup", "take a backup")("prepare", "prepare a backup")(
      "copy-back", "restore a prepared backup")("move-back", "restore by moving files")(
      "restore", "restore a chain in one pass")("extract,x", "unpack an xbstream")(
      "decompress", "decompress a compressed backup")("verify", "check a backup (and its incrementals)")(
      "decrypt", po::value<std::string>(),
      "decrypt an encrypted backup (AES256 or CHACHA20; the files say which)")("help", "show this help")(
      "version", "show the version");

  po::options_description conn("Connection (also from [client]/[xbak] in option files)");
  conn.add_options()("user,u", po::value<std::string>(), "user name")(
      "password,p", po::value<std::string>(), "password (prefer MYSQL_PWD or an option file)")(
      "host,H", po::value<std::string>(), "server host (the server must be on this machine)")(
      "port,P", po::value<unsigned>(), "TCP port")("socket,S", po::value<std::string>(), "unix socket")(
      "protocol", po::value<std::string>(),
      "tcp: connect by TCP even to localhost (127.0.0.1); socket: the unix socket (the default for "
      "localhost)")(
      "ssl", "connect with TLS (also implied by any --ssl-* option); fail rather than connect in clear")(
      "ssl-ca", po::value<std::string>(),
      "TLS: the CA certificate file; the server's certificate is then verified")(
      "ssl-capath", po::value<std::string>(), "TLS: a directory of CA certificates (then verified)")(
      "ssl-cert", po::value<std::string>(), "TLS: the client certificate file")(
      "ssl-key", po::value<std::string>(), "TLS: the client key file")("ssl-cipher", po::value<std::string>(),
                                                                       "TLS: the ciphers to allow")(
      "ssl-verify-server-cert",
      "TLS: verify the server's certificate and host name even without --ssl-ca (against the system's CAs)")(
      "defaults-file", po::value<std::string>(), "read options only from this file")(
      "defaults-extra-file", po::value<std::string>(), "read this file after the global option files")(
      "defaults-group-suffix", po::value<std::string>(),
      "also read the groups with this suffix ([client.1], [mysqld.1], ... for .1)")("no-defaults",
                                                                                    "read no option file");

  po::options_description general("Backup and restore");
  general.add_options()("target-dir", po::value<std::string>(), "backup directory")(
      "datadir,h", po::value<std::string>(), "server datadir (default: asked from the server)")(
      "parallel", po::value<int>()->default_value(1), "copy threads")(
      "stream", po::value<std::string>(), "xbstream: write the backup to stdout as an xbstream")(
      "incremental-basedir", po::value<std::string>(),
      "incremental backup: only pages changed since the backup in this directory (its to_lsn)")(
      "incremental-lsn", po::value<uint64_t>(), "incremental backup: only pages changed after this LSN")(
      "incremental-dir", po::value<std::vector<std::string>>(),
      "--prepare: the incremental backup to apply to --target-dir; --verify: an incremental of the "
      "chain (repeat, in order)")("slave-info",
                                  "record the replication position of this replica in xtrabackup_slave_info "
                                  "(mariadb_backup_slave_info from MariaDB 11.1, as its own tool names it)")(
      "galera-info",
      "--backup of a Galera node: record its cluster position (state UUID:seqno and GTID domain) in "
      "xtrabackup_galera_info (mariadb_backup_galera_info from MariaDB 11.1)")(
      "no-lock",
      "--backup without BACKUP STAGE locks (for a user without RELOAD): InnoDB tables stay consistent, "
      "DDL during the backup fails it, non-InnoDB tables written meanwhile are not consistent, and no "
      "binary log position is recorded (--prepare gives InnoDB's own)")(
      "safe-slave-backup",
      "--backup of a replica: stop its replication SQL thread while the server is held, once no "
      "temporary table is open in it; started again right after")(
      "safe-slave-backup-timeout", po::value<unsigned>()->default_value(300),
      "seconds --safe-slave-backup waits for the SQL thread's temporary tables to close")(
      "innodb-log-checkpoint-now", po::value<std::string>()->implicit_value("1"),
      "--backup: have the server write a log checkpoint first (SET GLOBAL innodb_log_checkpoint_now), so "
      "that the backup carries less redo log to apply; =0 or OFF: not")(
      "extended-validation",
      "--backup: also decrypt each encrypted page (with the server's file_key_management keys, read on "
      "its host) and check its plain content, which the 4-byte checksum of an encrypted page in the "
      "formats before full_crc32 may not reveal")(
      "lock-wait-timeout", po::value<unsigned>()->default_value(0),
      "seconds BACKUP STAGE may wait for a lock before the backup fails (0: the server's lock_wait_timeout)")(
      "ftwrl-wait-timeout", po::value<unsigned>(),
      "mariabackup's name for --lock-wait-timeout (xbak takes BACKUP STAGE locks, no FLUSH TABLES WITH READ "
      "LOCK)")("log-copy-timeout", po::value<unsigned>()->default_value(60),
               "fail if the redo log copy makes no progress for this many seconds")(
      "page-retries", po::value<int>()->default_value(10), "re-reads of a page with a bad checksum")(
      "tmpdir,t", po::value<std::string>(),
      "--backup: where the redo log copy spools what a slow output (stream, FIFO, upload) has not "
      "taken yet, beyond --redo-spool-memory (an unnamed file, gone when xbak exits; default $TMPDIR "
      "or /tmp)")("redo-spool-memory", po::value<std::string>()->default_value("16M"),
                  "--backup: redo log held in memory for a slow output before spooling to --tmpdir (K/M/G)")(
      "log-copy-interval", po::value<unsigned>()->default_value(20),
      "--backup: longest wait in ms between reads of an idle server's redo log (a busy log is read "
      "again within 1 ms)")(
      "history", po::value<std::string>()->implicit_value(""),
      "--backup: record the backup in mysql.mariadb_backup_history (as mariabackup does), in the series "
      "NAME if given (--history=NAME)")(
      "incremental-history-name", po::value<std::string>(),
      "--backup: incremental from the latest backup of this --history series")(
      "incremental-history-uuid", po::value<std::string>(),
      "--backup: incremental from the --history row with this uuid")(
      "extra-lsndir", po::value<std::string>(),
      "--backup: also write the checkpoints and info files (xtrabackup_* or, from MariaDB 11.1, "
      "mariadb_backup_*) to this local directory once the backup is complete (with --stream: the next "
      "--incremental-basedir)")(
      "no-server-version-check",
      "--backup, --prepare, --restore: go on with a server version (or a backup of one) xbak was not "
      "tested against, at your own risk; one whose formats xbak does not read (MariaDB before 10.8, "
      "MySQL) is refused all the same")(
      "throttle", po::value<uint64_t>()->default_value(0),
      "--backup: at most this many data file I/O operations (1 MiB read + write) per second, to "
      "spare the server's disk (0: unlimited; the redo log copy is never throttled)")(
      "apply-log-only",
      "accepted for compatibility (prepare): MariaDB 10.11 rolls back incomplete transactions at "
      "server start, so every prepared backup can still take incrementals")(
      "export",
      "--prepare: then write a .cfg file beside every InnoDB table, for ALTER TABLE ... IMPORT "
      "TABLESPACE into a running server; starts a MariaDB server of the backup's version on the backup "
      "(docs/export.md); the backup then takes no more incrementals")(
      "mariadbd", po::value<std::string>(),
      "--export: the MariaDB server program to use (default: mariadbd in PATH, /usr/sbin, /usr/bin)")(
      "innodb-force-recovery", po::value<int>(),
      "--prepare: 1 leaves a page the redo log cannot be applied to (corrupt, or records that do not fit "
      "it) as it was, named in a warning, instead of failing; 2 to 6 act as 1, as mariabackup's; 0 (the "
      "default) fails on such a page. From the command line, or from the backup's own backup-my.cnf given "
      "as --defaults-file (another option file's server setting is ignored); refused on the command line "
      "of any other mode")(
      "use-memory", po::value<std::string>()->default_value("256M"),
      "--prepare, --restore: memory for the parsed redo log of one batch (K/M/G suffixes); a longer log is "
      "applied in several batches")("force-non-empty-directories",
                                    "copy-back into a non-empty datadir (never overwrites files)")(
      "remote-tablespaces-to-datadir",
      "copy-back, restore: put tables created with DATA DIRECTORY in the datadir, without their .isl, "
      "instead "
      "of back into the directory their .isl names")("innodb-log-group-home-dir", po::value<std::string>(),
                                                     "copy-back, restore: where ib_logfile0 goes")(
      "innodb-data-home-dir", po::value<std::string>(), "copy-back, restore: where ibdata files go")(
      "innodb-undo-directory", po::value<std::string>(), "copy-back, restore: where undo tablespaces go")(
      "innodb-data-file-path", po::value<std::string>(),
      "copy-back, restore: the server's innodb_data_file_path; each system tablespace file goes to the path "
      "it names there (absolute, or in --innodb-data-home-dir)")(
      "aria-log-dir-path", po::value<std::string>(),
      "copy-back, restore: where the Aria logs (aria_log_control, aria_log.N) go")(
      "from-stream", po::value<std::vector<std::string>>(),
      "--restore from xbstreams instead of directories: a file, named pipe or - (stdin), repeated: the "
      "full backup's first, then each incremental's, in order (e.g. pipes fed by xbcloud get)")(
      "progress-interval", po::value<unsigned>()->default_value(2),
      "seconds between progress lines (0: none)");

  po::options_description streaming("Streaming, FIFOs, compression, extraction");
  streaming.add_options()(
      "fifo-streams", po::value<int>()->default_value(1),
      "with --stream: N>1 writes N xbstreams to named pipes DIR/thread_0..N-1 (one per reader); "
      "with --extract: read N such pipes")("fifo-dir", po::value<std::string>(),
                                           "directory of the named pipes")(
      "fifo-timeout", po::value<unsigned>()->default_value(60),
      "seconds to wait for the other end of each pipe")(
      "compress", po::value<std::string>()->implicit_value("zstd"),
      "compress data files and the redo log: zstd (default) or lz4; files get .zst/.lz4")(
      "compress-threads", po::value<int>()->default_value(1), "compression threads")(
      "compress-chunk-size", po::value<size_t>()->default_value(64 << 10), "lz4 block size in bytes")(
      "compress-zstd-level", po::value<int>()->default_value(1), "zstd level (1-19)")(
      "directory,C", po::value<std::string>(), "--extract: target directory")(
      "input", po::value<std::string>(), "--extract: read this file instead of stdin")(
      "overwrite", "--extract: replace files that exist in the target")(
      "remove-original", "--decompress/--decrypt: delete X.zst/X.xbenc once X is complete");

  po::options_description encryption(
      "Backup encryption (every file as X.xbenc, authenticated; see docs/backup-encryption.md)");
  encryption.add_options()("encrypt", po::value<std::string>(),
                           "--backup: encrypt every file with AES256 (AES-256-GCM) or CHACHA20 "
                           "(ChaCha20-Poly1305), after compression")(
      "encrypt-key-file", po::value<std::vector<std::string>>()->composing(),
      "the file holding the 32-byte key (mode 600; e.g. openssl rand -base64 24); for --decrypt and "
      "--extract, repeat it to give several keys (each file names its key); or set XBAK_ENCRYPT_KEY")(
      "encrypt-threads", po::value<int>()->default_value(1),
      "--backup: threads that encrypt what small writes gather (whole chunks are encrypted by the copy "
      "threads)")("encrypt-chunk-size", po::value<std::string>()->default_value("1M"),
                  "--backup: plaintext bytes per encrypted chunk (1 .. 64M)")(
      "encrypt-key", po::value<std::string>(), "refused: a key on the command line shows in ps");

  po::options_description partial(
      "Partial backups (--backup; names as on disk, db.table; see docs/partial.md)");
  partial.add_options()("databases", po::value<std::string>(),
                        "take only these databases and tables: \"db1 db2.t1 ...\"")(
      "databases-file", po::value<std::string>(),
      "take only the databases and db.tables listed in this file")(
      "databases-exclude", po::value<std::string>(),
      "leave out these databases and tables: \"db1 db2.t1 ...\"")(
      "tables", po::value<std::string>(),
      "take only tables whose db.table matches one of these POSIX extended regexes (comma-separated)")(
      "tables-file", po::value<std::string>(), "take only the db.table names listed in this file")(
      "tables-exclude", po::value<std::string>(),
      "leave out tables whose db.table matches one of these regexes (comma-separated)");

  po::options_description keys(
      "Encryption (--prepare of a server's encrypted tables or redo log; default: as backup-my.cnf "
      "says; see docs/encryption.md)");
  keys.add_options()("file-key-management-filename", po::value<std::string>(),
                     "the file_key_management key file (where it is on this host)")(
      "file-key-management-filekey", po::value<std::string>(),
      "FILE:path of the file holding the key file's password (the password itself also works, but "
      "shows in ps; or set XBAK_FILE_KEY_MANAGEMENT_FILEKEY)")(
      "file-key-management-encryption-algorithm", po::value<std::string>(), "aes_cbc or aes_ctr");
  // mariabackup takes these with the loose- prefix: the same, for scripts.
  po::options_description loose;
  for (const char* k : {"file-key-management-filename", "file-key-management-filekey",
                        "file-key-management-encryption-algorithm"}) {
    loose.add_options()((std::string("loose-") + k).c_str(), po::value<std::string>(), "");
  }
  po::options_description compat("Accepted for mariabackup's command lines (see docs/mariabackup.md)");
  compat.add_options()("innobackupex",
                       "innobackupex's command line: the directory as the last argument, --apply-log for "
                       "--prepare, --backup by default (into DIR/YYYY-MM-DD_hh-mm-ss unless --no-timestamp)")(
      "apply-log", "innobackupex: --prepare")("incremental",
                                              "innobackupex: an incremental backup (with "
                                              "--incremental-basedir)")(
      "mysqld-args", "the rest of the command line is the server's options: ignored");
  DescribeCompatOptions(&compat);
  visible_out->add(modes)
      .add(conn)
      .add(general)
      .add(partial)
      .add(streaming)
      .add(encryption)
      .add(keys)
      .add(compat);
  all->add(*visible_out).add(loose);
}

}  // namespace xbak::cli
