#!/usr/bin/env bash
# Restore from object storage (issue 20): a chain (full + 3 incrementals) of a sysbench database
# taken under oltp_write_only load, each streamed by `xbak --backup --stream | xbcloud put` into a
# local MinIO; then, in one run, three ways back to a datadir the server starts on:
#   xbak    `xbcloud get` of each backup into a named pipe, `xbak --restore --from-stream ...`
#   anchor  `xbcloud get | mbstream -x` of each, `mariabackup --prepare` of the full and of each
#           incremental in turn, `mariabackup --copy-back`  (what mariabackup users do today)
#   floor   `xbcloud get` of each into a file in the target directory: the bytes downloaded and
#           written, nothing else
# Each starts with the page cache dropped and ends with a sync (both inside its time). The xbak and
# anchor datadirs are then started: CHECK TABLE passes and every table's CHECKSUM is equal.
# Records wall time (the median of --reps runs of each way, taken in turn) and the peak RSS of
# xbak --restore and of the largest mariabackup step.
#   benchmarks/restore_bench.sh [--quick] [--rows N] [--parallel N] [--out FILE.json]
#                               [--reuse] [--only xbak,anchor,floor] [--reps N]
# Default: 8 tables x 1,125,000 rows (about 2.1 GiB of InnoDB files). Results:
# docs/results/restore-bench.json.
# For work on one way: --reuse restores the chain a previous run left in MinIO (with the same
# --rows) instead of taking it again; --only runs some of the ways (the xbak datadir is then still
# started and CHECK TABLE run; checksums are compared with the anchor's of the run that took the
# chain, when there is one). Such a run writes its JSON to .work/, never to docs/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TABLES=8; ROWS=1125000; PAR=2; QUICK=0; OUT="$ROOT/docs/results/restore-bench.json"; LOAD_S=20
REUSE=0; ONLY=xbak,anchor,floor; REPS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; ROWS=40000; LOAD_S=5; OUT="$ROOT/.work/restore-bench-quick.json" ;;
    --rows) ROWS=$2; shift ;;
    --parallel) PAR=$2; shift ;;
    --out) OUT=$2; shift ;;
    --reuse) REUSE=1 ;;
    --only) ONLY=$2; shift ;;
    --reps) REPS=$2; shift ;;
    *) echo "usage: $0 [--quick] [--rows N] [--parallel N] [--out FILE] [--reuse] [--only WAYS] [--reps N]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh > /dev/null
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak xbcloud > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak
XBCLOUD=$BUILD/xbcloud
# The revision the binaries were built from (the tree may change while the benchmark runs).
XBAK_REV=$(git describe --always --dirty 2> /dev/null || echo unknown)
scripts/build-go-tools.sh > /dev/null

[ "$QUICK" = 1 ] && export XBAK_WORK=$ROOT/.work/restore-bench-quick || export XBAK_WORK=$ROOT/.work/restore-bench
. scripts/lib/sandbox.sh
. scripts/lib/objstore.sh
sb_kill_all
W=$XBAK_WORK
way() { [[ ",$ONLY," == *",$1,"* ]]; }
[ "$ONLY" != xbak,anchor,floor ] && OUT=$ROOT/.work/restore-bench-partial.json
if [ "$REUSE" = 1 ] && [ "$(cat "$W/chain.ok" 2> /dev/null)" = "$TABLES $ROWS" ]; then
  echo "reusing the chain in $W/minio" >&2
  rm -rf "$W/xbak-data" "$W/anchor-data" "$W/anchor" "$W/floor" "$W/pipes" "$W/xb" "$W/mb"
  REUSED=1
else
  rm -rf "$XBAK_WORK"
  REUSED=0
fi
mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
trap 'sb_cleanup; os_cleanup' EXIT
S3PORT=23960
os_minio_start "$S3PORT" "$W/minio"
[ "$REUSED" = 1 ] || os_bucket_create "$S3PORT" bench
S3=(--s3-endpoint="http://127.0.0.1:$S3PORT" --s3-bucket=bench --progress-interval=0)
export AWS_ACCESS_KEY_ID=$OS_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$OS_SECRET_KEY
NAMES=(full inc1 inc2 inc3)
if [ "$REUSED" = 0 ]; then

sb_init bench 23416 "innodb_log_file_size=512M" "innodb_buffer_pool_size=1G"
sb_start bench
CNF=$(sb_cnf bench)
t0=$(date +%s)
echo "loading: sysbench ${TABLES}x${ROWS}" >&2
sb_load_sysbench bench "$TABLES" "$ROWS"
echo "loaded in $(($(date +%s) - t0)) s; $(du -sh "$(sb_datadir bench)/sbtest" | cut -f1) in sbtest" >&2

