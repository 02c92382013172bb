#!/usr/bin/env bash
# Issue 40: xbak in mariabackup's place, as the scripts and option files written for mariabackup
# (and MariaDB's own test suite, tests/peer/run-mariabackup-suite.sh) use it. Run through a link
# named mariabackup:
#  - option files: an empty "password=", the groups mariabackup reads ([client], [mariabackup],
#    the .N twins of --defaults-group-suffix) and not [mariadb-client] nor [mysqld]'s user; at
#    --backup the running server's datadir, not an option file's;
#    an unknown option in xbak's own groups is refused;
#  - my_getopt's exit codes: 7 for an unknown --x=v, 2 for --x, 13 for a bad value; under xbak's own
#    name 2 for all; --mysqld-args ends xbak's options; -? is --help;
#  - --innodb-log-write-ahead-size and --innodb-force-recovery refused as mariabackup refuses them;
#    --innodb-force-recovery at --prepare, from backup-my.cnf too, said in mariabackup's words
#    (its effect: tests/unit/prepare/redo_apply_test.cc); log lines begin "[00] " as mariabackup's;
#  - --protocol=tcp connects by TCP even without --host; --ftwrl-wait-timeout bounds the lock wait;
#  - an incremental whose base recorded another innodb_undo_tablespaces is refused (its target left
#    empty, as mariabackup leaves it);
#  - --innobackupex: a positional directory, --no-timestamp, --Apply_log;
#  - an empty database directory is backed up, @@ignore_db_dirs are not;
#  - an incremental after DROP DATABASE and CREATE DATABASE restores without the dropped one and
#    with the new one;
#  - --prepare writes xtrabackup_binlog_pos_innodb and says "Last binlog file";
#  - --history records tool_name mariabackup and an empty name;
#  - --decompress refuses qpress files; --copy-back puts the Aria logs in --aria-log-dir-path, the
#    system tablespace where --innodb-data-file-path says, and takes --innodb-undo-directory=./ as
#    the datadir.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK
sb_init src "$src_port" "ignore-db-dirs=skipme"
sb_start src
sb_load_sample src
cnf=$(sb_cnf src)
datadir=$(sb_datadir src)
mkdir -p "$W/bin"
ln -s "$XBAK" "$W/bin/mariabackup"
MB=$W/bin/mariabackup
# expect_rc RC LABEL CMD... : CMD exits with RC (its output in $W/LABEL.log)
expect_rc() {
  local want=$1 label=$2 rc=0
  shift 2
  "$@" > "$W/$label.log" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { tail -n 5 "$W/$label.log" >&2; fail "$label: exit status $rc, expected $want"; }
}

step "option files as mariabackup reads them"
cat > "$W/mb.cnf" <<EOF
[client]
password=
socket=/nonexistent/client.sock
[client.2]
socket=$(sb_socket src)
user=root
[mariadb-client]
user=nobody
password=wrong
[mysqld]
user=mysql
datadir=/nonexistent/another-server
EOF
expect_rc 0 suffix "$MB" --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --backup \
  --innodb-log-checkpoint-now --innodb-log-write-ahead-size=10000 --target-dir="$W/b1" --mysqld-args --no-such-server-option
assert_file "$W/b1/${META}checkpoints"

step "an incremental of a server whose innodb_undo_tablespaces changed since its base is refused"
cp -a "$W/b1" "$W/b1-undo"
sed -i 's/^innodb_undo_tablespaces=.*/innodb_undo_tablespaces=7/' "$W/b1-undo/backup-my.cnf"
expect_rc 1 undo "$MB" --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --backup \
  --incremental-basedir="$W/b1-undo" --target-dir="$W/undo-inc"
assert_contains "$W/undo.log" "incremental backup is impossible if the server had been restarted with different innodb_undo_tablespaces"
[ -z "$(ls -A "$W/undo-inc")" ] || fail "the refused incremental wrote into its target"

