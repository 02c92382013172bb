#!/usr/bin/env bash
# --no-lock: a backup by a user without RELOAD and PROCESS (mariabackup's backup_grants).
#  - without --no-lock that user is refused before anything is copied, each missing privilege named
#    in mariabackup's words with the user's SHOW GRANTS (its password hash hidden);
#  - with --no-lock, under sysbench writes: the InnoDB tables restore consistent (sysbench's row
#    counts), no xtrabackup_binlog_info is written (no position matches the data without locks), and
#    --prepare gives the one InnoDB recorded;
#  - DDL during a --no-lock backup fails it, whether the redo log shows it (CREATE/DROP TABLE) or
#    only a table definition file does (ALTER TABLE ... COMMENT changes the .frm alone), and the
#    failed backup is never one that looks complete;
#  - the restored server rolls back what was prepared and not committed (--tc-heuristic-recover);
#  - a --no-lock incremental on a locked full: the prepared chain gives InnoDB's position (the same
#    as mariabackup's), never the full's older one.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_mariabackup

TABLES=2
ROWS=5000
src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK

step "source with a backup user that has no privilege at all"
sb_init src "$src_port"
sb_start src
# No sample data: its CSV and MyISAM tables are open in the server, and a copy taken without
# FLUSH TABLES (which needs RELOAD) restores them marked as crashed, as --no-lock warns.
sb_load_sysbench src $TABLES $ROWS
sb_sql src "CREATE USER nolock@localhost IDENTIFIED BY 'nolock-pw-7431'; CREATE DATABASE nl; CREATE TABLE nl.frm_only (i INT) ENGINE=InnoDB"
hash=$(sb_sql src "SELECT authentication_string FROM mysql.user WHERE user = 'nolock'")
cat > "$W/nolock.cnf" <<CNF
[client]
user=nolock
password=nolock-pw-7431
socket=$(sb_socket src)
CNF
chmod 600 "$W/nolock.cnf"

step "without --no-lock: refused, each missing privilege named"
rc=0
"$XBAK" --defaults-file="$W/nolock.cnf" --backup --target-dir="$W/refused" 2> "$W/refused.log" || rc=$?
assert_eq 1 "$rc" "exit status without RELOAD"
assert_contains "$W/refused.log" 'missing required privilege RELOAD on \*\.\*'
assert_contains "$W/refused.log" 'missing required privilege PROCESS on \*\.\*'
assert_contains "$W/refused.log" 'GRANT USAGE ON \*\.\* TO `nolock`@`localhost`'
! grep -qF -- "$hash" "$W/refused.log" || fail "the password hash is in the log"
! grep -qF nolock-pw-7431 "$W/refused.log" || fail "the password is in the log"
[ ! -e "$W/refused/${META}checkpoints" ] || fail "a refused backup wrote a checkpoints file"

step "--no-lock under sysbench writes"
sb_sysbench src oltp_write_only --tables=$TABLES --table-size=$ROWS --threads=2 --time=300 \
  run > "$W/sysbench.log" 2>&1 &
sbpid=$!
sleep 2
bk=$W/backup
xbak --defaults-file="$W/nolock.cnf" --backup --no-lock --parallel=2 --target-dir="$bk" 2> "$W/backup.log" ||
  { tail -n 20 "$W/backup.log" >&2; fail "xbak --backup --no-lock failed"; }
kill "$sbpid" 2> /dev/null || true
wait "$sbpid" 2> /dev/null || true
assert_contains "$W/backup.log" 'no BACKUP STAGE lock is taken'
! grep -q 'BACKUP STAGE END' "$W/backup.log" || fail "--no-lock took BACKUP STAGE locks"
[ ! -e "$bk/${META}binlog_info" ] || fail "--no-lock wrote a binary log position"
# mariabackup --prepare of the same backup reports the position InnoDB recorded: xbak's must match.
cp -a "$bk" "$W/backup-mb"
mariabackup --prepare --target-dir="$W/backup-mb" > "$W/mb-prepare.log" 2>&1 ||
  { tail -n 20 "$W/mb-prepare.log" >&2; fail "mariabackup --prepare failed"; }
