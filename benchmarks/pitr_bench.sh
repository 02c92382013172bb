#!/usr/bin/env bash
# Issue 24, done-when 4: the replay of a point-in-time restore, side by side in one run.
#   A server (sysbench, 8 tables) backed up into MinIO; then sysbench oltp_write_only until the
#   binary logs written after the backup reach --binlog MiB (default 1024; --quick 64), archived by
#   binlog-push. The same binlogs, from the backup's position, replayed onto the same restored
#   backup three ways, each from a server start to its clean shutdown:
#     xbak        xbcloud restore --latest: its replay (relay logs, parallel optimistic
#                 replication, --parallel workers, restore-only settings), as its log times it
#     mysqlbinlog mariadb-binlog --start-position=P FILES | mariadb (one client connection)
#     relay       the binlogs handed to the server as relay logs with its default settings
#                 (one SQL thread), the method WAL-G's figures compare against
#   Every result's tables equal the source's (CHECKSUM TABLE). And the source's throughput
#   (sysbench oltp_write_only, 4 threads, --tps-secs each) without and with binlog-push running
#   as a service (--max-lag=1), alternated twice.
#   benchmarks/pitr_bench.sh [--quick] [--binlog MIB] [--parallel N] [--tps-secs S] [--out FILE.json]
# Results: docs/results/pitr-bench.json (benchmarks/report.py renders them).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BINLOG_MIB=1024; PAR=4; TPS_SECS=60; OUT="$ROOT/docs/results/pitr-bench.json"; QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; BINLOG_MIB=64; TPS_SECS=15 ;;
    --binlog) BINLOG_MIB=$2; shift ;;
    --parallel) PAR=$2; shift ;;
    --tps-secs) TPS_SECS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--binlog MIB] [--parallel N] [--tps-secs S] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

[ "${XBAK_SKIP_DEPS:-0}" = 1 ] || bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak xbcloud > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak
XBCLOUD=$BUILD/xbcloud

export XBAK_WORK=$ROOT/.work/pitr-bench
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
export SB_BUFFER_POOL_SIZE=1G SB_QUIET=1
. scripts/lib/sandbox.sh
. scripts/lib/objstore.sh
sb_cleanup_on_exit
SB_ON_EXIT+=("os_cleanup")
SRC_PORT=23970; DST_PORT=23971; S3_PORT=23972; OS_CONSOLE_PORT=23973
os_minio_start "$S3_PORT" "$XBAK_WORK/minio"
os_bucket_create "$S3_PORT" bench
S3=(--s3-endpoint="http://127.0.0.1:$S3_PORT" --s3-bucket=bench --progress-interval=0)
log() { echo "pitr-bench: $*" >&2; }

sb_init src "$SRC_PORT" "max_binlog_size=256M" "binlog_format=ROW"
sb_start src
sb_load_sysbench src 8 50000
index=$(sb_sql src "SELECT @@log_bin_index" | tail -n 1)
server_id=$(sb_sql src "SELECT @@server_id" | tail -n 1)
WRITE=(oltp_write_only --tables=8 --table-size=50000 --threads=4 --report-interval=0)

# Throughput without and with the archiver, alternated.
TPS="$XBAK_WORK/tps.tsv"; : > "$TPS"
tps_run() { # LABEL
  local out; out=$(sb_sysbench src "${WRITE[@]}" --time="$TPS_SECS" run)
  echo "$1 $(printf '%s\n' "$out" | awk '/transactions:/ {gsub(/\(/, "", $3); print $3}')" | tee -a "$TPS" >&2
}
for round in 1 2; do
  tps_run without
  "$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$index" --server-id="$server_id" --max-lag=1 warmup \
    2> "$XBAK_WORK/push-warmup.log" &
  push=$!
  tps_run with
  kill -TERM "$push"; wait "$push" || true
done

log "full backup into MinIO"
"$XBAK" --backup --defaults-file="$(sb_cnf src)" --parallel=2 --stream=xbstream 2> "$XBAK_WORK/backup.log" |
  "$XBCLOUD" put "${S3[@]}" --parallel=4 host1/full 2> "$XBAK_WORK/put.log"
