#!/usr/bin/env bash
# Incremental-prepare benchmark: one incremental touching many small tables (many small .delta
# files), applied to copies of the same prepared full backup by
#   mariabackup --prepare --incremental-dir (deltas + the incremental's redo, serial), and
#   xbak --prepare --incremental-dir --parallel=1/2/4/8/16 (deltas on N threads, then the redo),
# in one run.
#   benchmarks/prepare_bench.sh [--quick] [--tables N] [--reps N] [--out FILE.json]
# Records wall time, user+system CPU and peak RSS (/usr/bin/time). The page cache is warm for
# every run (the copies were just written), as it is right after `xbcloud get`.
# Results: docs/results/prepare-bench.json; benchmarks/report.py renders them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TABLES=2000; REPS=3; QUICK=0; OUT="$ROOT/docs/results/prepare-bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; TABLES=300; REPS=1 ;;
    --tables) TABLES=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--tables N] [--reps N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/prepare-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
W=$XBAK_WORK
sb_init pb 23606
sb_start pb
CNF=$(sb_cnf pb)
sb_load_many pb "$TABLES"
sb_flush pb

echo "full backup, then one row changed in every table, then the incremental" >&2
"$XBAK" --backup --defaults-file="$CNF" --parallel=2 --progress-interval=0 --target-dir="$W/full" 2> "$W/full.log"
awk -v n="$TABLES" 'BEGIN { print "USE many;"; for (i = 0; i < n; i++) printf "UPDATE t%05d SET v=\"changed\" WHERE id=3;\n", i }' |
  sb_sql pb
"$XBAK" --backup --defaults-file="$CNF" --parallel=2 --progress-interval=0 --incremental-basedir="$W/full" \
  --target-dir="$W/inc" 2> "$W/inc.log"
DELTAS=$(find "$W/inc" -name '*.delta' | wc -l)
DELTA_BYTES=$(find "$W/inc" -name '*.delta' -printf '%s\n' | awk '{t+=$1} END {print t+0}')
echo "incremental: $DELTAS .delta files, $DELTA_BYTES bytes" >&2
"$XBAK" --prepare --progress-interval=0 --target-dir="$W/full" 2> "$W/prep-full.log"

RES="$W/results.tsv"; : > "$RES"
timed() { # TOOL STEP PARALLEL REP CMD...
  local tool=$1 stepname=$2 par=$3 rep=$4 tf="$W/time.txt"
  shift 4
  sync; echo 1 > /proc/sys/vm/drop_caches 2> /dev/null || true   # only the dirty-page effect of the copy
  find "$W/run" "$W/run-inc" -type f -exec cat {} + > /dev/null 2>&1 || true
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" > "$W/last.log" 2>&1 || { tail "$W/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$tool $stepname $par $rep $e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" | tee -a "$RES" >&2
}
# A fresh copy of the prepared full backup and of the incremental for every run: mariabackup
# --prepare --incremental-dir deletes the .delta files it applied from the incremental.
fresh() { rm -rf "$W/run" "$W/run-inc"; cp -a "$W/full" "$W/run"; cp -a "$W/inc" "$W/run-inc"; sync; }

for rep in $(seq 1 "$REPS"); do
  fresh
  timed mariabackup deltas+redo 1 "$rep" mariabackup --no-defaults --prepare --target-dir="$W/run" --incremental-dir="$W/run-inc"
  for p in 1 2 4 8 16; do
    fresh
    timed xbak deltas+redo "$p" "$rep" "$XBAK" --prepare --parallel="$p" --progress-interval=0 \
      --target-dir="$W/run" --incremental-dir="$W/run-inc"
  done
done

python3 - "$RES" "$OUT" "$QUICK" "$TABLES" "$DELTAS" "$DELTA_BYTES" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick, tables, deltas, dbytes = sys.argv[1], sys.argv[2], sys.argv[3] == "1", *map(int, sys.argv[4:7])
rows = []
for line in open(res):
    tool, step, par, rep, e, m, c = line.split()
    rows.append({"tool": tool, "step": step, "parallel": int(par), "rep": int(rep), "seconds": float(e),
                 "peak_rss_kb": int(m), "cpu_seconds": float(c)})
ver = subprocess.run(["mariabackup", "--version"], capture_output=True, text=True)
doc = {"benchmark": "prepare", "quick": quick, "tables": tables, "deltas": deltas, "delta_bytes": dbytes,
       "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": (ver.stdout or ver.stderr).strip().splitlines()[0]}, "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
