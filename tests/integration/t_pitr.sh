#!/usr/bin/env bash
# Issue 24: point-in-time recovery end to end, against real servers and MinIO.
#   A server under sysbench write load and a ledger workload (one transaction per sequence
#   number, committed in order), binlogs rotating every 64 KiB, DDL, CREATE USER and GRANT, and a transaction larger than
#   max_binlog_size in the binlog, gtid_strict_mode=ON; binlog-push running as a service; a full
#   backup and an incremental put to MinIO while it writes; then two minutes more writes (PITR_WRITE_SECS).
#   `xbcloud restore` to (a) a time in the middle, (b) a GTID, (c) the latest archived event: each
#   restored server holds exactly the ledger up to the target (no gap, nothing after), passes
#   CHECK TABLE, and every table's checksum equals a reference replica's stopped at the same GTID
#   by the server's own replication (START SLAVE UNTIL master_gtid_pos). Targets it cannot reach
#   are refused. PITR_BINLOG_FORMAT=ROW|STATEMENT|MIXED (default ROW).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud

format=${PITR_BINLOG_FORMAT:-ROW}
src_port=$(alloc_port)
rep_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-pitr

step "MinIO; a server ($format binlogs of 64 KiB, gtid_strict_mode) with sysbench tables and a ledger"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
sb_init src "$src_port" "max_binlog_size=65536" "binlog_format=$format" "gtid_strict_mode=ON" "gtid_domain_id=0"
sb_start src
cnf=$(sb_cnf src)
sb_sql src "CREATE DATABASE ledger;
  CREATE TABLE ledger.t (seq INT PRIMARY KEY, ts DATETIME NOT NULL, pad VARCHAR(100)) ENGINE=InnoDB;
  CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl-pw'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'"
sb_load_sysbench src 4 2000
index=$(sb_sql src "SELECT @@log_bin_index" | tail -n 1)
server_id=$(sb_sql src "SELECT @@server_id" | tail -n 1)
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)

step "binlog-push as a service (--max-lag=1); sysbench and the ledger writing"
"$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$index" --server-id="$server_id" --max-lag=1 host1 \
  2> "$TEST_WORK/push.log" &
push_pid=$!
stop_file=$TEST_WORK/stop-writing
# The ledger: one row per transaction, in order, with the GTID the server gave it.
ledger() {
  local i=0
  while [ ! -e "$stop_file" ]; do
    i=$((i + 1))
    sb_sql src "INSERT INTO ledger.t VALUES ($i, NOW(), REPEAT('l', 100)); SELECT @@last_gtid" | tail -n 1 |
      sed "s/^/$i /" >> "$TEST_WORK/ledger.gtids"
    sleep 0.02
  done
}
ledger &
ledger_pid=$!
sb_sysbench src oltp_write_only --tables=4 --table-size=2000 --threads=2 --time=$((${PITR_WRITE_SECS:-120} + 15)) --rate=40 \
  --report-interval=0 run > "$TEST_WORK/sysbench.log" 2>&1 &
sysbench_pid=$!
sleep 3

backup() { # NAME [--incremental-basedir=DIR]
  local name=$1
  "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --extra-lsndir="$TEST_WORK/lsn-$name" \
    "${@:2}" 2> "$TEST_WORK/b-$name.log" |
    "$XBCLOUD" put "${S3[@]}" --parallel=4 "host1/$name" 2> "$TEST_WORK/put-$name.log" ||
    { cat "$TEST_WORK/b-$name.log" "$TEST_WORK/put-$name.log" >&2; fail "backup | xbcloud put host1/$name"; }
}
step "a full backup, DDL and a transaction larger than max_binlog_size, an incremental, more writes"
backup full
sleep 2
sb_sql src "CREATE TABLE ledger.big (id INT PRIMARY KEY, b VARCHAR(1000)) ENGINE=InnoDB;
  ALTER TABLE sbtest.sbtest2 ADD COLUMN extra INT NOT NULL DEFAULT 7;
  START TRANSACTION; INSERT INTO ledger.big SELECT seq, REPEAT('b', 1000) FROM sbtest.seq_1_to_300; COMMIT"
sleep 2
backup inc1 --incremental-basedir="$TEST_WORK/lsn-full"
inc_seq=$(sb_sql src "SELECT MAX(seq) FROM ledger.t" | tail -n 1)
sleep 3
sb_sql src "RENAME TABLE ledger.big TO ledger.big2; DROP TABLE sbtest.sbtest4;
  CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app-pw'; GRANT SELECT ON ledger.* TO 'app'@'127.0.0.1'"
