#!/usr/bin/env bash
# Issue "hot full backup", done-when 1: an idle server with several schemas (InnoDB in every row
# format, partitions, Aria, MyISAM, CSV, views, triggers, routines) and 300 small tables created
# just before the backup (many still have no page 0 on disk). xbak --backup, then
# mariabackup --prepare, then xbak --copy-back into a new datadir; a second mariadbd starts on it,
# CHECK TABLE passes and CHECKSUM TABLE equals the source for every table.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

src_port=$(alloc_port)
dst_port=$(alloc_port)
bk="$TEST_WORK/backup"

step "start source and load data"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
sb_load_many src 300
sb_checksums src > "$TEST_WORK/src.sum"
sb_sql src "SHOW MASTER STATUS" > "$TEST_WORK/master.txt"

step "xbak --backup (parallel 2)"
xbak --backup --defaults-file="$(sb_cnf src)" --parallel=2 --target-dir="$bk" 2> "$TEST_WORK/backup.log" ||
  { tail -n 30 "$TEST_WORK/backup.log" >&2; fail "xbak --backup failed"; }
assert_contains "$TEST_WORK/backup.log" "backup complete" "backup log"
assert_contains "$bk/${META}checkpoints" '^backup_type = full-backuped$'
assert_contains "$bk/${META}checkpoints" '^last_lsn = [0-9]+$'
assert_file "$bk/backup-my.cnf"
assert_file "$bk/${META}info"
assert_file "$bk/ib_logfile0"
assert_file "$bk/xs_engines/t_csv.CSV"
# The binlog position is the one the server reported (it was idle).
read -r bfile bpos _ < "$TEST_WORK/master.txt"
assert_contains "$bk/${META}binlog_info" "^$bfile	$bpos	" "binlog info"
# Nothing in the backup is world-readable.
if find "$bk" -perm -o=r | grep -q .; then fail "world-readable files in the backup"; fi

step "the backup cannot be restored before it is prepared"
if "$XBAK" --copy-back --target-dir="$bk" --datadir="$TEST_WORK/never" 2> "$TEST_WORK/cb0.log"; then
  fail "copy-back of an unprepared backup succeeded"
fi
assert_contains "$TEST_WORK/cb0.log" "not prepared"
[ ! -e "$TEST_WORK/never/ibdata1" ] || fail "copy-back wrote files for an unprepared backup"

step "mariabackup --prepare accepts xbak's backup"
mariabackup --no-defaults --prepare --target-dir="$bk" > "$TEST_WORK/prepare.log" 2>&1 ||
  { tail -n 40 "$TEST_WORK/prepare.log" >&2; fail "mariabackup --prepare failed"; }
assert_contains "$TEST_WORK/prepare.log" 'completed OK!'
assert_contains "$bk/${META}checkpoints" '^backup_type = log-applied$'

step "xbak --copy-back into a new datadir (parallel 2)"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/dst/data"
xbak --copy-back --defaults-file="$(sb_cnf dst)" --parallel=2 --target-dir="$bk" 2> "$TEST_WORK/copyback.log" ||
  { tail -n 20 "$TEST_WORK/copyback.log" >&2; fail "xbak --copy-back failed"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$(sb_datadir dst)"; fi

step "a second copy-back into the now non-empty datadir is refused"
if "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$bk" 2> "$TEST_WORK/cb2.log"; then
  fail "copy-back into a non-empty datadir succeeded"
fi
assert_contains "$TEST_WORK/cb2.log" "not empty"

step "start the restored server and verify"
sb_start dst
sb_check_all dst
sb_checksums dst > "$TEST_WORK/dst.sum"
sb_compare_checksums "$TEST_WORK/src.sum" "$TEST_WORK/dst.sum" || fail "restored data differs from the source"
echo "verified $(wc -l < "$TEST_WORK/src.sum") tables"
sb_stop dst
sb_stop src
