#!/usr/bin/env bash
# Issue 24 (in progress): xbcloud binlog-push against a real server writing, into MinIO.
#   passes (--once) while the server writes and rotates small binlogs: every closed file archived
#   byte for byte (its segments concatenated equal the server's file, and mariadb-binlog reads
#   them), the file being written archived up to its last complete transaction, nothing twice;
#   the service (--max-lag=1) killed with SIGKILL at random moments and started again: the archive
#   stays contiguous and catches up; a binlog purged before it was archived: a loud error and a gap
#   recorded; damaged input refused. Restore from the archive is not built yet.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud

src_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-binlogs

step "MinIO, and a server whose binlogs rotate every 32 KiB"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
sb_init src "$src_port"
sb_start src
sb_sql src "SET GLOBAL max_binlog_size = 32768; CREATE DATABASE ledger;
  CREATE TABLE ledger.t (seq INT PRIMARY KEY, note VARCHAR(200)) ENGINE=InnoDB"
index="$(dirname "$(sb_datadir src)")/binlog/mysql-bin.index"
[ -f "$index" ] || index=$(sb_sql src "SELECT @@log_bin_index" | tail -n 1)
binlog_dir=$(dirname "$index")
server_id=$(sb_sql src "SELECT @@server_id" | tail -n 1)
P=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)
BP=(binlog-push "${P[@]}" --binlog-index="$index" --server-id="$server_id")
push() { "$XBCLOUD" "${BP[@]}" "$@" host1; }
seq=0
write() { # N: N ledger transactions, each a row with the next sequence number
  local i sql=""
  for i in $(seq 1 "$1"); do seq=$((seq + 1)); sql+="INSERT INTO ledger.t VALUES ($seq, REPEAT('x', 150));"; done
  sb_sql src "$sql"
}
# check_archive: every closed file equal to the server's, the open one a prefix of it ending at a
# transaction; prints how many files are complete.
check_archive() {
  os_py '
import hashlib, json, os, sys
bucket, binlog_dir, index, sid = sys.argv[1:5]
files = [os.path.basename(l.strip()) for l in open(index) if l.strip()]
complete = 0
for i, f in enumerate(files):
    base = "host1/binlogs/%s/%s/" % (sid, f)
    try:
        state = json.loads(s3.get_object(Bucket=bucket, Key=base + "state")["Body"].read())
    except s3.exceptions.NoSuchKey:
        sys.exit("%s has no state in the archive" % f)
    data = b""
    for seg in state["segments"]:
        assert seg["offset"] == len(data), (f, seg)
        body = s3.get_object(Bucket=bucket, Key=base + "%020d.seg" % seg["offset"])["Body"].read()
        assert hashlib.md5(body).hexdigest() == seg["md5"], (f, seg)
        data += body
    local = open(os.path.join(binlog_dir, f), "rb").read()
    if state["complete"]:
        assert i + 1 < len(files), "%s complete while the server still writes it" % f
        assert data == local, "%s: the archive (%d bytes) differs from the server (%d bytes)" % (f, len(data), len(local))
        complete += 1
        open(os.path.join(sys.argv[5], f), "wb").write(data)
    else:
        # the archive keeps the first bytes as the server leaves them when it closes the file
        local = local[:21] + bytes([local[21] & 0xFE]) + local[22:]
        assert local.startswith(data), "%s: the archived part is not the beginning of the file" % f
print(complete)
' "$bucket" "$binlog_dir" "$index" "$server_id" "$TEST_WORK/restored"
}
mkdir -p "$TEST_WORK/restored"

step "passes while the server writes and rotates"
for round in 1 2 3 4; do
  write 150
  push --once 2> "$TEST_WORK/push-$round.log" || { cat "$TEST_WORK/push-$round.log" >&2; fail "binlog-push --once (round $round)"; }
done
files=$(wc -l < "$index")
[ "$files" -ge 4 ] || fail "expected the binlog to rotate several times, it has $files files"
n=$(check_archive)
assert_eq $((files - 1)) "$n" "every closed file archived whole"
# Passes with no new transactions store at most what the server itself adds (binlog checkpoint
# events); the segments stay contiguous and equal to the files: nothing twice.
push --once 2> "$TEST_WORK/push-again.log"
push --once 2> "$TEST_WORK/push-again2.log"
n=$(check_archive)
assert_eq $((files - 1)) "$n" "after passes with nothing new"