# Writes after the last backup, archived as they go: PITR_WRITE_SECS (default 120; the STATEMENT and
# MIXED runs, 15).
sleep "${PITR_WRITE_SECS:-120}"
touch "$stop_file"
wait "$ledger_pid"
wait "$sysbench_pid" || true
kill "$sysbench_pid" 2> /dev/null || true
final=$(sb_sql src "SELECT @@gtid_binlog_pos" | tail -n 1)
files=$(wc -l < "$index")
rows=$(sb_sql src "SELECT COUNT(*) FROM ledger.t" | tail -n 1)
echo "ledger: $rows rows; binlog: $files files; GTID $final"
[ "$files" -ge 5 ] || fail "expected the binlog to rotate several times, it has $files files"
[ "$rows" -ge 100 ] || fail "expected at least 100 ledger rows, the server has $rows"
# Let the service archive the last writes (a pass begins after them), then stop it.
sleep 3
kill -TERM "$push_pid"
wait "$push_pid" || { cat "$TEST_WORK/push.log" >&2; fail "binlog-push service exited with an error"; }
"$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$index" --server-id="$server_id" --once host1 \
  2>> "$TEST_WORK/push.log" || { cat "$TEST_WORK/push.log" >&2; fail "binlog-push --once"; }

# The reference: the full backup restored and replicating from the source, stopped at each target's
# GTID by the server's own replication.
step "the reference replica: the full backup, replicating from the source"
"$XBCLOUD" get "${S3[@]}" host1/full > "$TEST_WORK/full.xbs" 2> "$TEST_WORK/get-full.log" ||
  { cat "$TEST_WORK/get-full.log" >&2; fail "xbcloud get host1/full"; }
mkdir -p "$TEST_WORK/full"
"$XBAK" --extract -C "$TEST_WORK/full" < "$TEST_WORK/full.xbs" 2> "$TEST_WORK/extract.log" ||
  { cat "$TEST_WORK/extract.log" >&2; fail "extract the full backup"; }
full_gtid=$(cut -f3 "$TEST_WORK/full/${META}binlog_info")
"$XBAK" --restore --target-dir="$TEST_WORK/full" --datadir="$TEST_WORK/rep-data" 2> "$TEST_WORK/rep-restore.log" ||
  { cat "$TEST_WORK/rep-restore.log" >&2; fail "restore of the reference replica"; }
_sb_chown "$TEST_WORK/rep-data"
sb_init_from_datadir rep "$rep_port" "$TEST_WORK/rep-data" "skip-slave-start" "skip-log-bin"
sb_start rep
sb_sql rep "SET GLOBAL gtid_slave_pos = '$full_gtid';
  CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$src_port, MASTER_USER='repl', MASTER_PASSWORD='repl-pw',
  MASTER_USE_GTID=slave_pos"
replica_until() { # GTID_POS: the replica applies up to there and stops
  sb_sql rep "START SLAVE UNTIL master_gtid_pos = '$1'"
  local r; r=$(sb_sql rep "SELECT MASTER_GTID_WAIT('$1', 300)" | tail -n 1)
  [ "$r" = 0 ] || fail "the reference replica did not reach $1 within 300 s"
  sb_sql rep "STOP SLAVE"
  local err; err=$(sb_sql rep "SHOW SLAVE STATUS\G" | awk -F': ' '/Last_SQL_Error:/ {print $2}')
  [ -z "$err" ] || fail "reference replica: $err"
  assert_eq "$1" "$(sb_sql rep "SELECT @@gtid_slave_pos" | tail -n 1)" "reference replica stopped at the target"
}

ledger_check() { # NAME SEQ: the server holds ledger rows 1..SEQ exactly
  local got; got=$(sb_sql "$1" "SELECT COUNT(*), COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM ledger.t" | tail -n 1)
  assert_eq "$(printf '%s\t%s\t%s' "$2" "$([ "$2" = 0 ] && echo 0 || echo 1)" "$2")" "$got" \
    "$1: the ledger is rows 1..$2, no gap and nothing after"
}