prepare_backup nolock "$bk"
assert_file "$bk/xtrabackup_binlog_pos_innodb" "--prepare's binlog position from InnoDB"
# (mariabackup says it twice, once with the file name quoted)
mb_pos=$(grep -o 'Last binlog file .*, position [0-9]*' "$W/mb-prepare.log" | tr -d "'" | tail -n 1)
xb_pos=$(grep -o 'Last binlog file .*, position [0-9]*' "$W/nolock-prepare.log")
[ -n "$mb_pos" ] || fail "mariabackup --prepare named no binlog position"
assert_eq "$mb_pos" "$xb_pos" "the binlog position InnoDB recorded"
rm -rf "$W/backup-mb"
# A transaction prepared but not committed at the backup's end (the binary log's two-phase commit;
# without BLOCK_COMMIT nothing stops one) is rolled back once, as after mariabackup --no-lock: the
# server's own --tc-heuristic-recover, which exits when done. Its events come after the recorded
# position, so a replica started there replays it.
rm -rf "$W/dst"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$bk" 2> "$W/nolock-copyback.log" ||
  { tail -n 20 "$W/nolock-copyback.log" >&2; fail "xbak --copy-back failed"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
mariadbd --defaults-file="$(sb_cnf dst)" --tc-heuristic-recover=ROLLBACK > "$W/heuristic.log" 2>&1 || true
sb_start dst
sb_check_all dst
check_rows dst nolock $TABLES $ROWS
sb_stop dst

step "a --no-lock incremental on a locked full: the chain's binlog position is InnoDB's, not the full's"
xbak --defaults-file="$(sb_cnf src)" --backup --target-dir="$W/full2" 2> "$W/full2.log" ||
  { tail -n 20 "$W/full2.log" >&2; fail "the locked full backup failed"; }
assert_file "$W/full2/${META}binlog_info"
sb_sysbench src oltp_write_only --tables=$TABLES --table-size=$ROWS --threads=1 --time=2 run > /dev/null 2>&1
xbak --defaults-file="$W/nolock.cnf" --backup --no-lock --incremental-basedir="$W/full2" --target-dir="$W/inc2" \
  2> "$W/inc2.log" || { tail -n 20 "$W/inc2.log" >&2; fail "the --no-lock incremental failed"; }
cp -a "$W/full2" "$W/full2-mb"
mariabackup --prepare --target-dir="$W/full2-mb" > "$W/mb2-full.log" 2>&1 || fail "mariabackup --prepare (full) failed"
mariabackup --prepare --target-dir="$W/full2-mb" --incremental-dir="$W/inc2" > "$W/mb2-inc.log" 2>&1 ||
  { tail -n 20 "$W/mb2-inc.log" >&2; fail "mariabackup --prepare --incremental-dir failed"; }
"$XBAK" --prepare --target-dir="$W/full2" 2> "$W/xb2-full.log" || fail "xbak --prepare (full) failed"
"$XBAK" --prepare --target-dir="$W/full2" --incremental-dir="$W/inc2" 2> "$W/xb2-inc.log" ||
  { tail -n 20 "$W/xb2-inc.log" >&2; fail "xbak --prepare --incremental-dir failed"; }
[ ! -e "$W/full2/${META}binlog_info" ] || fail "the full's binlog position outlived a --no-lock incremental"
mb_pos=$(grep -o 'Last binlog file .*, position [0-9]*' "$W/mb2-inc.log" | tr -d "'" | tail -n 1)
xb_pos=$(grep -o 'Last binlog file .*, position [0-9]*' "$W/xb2-inc.log" | tail -n 1)
[ -n "$mb_pos" ] || fail "mariabackup --prepare --incremental-dir named no binlog position"
assert_eq "$mb_pos" "$xb_pos" "the chain's binlog position"
rm -rf "$W/full2" "$W/full2-mb" "$W/inc2"

# ddl_until_stopped SQL : runs SQL in a server-side loop (one connection, so DDL follows DDL without
# a client's start-up between them) until nl.stop_ddl has a row.
sb_sql src "CREATE TABLE nl.stop_ddl (i INT) ENGINE=InnoDB"
ddl_until_stopped() {
  sb_sql src "DELETE FROM nl.stop_ddl"
  printf 'DELIMITER //\nBEGIN NOT ATOMIC DECLARE n INT DEFAULT 0;
    WHILE (SELECT COUNT(*) FROM nl.stop_ddl) = 0 DO SET n = n + 1; %s; DO SLEEP(0.002); END WHILE; END//\n' \
    "$1" | sb_sql src &
  ddl_pid=$!
  sleep 1
}
ddl_stop() {
  sb_sql src "INSERT INTO nl.stop_ddl VALUES (1)"
  wait "$ddl_pid" || fail "the DDL loop failed"
}
# nolock_fails LABEL PATTERN : a --no-lock backup fails, naming the DDL (PATTERN), and leaves no
# checkpoints file
nolock_fails() {
  local rc=0
  "$XBAK" --defaults-file="$W/nolock.cnf" --backup --no-lock --target-dir="$W/$1" 2> "$W/$1.log" || rc=$?
  assert_eq 1 "$rc" "$1: exit status"
  assert_contains "$W/$1.log" 'DDL ran during a --no-lock backup'
  assert_contains "$W/$1.log" "$2"
  [ ! -e "$W/$1/${META}checkpoints" ] || fail "$1: the failed backup has a checkpoints file"
}

step "CREATE and DROP TABLE during a --no-lock backup fail it"
ddl_until_stopped "CREATE TABLE nl.ddl_t (i INT) ENGINE=InnoDB; DROP TABLE nl.ddl_t"
nolock_fails ddl_create 'ddl_t'
ddl_stop

step "ALTER TABLE ... COMMENT (the .frm only) during a --no-lock backup fails it"
ddl_until_stopped "EXECUTE IMMEDIATE CONCAT('ALTER TABLE nl.frm_only COMMENT=''', n, '''')"
nolock_fails ddl_frm 'frm_only|#sql-alter'
ddl_stop
sb_stop src