step "my_getopt's exit codes under mariabackup's name, 2 under xbak's"
expect_rc 7 unknown-var "$MB" --defaults-file="$W/mb.cnf" --backup --unknown-option=xxx --target-dir="$W/x"
expect_rc 2 unknown-opt "$MB" --defaults-file="$W/mb.cnf" --backup --unknown-option --target-dir="$W/x"
expect_rc 13 bad-value "$MB" --defaults-file="$W/mb.cnf" --backup --parallel=many --target-dir="$W/x"
expect_rc 2 xbak-unknown "$XBAK" --backup --unknown-option=xxx --target-dir="$W/x"
printf '[mariabackup]\nunknown-option=XXX\n' > "$W/strict.cnf"
expect_rc 7 strict-group "$MB" --defaults-file="$W/strict.cnf" --backup --target-dir="$W/x"
assert_contains "$W/strict-group.log" "strict.cnf:2"
printf '[mariadbd]\ninnodb-flush-method=O_DIRECT\n[mariabackup]\ninnodb-flush-method=blablabla\n' > "$W/flush.cnf"
expect_rc 13 flush-method "$MB" --defaults-file="$W/flush.cnf" --backup --target-dir="$W/x"
expect_rc 1 write-ahead "$MB" --defaults-file="$W/mb.cnf" --backup --innodb-log-write-ahead-size=4095 --target-dir="$W/x"
expect_rc 1 force-recovery "$MB" --defaults-file="$W/mb.cnf" --backup --innodb-force-recovery=1 --target-dir="$W/x"
assert_contains "$W/force-recovery.log" 'should only be used with "--prepare"'
expect_rc 0 help "$MB" '-?'
assert_contains "$W/help.log" "innobackupex"
[ ! -e "$W/x" ] || fail "a refused command line wrote $W/x"

step "--protocol=tcp: TCP to 127.0.0.1 without --host, whatever socket the option files name"
sb_sql src "CREATE USER tcp@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT RELOAD, PROCESS, BINLOG MONITOR, SELECT ON *.* TO tcp@'127.0.0.1'"
MYSQL_PWD=pw expect_rc 0 tcp "$MB" --defaults-file="$W/mb.cnf" --protocol=tcp --port="$src_port" --user=tcp \
  --backup --target-dir="$W/tcp"
assert_contains "$W/tcp.log" "127.0.0.1:$src_port"

step "--ftwrl-wait-timeout: a lock held by another session fails the backup, not hangs it"
sb_sql src "CREATE DATABASE lk; CREATE TABLE lk.locked (i INT) ENGINE=InnoDB"
(sb_sql src "LOCK TABLES lk.locked WRITE; DO SLEEP(60)" || true) &
holder=$!
sleep 1
t0=$SECONDS
expect_rc 1 ftwrl "$MB" --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --backup --ftwrl-wait-timeout=1 \
  --target-dir="$W/locked"
[ $((SECONDS - t0)) -lt 30 ] || fail "--ftwrl-wait-timeout=1 waited $((SECONDS - t0)) s"
id=$(sb_sql src "SELECT id FROM information_schema.processlist WHERE info LIKE 'DO SLEEP%' LIMIT 1")
[ -z "$id" ] || sb_sql src "KILL $id"
wait "$holder" 2> /dev/null || true

step "--innobackupex: positional directory, --no-timestamp, --Apply_log"
expect_rc 0 ibx "$MB" --innobackupex --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --no-timestamp "$W/ibx"
expect_rc 0 ibx-apply "$MB" --innobackupex --Apply_log "$W/ibx"
assert_contains "$W/ibx/${META}checkpoints" '^backup_type = log-applied$'