step "mariadb-binlog reads the archived files; their GTIDs are the ledger's, each once"
for f in "$TEST_WORK"/restored/mysql-bin.*; do mariadb-binlog "$f" > /dev/null 2>> "$TEST_WORK/mbl.err" || { cat "$TEST_WORK/mbl.err" >&2; fail "mariadb-binlog $f"; }; done
gtids=$(for f in "$TEST_WORK"/restored/mysql-bin.*; do mariadb-binlog "$f" 2> /dev/null; done | grep -c "^#.*GTID [0-9]*-[0-9]*-[0-9]* trans")
[ "$gtids" -gt 100 ] || fail "only $gtids transactions in the archived files"

step "the service killed with SIGKILL at random moments and started again"
for k in 1 2 3; do
  "$XBCLOUD" "${BP[@]}" --max-lag=1 host1 2> "$TEST_WORK/service-$k.log" &
  svc=$!
  write 120
  sleep "$((RANDOM % 3)).$((RANDOM % 10))"
  kill -9 "$svc"; wait "$svc" 2> /dev/null || true
done
push --once 2> "$TEST_WORK/push-after-kills.log" || { cat "$TEST_WORK/push-after-kills.log" >&2; fail "the pass after the kills"; }
sb_sql src "FLUSH BINARY LOGS"
push --once 2> /dev/null
files=$(wc -l < "$index")
n=$(check_archive)
assert_eq $((files - 1)) "$n" "after the kills, every closed file archived whole"

step "the service stops on SIGTERM after its pass"
"$XBCLOUD" "${BP[@]}" --max-lag=1 host1 2> "$TEST_WORK/service-term.log" &
svc=$!
sleep 1.5
kill -TERM "$svc"
wait "$svc" || fail "binlog-push did not exit 0 on SIGTERM"

step "binlogs purged before they were archived: a loud error, the gap recorded"
write 200
sb_sql src "FLUSH BINARY LOGS"
write 10
sb_sql src "FLUSH BINARY LOGS"
last=$(tail -n 1 "$index"); last=$(basename "$last")
# The server keeps a binlog until InnoDB has made its transactions durable (binlog checkpoint):
# the purge takes effect once it has.
for _ in $(seq 100); do
  sb_sql src "FLUSH NO_WRITE_TO_BINLOG ENGINE LOGS; PURGE BINARY LOGS TO '$last'" 2> /dev/null || true
  [ "$(basename "$(head -n 1 "$index")")" = "$last" ] && break
  sleep 0.1
done
assert_eq "$last" "$(basename "$(head -n 1 "$index")")" "the server purged its older binlogs"
if push --once 2> "$TEST_WORK/push-gap.log"; then fail "a pass after a purge of unarchived binlogs succeeded"; fi
cat "$TEST_WORK/push-gap.log" >&2
assert_contains "$TEST_WORK/push-gap.log" "were purged before they were archived" "the gap is named"
gap=$(os_py 'print(sum(1 for o in s3.list_objects_v2(Bucket=sys.argv[1], Prefix="host1/binlogs/%s/gap-" % sys.argv[2]).get("Contents", [])))' "$bucket" "$server_id")
assert_eq 1 "$gap" "the gap recorded in the archive"

step "bad input: a missing index file, a missing option"
if "$XBCLOUD" binlog-push "${P[@]}" --binlog-index="$TEST_WORK/nope.index" --server-id="$server_id" --once host1 \
  2> "$TEST_WORK/push-noindex.log"; then
  fail "a missing index file was accepted"
fi
assert_contains "$TEST_WORK/push-noindex.log" "nope.index" "the index file is named"
if "$XBCLOUD" binlog-push "${P[@]}" --once host1 2> "$TEST_WORK/push-noopt.log"; then fail "binlog-push without --binlog-index"; fi
assert_contains "$TEST_WORK/push-noopt.log" "needs --binlog-index" "the missing option is named"
