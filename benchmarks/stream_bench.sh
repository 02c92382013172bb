#!/usr/bin/env bash
# Streaming benchmark: the same backup streamed to /dev/null by xbak (1, 2, 4, 8 FIFO streams;
# no compression, lz4, zstd) and by mariabackup --stream=xbstream, in one run.
#   benchmarks/stream_bench.sh [--quick] [--reps N] [--out FILE.json]
# Records wall time, user+system CPU and peak RSS of the backup process (/usr/bin/time), and the
# stream size. Results: docs/results/stream-bench.json; benchmarks/report.py renders them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
QUICK=0; REPS=7; OUT="$ROOT/docs/results/stream-bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=2 ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
if [ $QUICK = 1 ]; then SB_TABLES=4; SB_ROWS=50000; MANY=500; else SB_TABLES=8; SB_ROWS=100000; MANY=2000; fi

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > /dev/null
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/stream-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
RES="$XBAK_WORK/results.tsv"; : > "$RES"
sb_init sbench 23506 "innodb_log_file_size=256M"
sb_start sbench
CNF=$(sb_cnf sbench)
sb_load_sysbench sbench $SB_TABLES $SB_ROWS
sb_load_many sbench $MANY
sb_flush sbench

timed() { # LABEL CMD... ; the command's stdout is counted and discarded
  local label=$1; shift
  local tf="$XBAK_WORK/time.txt"
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" 2> "$XBAK_WORK/last.log" | wc -c > "$XBAK_WORK/bytes.txt" ||
    { tail "$XBAK_WORK/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$label $e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $(cat "$XBAK_WORK/bytes.txt")"
}

# Each FIFO is read by its own `wc -c`, as the single stream is: the readers do the same work per
# byte whatever the number of streams (a `cat | wc` per FIFO would copy every byte once more).
# The FIFOs are made first and their readers wait in open(), as a reader started before the
# backup does: xbak accepts existing FIFOs, so its time holds no wait for readers to appear.
run_fifo() { # N COMPRESS -> same fields
  local n=$1 comp=$2 dir="$XBAK_WORK/fifo" tf="$XBAK_WORK/time.txt" i pids=()
  rm -rf "$dir"; mkdir -p "$dir"
  for i in $(seq 0 $((n - 1))); do
    mkfifo "$dir/thread_$i"
    ( wc -c < "$dir/thread_$i" > "$dir/bytes_$i" ) &
    pids+=($!)
  done
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$XBAK" --backup --defaults-file="$CNF" --parallel=4 --progress-interval=0 \
    --stream=xbstream --fifo-streams="$n" --fifo-dir="$dir" $comp 2> "$XBAK_WORK/last.log" || { tail "$XBAK_WORK/last.log" >&2; return 1; }
  wait "${pids[@]}"
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $(cat "$dir"/bytes_* | awk '{t+=$1} END {print t}')"
}

run_one() { # COMPRESS-OPTION N -> same fields; N=1 is stdout, read by one wc -c
  local copt=$1 n=$2
  if [ "$n" = 1 ]; then
    # shellcheck disable=SC2086
    timed x "$XBAK" --backup --defaults-file="$CNF" --parallel=4 --progress-interval=0 --stream=xbstream $copt | cut -d' ' -f2-
  else
    run_fifo "$n" "$copt"
  fi
}

# The order of the stream counts turns every repetition, so that a drift of the machine (caches,
# a neighbour) does not always favour the same count.
COUNTS=(1 2 4 8)
for rep in $(seq 1 "$REPS"); do
  read -r e m c b < <(timed x mariabackup --defaults-file="$CNF" --backup --parallel=4 --stream=xbstream | cut -d' ' -f2-)
  echo "mariabackup none 1 $rep $e $m $c $b" | tee -a "$RES" >&2
  for comp in none lz4 zstd; do
    copt=""; [ $comp != none ] && copt="--compress=$comp --compress-threads=2"
    for k in 0 1 2 3; do
      n=${COUNTS[$(((k + rep - 1) % 4))]}
      read -r e m c b < <(run_one "$copt" "$n")
      echo "xbak $comp $n $rep $e $m $c $b" | tee -a "$RES" >&2
    done
  done
done

python3 - "$RES" "$OUT" "$QUICK" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows = []
for line in open(res):
    tool, comp, n, rep, e, m, c, b = line.split()
    rows.append({"tool": tool, "compress": comp, "streams": int(n), "rep": int(rep), "seconds": float(e),
                 "peak_rss_kb": int(m), "cpu_seconds": float(c), "bytes": int(b)})
ver = subprocess.run(["mariabackup", "--version"], capture_output=True, text=True)
doc = {"benchmark": "stream", "quick": quick, "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": (ver.stdout or ver.stderr).strip().splitlines()[0]}, "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