load() { # SECONDS : sysbench oltp_write_only in the background (pid in LOAD_PID)
  sb_sysbench bench oltp_write_only --tables="$TABLES" --table-size="$ROWS" --threads=1 --time="$1" \
    --report-interval=0 run > "$W/load.log" 2>&1 &
  LOAD_PID=$!
}
for i in 0 1 2 3; do
  name=${NAMES[$i]}
  base=()
  [ "$i" -gt 0 ] && base=(--incremental-basedir="$W/lsn$((i - 1))")
  load 600
  sleep "$LOAD_S"
  echo "backup $name under load" >&2
  "$XBAK" --backup --defaults-file="$CNF" --parallel=2 --stream=xbstream --progress-interval=0 \
    --extra-lsndir="$W/lsn$i" "${base[@]}" 2> "$W/b-$name.log" |
    "$XBCLOUD" put "${S3[@]}" --parallel=8 "$name" 2> "$W/put-$name.log" ||
    { tail "$W/b-$name.log" "$W/put-$name.log" >&2; exit 1; }
  kill "$LOAD_PID" 2> /dev/null || true
  wait "$LOAD_PID" 2> /dev/null || true
done
sb_stop bench
echo "$TABLES $ROWS" > "$W/chain.ok"
fi
CHAIN_BYTES=$(du -sb "$W/minio" | cut -f1)
echo "chain in MinIO: $((CHAIN_BYTES >> 20)) MiB" >&2

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2> /dev/null || true; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

