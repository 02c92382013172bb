#!/usr/bin/env bash
# Issue 24, done-when 2: point-in-time recovery through faults, against real servers and MinIO.
#   - MinIO stopped for a while and started again while binlog-push runs as a service: it reports
#     the failed passes and catches up, nothing lost;
#   - a switchover: the primary (A) goes away, its replica (B, log_slave_updates) is promoted and
#     takes the writes; both archived under their own server ids; restore --latest and restore to
#     a GTID written on B after the switch hold exactly the ledger up to there, and --latest equals
#     B itself table for table;
#   - xbcloud restore killed with SIGKILL at random moments: the datadir is left unfinished (the
#     server refuses it) and the same command run again finishes it;
#   - a damaged binlog segment in the store: restore fails naming the object, non-zero exit, the
#     datadir left unfinished.
# (A gap, a GTID that is not archived, a time past the archive: t_pitr.sh and the pitr unit tests.)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud

a_port=$(alloc_port)
b_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-pitr-faults
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)

step "MinIO; primary A and its replica B (both with binlogs of 64 KiB and log_slave_updates)"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
common=("max_binlog_size=65536" "log_slave_updates=ON" "gtid_strict_mode=ON")
sb_init a "$a_port" "${common[@]}"
sb_init b "$b_port" "${common[@]}" "skip-slave-start"
sb_start a
sb_start b
sb_sql a "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl-pw'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';
  CREATE DATABASE ledger; CREATE TABLE ledger.t (seq INT PRIMARY KEY, ts DATETIME NOT NULL, who CHAR(1)) ENGINE=InnoDB"
# B replicates A from A's first binlog on: it holds A's whole history (the repl user too).
sb_sql b "RESET MASTER; SET GLOBAL gtid_slave_pos = '';
  CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$a_port, MASTER_USER='repl', MASTER_PASSWORD='repl-pw',
  MASTER_USE_GTID=slave_pos; START SLAVE"
sb_load_sysbench a 2 1000
cnf_a=$(sb_cnf a)
idx_a=$(sb_sql a "SELECT @@log_bin_index" | tail -n 1)
idx_b=$(sb_sql b "SELECT @@log_bin_index" | tail -n 1)

push_service() { # NAME INDEX SERVER_ID
  "$XBCLOUD" binlog-push "${S3[@]}" --max-retries=1 --binlog-index="$2" --server-id="$3" --max-lag=1 host1 \
    2>> "$TEST_WORK/push-$1.log" &
}
push_service a "$idx_a" "$a_port"
push_a=$!
push_service b "$idx_b" "$b_port"
push_b=$!

seq=0
ledger() { # SERVER N: N ledger rows, one transaction each
  local i
  for i in $(seq 1 "$2"); do
    seq=$((seq + 1))
    sb_sql "$1" "INSERT INTO ledger.t VALUES ($seq, NOW(), '$1'); SELECT @@last_gtid" | tail -n 1 |
      sed "s/^/$seq /" >> "$TEST_WORK/ledger.gtids"
  done
}

step "writes on A, a full backup, MinIO down for 4 s while binlog-push runs"
ledger a 40
"$XBAK" --backup --defaults-file="$cnf_a" --parallel=2 --stream=xbstream 2> "$TEST_WORK/b-full.log" |
  "$XBCLOUD" put "${S3[@]}" --parallel=4 host1/full 2> "$TEST_WORK/put-full.log" ||
  { cat "$TEST_WORK/b-full.log" "$TEST_WORK/put-full.log" >&2; fail "backup | xbcloud put host1/full"; }
ledger a 40
os_minio_stop "$s3_port" "$TEST_WORK/minio"
ledger a 60
sleep 4
os_minio_start "$s3_port" "$TEST_WORK/minio"
ledger a 40
kill -0 "$push_a" || fail "binlog-push (A) exited while MinIO was down"
grep -q " ERROR: binlog-push host1: " "$TEST_WORK/push-a.log" || fail "binlog-push (A) did not report the failed passes"

step "switchover: B catches up and is promoted, A goes away; writes on B"
a_pos=$(sb_sql a "SELECT @@gtid_binlog_pos" | tail -n 1)
[ "$(sb_sql b "SELECT MASTER_GTID_WAIT('$a_pos', 120)" | tail -n 1)" = 0 ] || fail "B did not catch up with A ($a_pos)"
sleep 3  # A's service archives its last writes
kill -TERM "$push_a"
wait "$push_a" || true
"$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$idx_a" --server-id="$a_port" --once host1 2>> "$TEST_WORK/push-a.log" ||
  { cat "$TEST_WORK/push-a.log" >&2; fail "binlog-push --once (A) after MinIO came back"; }
sb_stop a
sb_sql b "STOP SLAVE; RESET SLAVE ALL"
switch_seq=$seq
ledger b 80
final_b=$(sb_sql b "SELECT @@gtid_binlog_pos" | tail -n 1)
sleep 3
kill -TERM "$push_b"
wait "$push_b" || true
"$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$idx_b" --server-id="$b_port" --once host1 2>> "$TEST_WORK/push-b.log" ||
  { cat "$TEST_WORK/push-b.log" >&2; fail "binlog-push --once (B)"; }
echo "ledger: 1..$seq (1..$switch_seq on A); B at $final_b"