mkdir -p "$XBAK_WORK/full"
"$XBCLOUD" get "${S3[@]}" host1/full 2> "$XBAK_WORK/get.log" | "$XBAK" --extract -C "$XBAK_WORK/full" 2> "$XBAK_WORK/extract.log"
read -r bfile bpos bgtid < "$XBAK_WORK/full/xtrabackup_binlog_info"
log "backup at $bfile:$bpos ($bgtid)"

log "sysbench until ${BINLOG_MIB} MiB of binary log after the backup"
binlog_after() { # bytes of binlog from the backup's position on
  local dir total=0 f s past=0
  dir=$(dirname "$index")
  while read -r f; do
    f=$dir/$(basename "$f")
    s=$(stat -c %s "$f")
    if [ "$(basename "$f")" = "$bfile" ]; then past=1; s=$((s - bpos)); fi
    [ "$past" = 1 ] && total=$((total + s))
  done < "$index"
  echo "$total"
}
sb_sysbench src "${WRITE[@]}" --time=100000 run > "$XBAK_WORK/load.log" 2>&1 &
load=$!
while [ "$(binlog_after)" -lt $((BINLOG_MIB << 20)) ]; do sleep 2; done
# (sb_sysbench is a function: the job is a subshell, sysbench its child.)
pkill -TERM -P "$load" 2> /dev/null || true
kill "$load" 2> /dev/null || true
wait "$load" 2> /dev/null || true
for _ in $(seq 100); do pgrep -f "sysbench oltp_write_only" > /dev/null || break; sleep 0.1; done
final=$(sb_sql src "SELECT @@gtid_binlog_pos" | tail -n 1)
BYTES=$(binlog_after)
log "binlog: $BYTES bytes after the backup, to GTID $final"
/usr/bin/time -f '%e %M' -o "$XBAK_WORK/push.time" \
  "$XBCLOUD" binlog-push "${S3[@]}" --binlog-index="$index" --server-id="$server_id" --once host1 2> "$XBAK_WORK/push.log"
sb_checksums src > "$XBAK_WORK/sum-src"
sb_stop src

# The restored backup every method starts from.
"$XBAK" --restore --target-dir="$XBAK_WORK/full" --datadir="$XBAK_WORK/base" 2> "$XBAK_WORK/base.log"
RES="$XBAK_WORK/results.tsv"; : > "$RES"
checked() { # NAME DIR: the result's tables equal the source's
  _sb_chown "$2"
  sb_init_from_datadir "chk-$1" "$DST_PORT" "$2" "skip-slave-start" "skip-log-bin"
  sb_start "chk-$1"
  sb_checksums "chk-$1" > "$XBAK_WORK/sum-$1"
  sb_stop "chk-$1"
  sb_compare_checksums "$XBAK_WORK/sum-src" "$XBAK_WORK/sum-$1" >&2
}

log "xbak: xbcloud restore --latest --parallel=$PAR"
/usr/bin/time -f '%e %M' -o "$XBAK_WORK/xbak.time" \
  "$XBCLOUD" restore "${S3[@]}" --parallel="$PAR" --use-memory=1G --datadir="$XBAK_WORK/d-xbak" --latest host1 \
  2> "$XBAK_WORK/xbak.log"
replay_s=$(awk '/replayed in/ {for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1)}' "$XBAK_WORK/xbak.log" | tail -n 1)
read -r total_s rss < "$XBAK_WORK/xbak.time"
echo "xbak $replay_s $rss $total_s" | tee -a "$RES" >&2
checked xbak "$XBAK_WORK/d-xbak"

files=()
dir=$(dirname "$index"); past=0
while read -r f; do
  f=$(basename "$f")
  [ "$f" = "$bfile" ] && past=1
  [ "$past" = 1 ] && files+=("$dir/$f")
done < "$index"