XBAK_RSS=0; MB_RSS=0; FLOOR_BYTES=0
XBAK_TIMES=(); ANCHOR_TIMES=(); FLOOR_TIMES=()
run_xbak() {
  echo "== xbak --restore from xbcloud get pipes" >&2
  rm -rf "$W/xbak-data" "$W/pipes"
  drop_caches
  mkdir -p "$W/pipes"
  local t p pids=() n s r
  t=$(now)
  for n in "${NAMES[@]}"; do
    mkfifo "$W/pipes/$n"
    "$XBCLOUD" get "${S3[@]}" --parallel=8 "$n" > "$W/pipes/$n" 2> "$W/get-x-$n.log" &
    pids+=($!)
  done
  /usr/bin/time -f '%M' -o "$W/xbak.rss" "$XBAK" --restore --parallel="$PAR" --progress-interval=0 \
    --datadir="$W/xbak-data" "${NAMES[@]/#/--from-stream=$W/pipes/}" 2> "$W/xbak-restore.log" ||
    { tail -n 30 "$W/xbak-restore.log" >&2; exit 1; }
  for p in "${pids[@]}"; do wait "$p"; done
  sync
  s=$(secs "$t" "$(now)")
  XBAK_TIMES+=("$s")
  r=$(cat "$W/xbak.rss"); [ "$r" -gt "$XBAK_RSS" ] && XBAK_RSS=$r
  echo "xbak: $s s, peak RSS $((r / 1024)) MiB" >&2
  grep -E "done in|applied .* deltas|restored " "$W/xbak-restore.log" >&2 || true
}
mbtime() { # mariabackup ARGS : runs it, keeps the largest peak RSS
  /usr/bin/time -f '%M' -o "$W/mb.rss" mariabackup "$@" >> "$W/anchor.log" 2>&1 || { tail -n 30 "$W/anchor.log" >&2; exit 1; }
  local r; r=$(cat "$W/mb.rss"); [ "$r" -gt "$MB_RSS" ] && MB_RSS=$r
  return 0
}
run_anchor() {
  echo "== anchor: get | mbstream -x, mariabackup --prepare per step, --copy-back" >&2
  rm -rf "$W/anchor" "$W/anchor-data"
  drop_caches
  local t n s
  t=$(now)
  for n in "${NAMES[@]}"; do
    mkdir -p "$W/anchor/$n"
    "$XBCLOUD" get "${S3[@]}" --parallel=8 "$n" 2> "$W/get-a-$n.log" | mbstream -x -C "$W/anchor/$n" ||
      { tail "$W/get-a-$n.log" >&2; exit 1; }
  done
  mbtime --prepare --target-dir="$W/anchor/full"
  for n in inc1 inc2 inc3; do mbtime --prepare --target-dir="$W/anchor/full" --incremental-dir="$W/anchor/$n"; done
  mbtime --copy-back --target-dir="$W/anchor/full" --datadir="$W/anchor-data"
  sync
  s=$(secs "$t" "$(now)")
  ANCHOR_TIMES+=("$s")
  echo "anchor: $s s, largest mariabackup peak RSS $((MB_RSS / 1024)) MiB" >&2
  rm -rf "$W/anchor"
}
run_floor() {
  echo "== floor: the bytes downloaded and written" >&2
  rm -rf "$W/floor"
  drop_caches
  mkdir -p "$W/floor"
  local t n s
  t=$(now)
  for n in "${NAMES[@]}"; do "$XBCLOUD" get "${S3[@]}" --parallel=8 "$n" > "$W/floor/$n.xb" 2> /dev/null; done
  sync
  s=$(secs "$t" "$(now)")
  FLOOR_TIMES+=("$s")
  FLOOR_BYTES=$(du -cb "$W"/floor/*.xb | tail -n 1 | cut -f1)
  echo "floor: $s s ($((FLOOR_BYTES >> 20)) MiB)" >&2
  rm -rf "$W/floor"
}
# The ways in turn, --reps times (the machine's speed drifts: each way sees the same drift), the
# order rotated each repetition (xbak first, then the anchor first, then the floor first...): the
# first run after the set-up (always xbak's until then) was its slowest in every record before.
ORDER=(xbak anchor floor)
for rep in $(seq "$REPS"); do
  [ "$REPS" -gt 1 ] && echo "== repetition $rep of $REPS" >&2
  for i in 0 1 2; do
    w=${ORDER[$(((i + rep - 1) % 3))]}
    if way "$w"; then "run_$w"; fi
  done
done
median() { [ $# -gt 0 ] || { echo 0; return; }; printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
XBAK_S=$(median "${XBAK_TIMES[@]}"); ANCHOR_S=$(median "${ANCHOR_TIMES[@]}"); FLOOR_S=$(median "${FLOOR_TIMES[@]}")
echo "medians: xbak $XBAK_S s, anchor $ANCHOR_S s, floor $FLOOR_S s" >&2

echo "== both datadirs start; CHECK TABLE; CHECKSUM TABLE equal" >&2
check() { # LABEL DATADIR
  sb_init_from_datadir "$1" 23417 "$2" "innodb_log_file_size=512M" "innodb_buffer_pool_size=1G"
  chown -R mysql:mysql "$2" 2> /dev/null || true
  sb_start "$1"
  sb_check_all "$1" QUICK
  sb_checksums "$1" > "$W/$1.sum"
  sb_stop "$1"
}
if way xbak; then check xb "$W/xbak-data"; fi
if way anchor; then check mb "$W/anchor-data" && cp "$W/mb.sum" "$W/anchor.sum"; fi
if way xbak && [ -f "$W/anchor.sum" ]; then
  sb_compare_checksums "$W/anchor.sum" "$W/xb.sum"
elif way xbak; then
  echo "no anchor checksums of this chain to compare with (run the anchor once)" >&2
fi

python3 - "$OUT" "$QUICK" "$TABLES" "$ROWS" "$PAR" "$CHAIN_BYTES" "$FLOOR_BYTES" "$XBAK_S" "$XBAK_RSS" \
  "$ANCHOR_S" "$MB_RSS" "$FLOOR_S" "${XBAK_TIMES[*]}" "${ANCHOR_TIMES[*]}" "${FLOOR_TIMES[*]}" "$XBAK_REV" << 'PY'
import json, sys, platform, datetime
(out, quick, tables, rows, par, chain_bytes, floor_bytes, xs, xrss, as_, mrss, fs, xall, aall, fall, rev) = sys.argv[1:]
runs = lambda t: [float(v) for v in t.split()]
xs, as_, fs = float(xs), float(as_), float(fs)
ratio = lambda a, b: round(a / b, 2) if a > 0 and b > 0 else None
doc = {
    "suite": "restore", "quick": quick == "1",
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
    "machine": {"arch": platform.machine(), "cores": len(__import__("os").sched_getaffinity(0))},
    "xbak": rev,
    "dataset": {"sysbench_tables": int(tables), "rows_per_table": int(rows), "chain": "full + 3 incrementals under oltp_write_only",
                "stored_bytes": int(chain_bytes), "stream_bytes": int(floor_bytes)},
    "parallel": int(par),
    "results": {"xbak_restore_s": xs, "xbak_peak_rss_kb": int(xrss), "anchor_s": as_,
                "anchor_largest_peak_rss_kb": int(mrss), "floor_s": fs,
                "runs": {"xbak_s": runs(xall), "anchor_s": runs(aall), "floor_s": runs(fall)}},
    "ratios": {"anchor_over_xbak": ratio(as_, xs), "xbak_over_floor": ratio(xs, fs)},
}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(doc["results"]), json.dumps(doc["ratios"]))
PY