step "databases: an empty directory is one, @@ignore_db_dirs are not; a dropped one goes at prepare"
mkdir "$datadir/emptydb" "$datadir/skipme"
sb_sql src "CREATE DATABASE dropme; CREATE TABLE dropme.m (i INT) ENGINE=MyISAM; CREATE TABLE dropme.i (i INT) ENGINE=InnoDB"
expect_rc 0 full "$MB" --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --backup --history \
  --target-dir="$W/full"
assert_dir "$W/full/emptydb"
[ ! -e "$W/full/skipme" ] || fail "a directory of @@ignore_db_dirs was backed up"
sb_sql src "DROP DATABASE dropme; CREATE DATABASE newdb; CREATE TABLE newdb.t (i INT) ENGINE=InnoDB SELECT 1 AS i"
expect_rc 0 inc "$MB" --defaults-file="$W/mb.cnf" --defaults-group-suffix=.2 --backup \
  --incremental-basedir="$W/full" --target-dir="$W/inc"
sb_checksums src > "$W/src.sum"
# innodb_force_recovery from backup-my.cnf's [mysqld] (2 acts as 1), and the command line's 0 over it.
printf 'innodb_force_recovery=2\n' >> "$W/full/backup-my.cnf"
expect_rc 0 prep-full "$MB" --defaults-file="$W/full/backup-my.cnf" --prepare --target-dir="$W/full"
assert_contains "$W/prep-full.log" "Last binlog file \./.*, position [0-9]+"
assert_contains "$W/prep-full.log" "^\[00\] [0-9-]+ [0-9:]+ innodb_force_recovery = 1: .*\(2 asked for"
assert_file "$W/full/xtrabackup_binlog_pos_innodb"
expect_rc 0 prep-inc "$MB" --defaults-file="$W/full/backup-my.cnf" --innodb-force-recovery=0 --prepare \
  --target-dir="$W/full" --incremental-dir="$W/inc"
! grep -q "innodb_force_recovery = " "$W/prep-inc.log" || fail "--innodb-force-recovery=0 did not override backup-my.cnf"
[ ! -e "$W/full/dropme" ] || fail "the dropped database came back at prepare"
assert_dir "$W/full/newdb"
assert_dir "$W/full/emptydb"
copy_back_start chain "$W/full"
sb_checksums dst > "$W/dst.sum"
sb_compare_checksums "$W/src.sum" "$W/dst.sum" || fail "restored chain differs from the source"
assert_eq "" "$(sb_sql dst "SHOW DATABASES LIKE 'dropme'")" "dropme after restore"
assert_eq "emptydb" "$(sb_sql dst "SHOW DATABASES LIKE 'emptydb'")" "emptydb after restore"
sb_stop dst

step "--history under mariabackup's name: tool_name mariabackup, an empty name"
assert_eq "mariabackup|" "$(sb_sql src "SELECT CONCAT(tool_name, '|', name) FROM mysql.mariadb_backup_history ORDER BY start_time LIMIT 1")"

step "--decompress refuses qpress files, before decompressing anything"
mkdir -p "$W/qp" && echo x > "$W/qp/t.qp"
expect_rc 1 qpress "$XBAK" --decompress --target-dir="$W/qp"
assert_contains "$W/qpress.log" "qpress"

step "--copy-back: --aria-log-dir-path, --innodb-data-file-path, --innodb-undo-directory=./"
expect_rc 0 places "$XBAK" --copy-back --no-defaults --target-dir="$W/ibx" --datadir="$W/cb/data" \
  --aria-log-dir-path="$W/cb/aria" --innodb-undo-directory=./ \
  --innodb-data-file-path="$W/cb/sys/ibdata1:12M:autoextend"
assert_file "$W/cb/aria/aria_log_control"
[ ! -e "$W/cb/data/aria_log_control" ] || fail "aria_log_control in the datadir"
assert_file "$W/cb/sys/ibdata1"
[ ! -e "$W/cb/data/ibdata1" ] || fail "ibdata1 in the datadir"
assert_file "$W/cb/data/ib_logfile0"
echo "t_mariabackup_compat: all steps passed"