# restore_to TAG EXPECTED_SEQ TARGET-OPTIONS...: xbcloud restore, then the restored server checked
restore_to() {
  local tag=$1 want=$2; shift 2
  local dir=$TEST_WORK/r-$tag start=()
  step "xbcloud restore $* (expected ledger 1..$want)"
  # --latest also starts the server itself (--start-server), with the my.cnf it is then run with.
  if [ "$tag" = latest ]; then
    sb_init_from_datadir "d-$tag" "$dst_port" "$dir" "skip-slave-start"
    start=(--start-server --mysqld-defaults-file="$(sb_cnf "d-$tag")")
    printf '%s\n' "$XBAK_WORK/d-$tag" >> "$SB_REGISTRY"  # stopped by the sandbox's exit trap on failure
  fi
  "$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$dir" "${start[@]}" "$@" host1 \
    2> "$TEST_WORK/restore-$tag.log" || { cat "$TEST_WORK/restore-$tag.log" >&2; fail "xbcloud restore $*"; }
  grep -E "restoring to|transactions to replay|restored |server is running" "$TEST_WORK/restore-$tag.log" || true
  [ ! -e "$dir/xbak_restore_in_progress" ] || fail "the journal is still in $dir"
  [ ! -e "$dir/xbak-replay" ] || fail "the replay's work directory is still in $dir"
  if [ "$tag" = latest ]; then
    sb_running "d-$tag" || fail "--start-server: no server running on $dir"
  else
    _sb_chown "$dir"
    sb_init_from_datadir "d-$tag" "$dst_port" "$dir" "skip-slave-start"
    sb_start "d-$tag"
  fi
  ledger_check "d-$tag" "$want"
  local pos; pos=$(sb_sql "d-$tag" "SELECT @@gtid_slave_pos" | tail -n 1)
  sb_wait_rollback "d-$tag"
  sb_check_all "d-$tag" > "$TEST_WORK/check-$tag.log" || { cat "$TEST_WORK/check-$tag.log" >&2; fail "CHECK TABLE on d-$tag"; }
  sb_checksums "d-$tag" > "$TEST_WORK/sum-$tag"
  sb_stop "d-$tag"
  replica_until "$pos"
  sb_checksums rep > "$TEST_WORK/sum-rep-$tag"
  sb_compare_checksums "$TEST_WORK/sum-rep-$tag" "$TEST_WORK/sum-$tag" || fail "$tag: restored != reference replica at $pos"
  echo "$tag: GTID $pos, ledger 1..$want, checksums equal to the reference replica's"
}

# (b) a GTID about 40% into the ledger written after the incremental; (a) the time of a row
# about 70% in; (c) everything. In increasing order: the replica only goes forward.
gtid_seq=$((inc_seq + (rows - inc_seq) * 4 / 10))
gtid=$(awk -v s="$gtid_seq" '$1 == s {print $2}' "$TEST_WORK/ledger.gtids")
[ -n "$gtid" ] || fail "no GTID recorded for ledger row $gtid_seq"
restore_to gtid "$gtid_seq" --to-gtid="$gtid"

time_seq=$((inc_seq + (rows - inc_seq) * 7 / 10))
when=$(sb_sql src "SELECT ts FROM ledger.t WHERE seq = $time_seq" | tail -n 1)
time_want=$(sb_sql src "SELECT MAX(seq) FROM ledger.t WHERE ts <= '$when'" | tail -n 1)
restore_to time "$time_want" --to-time="$when"

restore_to latest "$rows" --latest
assert_eq "$final" "$(sb_sql rep "SELECT @@gtid_slave_pos" | tail -n 1)" "--latest reached the source's last GTID"

step "--restore-dry-run says what it would use and writes nothing"
"$XBCLOUD" restore "${S3[@]}" --to-gtid="$gtid" --restore-dry-run host1 > /dev/null 2> "$TEST_WORK/dry.log" ||
  { cat "$TEST_WORK/dry.log" >&2; fail "restore --restore-dry-run"; }
assert_contains "$TEST_WORK/dry.log" "from host1/full \\(full\\), host1/inc1 \\(incremental\\), then the binary logs from" "dry run"

step "targets that cannot be reached are refused"
refused() { # TAG REGEX OPTIONS...
  local tag=$1 re=$2; shift 2
  if "$XBCLOUD" restore "${S3[@]}" --datadir="$TEST_WORK/no-$tag" "$@" host1 2> "$TEST_WORK/no-$tag.log"; then
    fail "xbcloud restore $* should have failed"
  fi
  assert_contains "$TEST_WORK/no-$tag.log" "$re" "restore $*"
}
refused gtid "is not in the archive" --to-gtid="0-$server_id-999999999"
refused time "cannot reach" --to-time="$(date -d '+1 day' '+%Y-%m-%d %H:%M:%S')"
refused before "no complete backup under host1/ was taken before" --to-time="2001-01-01 00:00:00"
refused usage "exactly one target" --latest --to-gtid="$gtid"
printf '[mysqld]\nreplicate-do-db=ledger\n' > "$TEST_WORK/filtered.cnf"
refused filters "sets --replicate-do-db=ledger" --latest --mysqld-defaults-file="$TEST_WORK/filtered.cnf"
[ ! -e "$TEST_WORK/no-filters" ] || fail "a refused restore wrote into its datadir"
echo "PASS"
