#!/usr/bin/env bash
# Issue "hot full backup", done-when 2: sysbench oltp_write_only writes to the source for the whole
# backup. The copy, prepared by mariabackup --prepare and restored by xbak --copy-back, must start,
# pass CHECK TABLE, and keep sysbench's invariant: oltp_write_only deletes and re-inserts the same
# id in one transaction, so every table has exactly its initial row count at any commit point.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

TABLES=4
ROWS=20000
src_port=$(alloc_port)
dst_port=$(alloc_port)
bk="$TEST_WORK/backup"

step "start source (small 32 MiB redo log, so the log wraps during the backup) and load sysbench"
sb_init src "$src_port" "innodb_log_file_size=32M"
sb_start src
sb_load_sample src
sb_load_sysbench src $TABLES $ROWS

step "sysbench oltp_write_only in the background"
sb_sysbench src oltp_write_only --tables=$TABLES --table-size=$ROWS --threads=2 --time=300 \
  --report-interval=5 run > "$TEST_WORK/sysbench.log" 2>&1 &
sbpid=$!
trap_kill_sysbench() { kill "$sbpid" 2> /dev/null || true; wait "$sbpid" 2> /dev/null || true; }
sleep 3
kill -0 "$sbpid" || { cat "$TEST_WORK/sysbench.log"; fail "sysbench did not start"; }
lsn0=$(sb_sql src "SHOW ENGINE INNODB STATUS" | grep -o 'Log sequence number [0-9]*' | grep -o '[0-9]*$')

step "xbak --backup under load"
if ! xbak --backup --defaults-file="$(sb_cnf src)" --parallel=2 --target-dir="$bk" 2> "$TEST_WORK/backup.log"; then
  trap_kill_sysbench; tail -n 30 "$TEST_WORK/backup.log" >&2; fail "xbak --backup failed under load"
fi
sleep 2
kill -0 "$sbpid" || { cat "$TEST_WORK/sysbench.log"; fail "sysbench stopped during the backup"; }
trap_kill_sysbench
grep -E "redo log copied" "$TEST_WORK/backup.log" || true
first=$(grep -o 'from LSN [0-9]*' "$TEST_WORK/backup.log" | tail -1 | grep -o '[0-9]*')
last=$(grep -o '^last_lsn = [0-9]*' "$bk/${META}checkpoints" | grep -o '[0-9]*')
echo "redo copied: $first -> $last ($(( (last - first) / 1024 )) KiB); server LSN at load start $lsn0"
[ "$last" -gt "$lsn0" ] || fail "the backup's last_lsn $last is not past the LSN $lsn0 seen under load"

step "mariabackup --prepare"
mariabackup --no-defaults --prepare --target-dir="$bk" > "$TEST_WORK/prepare.log" 2>&1 ||
  { tail -n 40 "$TEST_WORK/prepare.log" >&2; fail "mariabackup --prepare failed"; }
assert_contains "$TEST_WORK/prepare.log" 'completed OK!'

step "restore, start, verify"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/dst/data"
xbak --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$bk" 2> "$TEST_WORK/copyback.log" ||
  { tail -n 20 "$TEST_WORK/copyback.log" >&2; fail "xbak --copy-back failed"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$(sb_datadir dst)"; fi
sb_start dst
sb_check_all dst
for i in $(seq 1 $TABLES); do
  n=$(sb_sql dst "SELECT COUNT(*) FROM sbtest.sbtest$i")
  assert_eq "$ROWS" "$n" "rows in sbtest$i"
done
echo "all $TABLES sysbench tables have exactly $ROWS rows"
sb_stop dst
sb_stop src