ledger_check() { # NAME SEQ
  local got; got=$(sb_sql "$1" "SELECT COUNT(*), MIN(seq), MAX(seq) FROM ledger.t" | tail -n 1)
  assert_eq "$(printf '%s\t1\t%s' "$2" "$2")" "$got" "$1: the ledger is rows 1..$2, no gap and nothing after"
}
start_restored() { # TAG DIR
  _sb_chown "$2"
  sb_init_from_datadir "d-$1" "$dst_port" "$2" "skip-slave-start"
  sb_start "d-$1"
}

step "restore --latest across the switchover: the ledger whole, every table equal to B's"
"$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$TEST_WORK/r-latest" --latest host1 \
  2> "$TEST_WORK/restore-latest.log" || { cat "$TEST_WORK/restore-latest.log" >&2; fail "restore --latest"; }
grep -q "a switchover" "$TEST_WORK/restore-latest.log" || fail "restore --latest did not follow the switchover"
start_restored latest "$TEST_WORK/r-latest"
ledger_check d-latest "$seq"
assert_eq "$final_b" "$(sb_sql d-latest "SELECT @@gtid_slave_pos" | tail -n 1)" "restored to B's last GTID"
sb_check_all d-latest > /dev/null || fail "CHECK TABLE on the restored server"
# (mysql.* left out: B's system tables are its own install's, never replicated.)
sb_checksums d-latest | grep -v '^mysql\.' > "$TEST_WORK/sum-latest"
sb_stop d-latest
sb_checksums b | grep -v '^mysql\.' > "$TEST_WORK/sum-b"
sb_compare_checksums "$TEST_WORK/sum-b" "$TEST_WORK/sum-latest" || fail "restored (--latest) != B"

step "restore to a GTID written on B after the switch"
want=$((switch_seq + 30))
gtid=$(awk -v s="$want" '$1 == s {print $2}' "$TEST_WORK/ledger.gtids")
"$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$TEST_WORK/r-gtid" --to-gtid="$gtid" host1 \
  2> "$TEST_WORK/restore-gtid.log" || { cat "$TEST_WORK/restore-gtid.log" >&2; fail "restore --to-gtid=$gtid"; }
start_restored gtid "$TEST_WORK/r-gtid"
ledger_check d-gtid "$want"
sb_check_all d-gtid > /dev/null || fail "CHECK TABLE on the restored server"
sb_stop d-gtid

step "restore killed with SIGKILL at random moments, then the same command finishes it"
dir=$TEST_WORK/r-killed
for round in 1 2 3 4; do
  "$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$dir" --latest host1 \
    2> "$TEST_WORK/restore-kill-$round.log" &
  pid=$!
  sleep "$(awk -v r="$RANDOM" 'BEGIN {printf "%.2f", 0.05 + (r % 100) / 100}')"
  kill -KILL "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  # A replay server dies with the restore that started it (PR_SET_PDEATHSIG).
  for _ in $(seq 50); do pgrep -f -- "--datadir=$dir" > /dev/null || break; sleep 0.1; done
  ! pgrep -f -- "--datadir=$dir" > /dev/null || fail "round $round: a replay server outlived the killed restore"
  if [ -e "$dir/xbak_restore_in_progress" ]; then
    # Unfinished: the server refuses to start on it (a placeholder ib_logfile0), unless the kill
    # came in the last step, after the replay, when the datadir is whole already.
    [ "$(stat -c %s "$dir/ib_logfile0" 2> /dev/null || echo 0)" -lt 1048576 ] || [ ! -e "$dir/xbak-replay/relay" ] ||
      fail "round $round: an unfinished restore left a usable ib_logfile0"
    echo "round $round: killed, the datadir marked unfinished"
  else
    echo "round $round: the restore finished before the kill"
    rm -rf "$dir"
  fi
done
"$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$dir" --latest host1 \
  2> "$TEST_WORK/restore-rerun.log" || { cat "$TEST_WORK/restore-rerun.log" >&2; fail "restore re-run after kills"; }
start_restored killed "$dir"
ledger_check d-killed "$seq"
sb_stop d-killed

step "a damaged binlog segment in the store: refused by name, the datadir left unfinished"
key=$(os_py '
r = s3.list_objects_v2(Bucket=sys.argv[1], Prefix="host1/binlogs/%s/" % sys.argv[2])
segs = sorted(o["Key"] for o in r["Contents"] if o["Key"].endswith(".seg"))
k = segs[len(segs) // 2]
body = bytearray(s3.get_object(Bucket=sys.argv[1], Key=k)["Body"].read())
body[len(body) // 2] ^= 0xFF
s3.put_object(Bucket=sys.argv[1], Key=k, Body=bytes(body))
print(k)' "$bucket" "$b_port")
if "$XBCLOUD" restore "${S3[@]}" --parallel=2 --use-memory=256M --datadir="$TEST_WORK/r-bad" --latest host1 \
  2> "$TEST_WORK/restore-bad.log"; then
  fail "restore from a damaged binlog segment should fail"
fi
assert_contains "$TEST_WORK/restore-bad.log" "$key is damaged" "the damaged object named"
assert_file "$TEST_WORK/r-bad/xbak_restore_in_progress" "the datadir marked unfinished"
echo "PASS"