log "mysqlbinlog: mariadb-binlog | mariadb"
cp -a "$XBAK_WORK/base" "$XBAK_WORK/d-mysqlbinlog"
_sb_chown "$XBAK_WORK/d-mysqlbinlog"
# (The server's default durability, which the sandbox's my.cnf relaxes: what a restore gets without
# restore-only settings.)
DEFAULTS=("innodb_flush_log_at_trx_commit=1")
sb_init_from_datadir mb "$DST_PORT" "$XBAK_WORK/d-mysqlbinlog" "skip-slave-start" "skip-log-bin" "${DEFAULTS[@]}"
t0=$(date +%s.%N)
sb_start mb
mariadb-binlog --start-position="$bpos" "${files[@]}" | mariadb --defaults-file="$(sb_cnf mb)"
sb_stop mb
echo "mysqlbinlog $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') 0 0" | tee -a "$RES" >&2
checked mysqlbinlog "$XBAK_WORK/d-mysqlbinlog"

log "relay: the binlogs as relay logs, default settings (one SQL thread)"
cp -a "$XBAK_WORK/base" "$XBAK_WORK/d-relay"
relay=$XBAK_WORK/relay; mkdir -p "$relay"; : > "$relay/relay-bin.index"; n=0
for f in "${files[@]}"; do
  n=$((n + 1)); r=$(printf 'relay-bin.%06d' "$n")
  cp "$f" "$relay/$r"; echo "$relay/$r" >> "$relay/relay-bin.index"
done
_sb_chown "$XBAK_WORK/d-relay" "$relay"
sb_init_from_datadir rl "$DST_PORT" "$XBAK_WORK/d-relay" "skip-slave-start" "skip-log-bin" "relay-log=$relay/relay-bin" \
  "relay-log-index=$relay/relay-bin.index" "server-id=4000000000" "${DEFAULTS[@]}"
t0=$(date +%s.%N)
sb_start rl
sb_sql rl "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=1, MASTER_USER='x', MASTER_USE_GTID=no,
  RELAY_LOG_FILE='relay-bin.000001', RELAY_LOG_POS=$bpos, MASTER_LOG_FILE='$bfile', MASTER_LOG_POS=$bpos;
  START SLAVE SQL_THREAD"
[ "$(sb_sql rl "SELECT MASTER_GTID_WAIT('$final', 36000)" | tail -n 1)" = 0 ]
sb_sql rl "STOP SLAVE; RESET SLAVE ALL"
sb_stop rl
echo "relay $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}') 0 0" | tee -a "$RES" >&2
checked relay "$XBAK_WORK/d-relay"

read -r push_s push_rss < "$XBAK_WORK/push.time"
python3 - "$RES" "$TPS" "$OUT" "$QUICK" "$BYTES" "$PAR" "$push_s" "$push_rss" "$final" "$bgtid" <<'PY'
import json, sys, platform, datetime, os, subprocess
res, tps, out, quick, nbytes, par, push_s, push_rss, final, start = sys.argv[1:11]
methods = {}
for line in open(res):
    name, secs, rss, total = line.split()
    methods[name] = {"seconds": float(secs), "peak_rss_kb": int(rss), "total_seconds": float(total)}
t = {"without": [], "with": []}
for line in open(tps):
    label, v = line.split()
    t[label].append(float(v))
ver = (subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout.strip())
x = methods["xbak"]["seconds"]
doc = {"benchmark": "pitr", "quick": quick == "1", "binlog_bytes": int(nbytes), "parallel": int(par),
       "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "server": ver, "from_gtid": start, "to_gtid": final, "methods": methods,
       "ratios": {"mysqlbinlog_over_xbak": round(methods["mysqlbinlog"]["seconds"] / x, 2),
                  "relay_over_xbak": round(methods["relay"]["seconds"] / x, 2)},
       "archive": {"push_once_seconds": float(push_s), "push_peak_rss_kb": int(push_rss)},
       "throughput": {"without_tps": t["without"], "with_tps": t["with"],
                      "with_over_without": round(sum(t["with"]) / sum(t["without"]), 3)}}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(doc["ratios"]), json.dumps(doc["throughput"]))
PY
echo "results: $OUT" >&2
