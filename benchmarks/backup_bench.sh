#!/usr/bin/env bash
# Full-backup benchmark: xbak against mariabackup on the same datadir, in one run.
#   benchmarks/backup_bench.sh [--quick] [--reps N] [--out FILE.json]
# Scenarios (each tool at --parallel=1/2/4, every repetition recorded):
#   flushed     all dirty pages written first (the reproducible case)
#   mass-create right after CREATE TABLE of many small tables (their page 0 is not on disk yet;
#               mariabackup re-reads each such page 0 for ~11 ms)
#   load        sysbench oltp_write_only runs during the backup: the backup's time and the server's
#               throughput during it, against a baseline without a backup
# Each backup runs under /usr/bin/time for wall time and peak RSS. Results: a JSON file
# (default docs/results/backup-bench.json); benchmarks/report.py renders docs/benchmarks.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

QUICK=0; REPS=3; OUT="$ROOT/docs/results/backup-bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=1 ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
# --quick is for CI (a few minutes): smaller datasets, one repetition, two parallelisms.
if [ $QUICK = 1 ]; then SB_TABLES=2; SB_ROWS=20000; MANY=300; PARS="1 4"; else SB_TABLES=8; SB_ROWS=100000; MANY=2000; PARS="1 2 4"; fi

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > /dev/null
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
RES="$XBAK_WORK/results.tsv"   # scenario tool parallel rep seconds peak_rss_kb extra
: > "$RES"

sb_init bench 23406 "innodb_log_file_size=256M"
sb_start bench
CNF=$(sb_cnf bench)
echo "loading: sysbench ${SB_TABLES}x${SB_ROWS}, $MANY small tables" >&2
sb_load_sysbench bench $SB_TABLES $SB_ROWS
sb_load_many bench $MANY

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2> /dev/null || true; }

run_backup() { # TOOL PAR TARGET -> prints "seconds rss_kb"
  local tool=$1 par=$2 dir=$3 tf="$XBAK_WORK/time.txt"
  rm -rf "$dir"
  if [ "$tool" = xbak ]; then
    /usr/bin/time -f '%e %M' -o "$tf" "$XBAK" --backup --defaults-file="$CNF" --parallel="$par" \
      --progress-interval=0 --target-dir="$dir" 2> "$XBAK_WORK/last.log" || { tail "$XBAK_WORK/last.log" >&2; return 1; }
  else
    /usr/bin/time -f '%e %M' -o "$tf" mariabackup --defaults-file="$CNF" --backup --parallel="$par" \
      --target-dir="$dir" 2> "$XBAK_WORK/last.log" || { tail "$XBAK_WORK/last.log" >&2; return 1; }
  fi
  rm -rf "$dir"
  tail -n 1 "$tf"
}

echo "== scenario: flushed" >&2
sb_flush bench
for rep in $(seq 1 "$REPS"); do
  for par in $PARS; do
    for tool in xbak mariabackup; do
      drop_caches
      read -r s rss < <(run_backup $tool "$par" "$XBAK_WORK/bk")
      echo "flushed $tool $par $rep $s $rss -" | tee -a "$RES" >&2
    done
  done
done

echo "== scenario: mass-create ($MANY tables created right before each backup)" >&2
for rep in $(seq 1 "$REPS"); do
  for par in $PARS; do
    for tool in xbak mariabackup; do
      sb_load_many bench "$MANY" 2> /dev/null
      zero=$(find "$(sb_datadir bench)/many" -name '*.ibd' -exec sh -c 'head -c 16384 "$1" | tr -d "\0" | wc -c' _ {} \; | grep -c '^0$' || true)
      read -r s rss < <(run_backup $tool "$par" "$XBAK_WORK/bk")
      echo "mass-create $tool $par $rep $s $rss zero_page0=$zero" | tee -a "$RES" >&2
    done
  done
done

echo "== scenario: load (sysbench oltp_write_only, 2 threads)" >&2
sb_flush bench
tps_of() { grep -E '^\[' "$1" | awk -v a="$2" -v b="$3" '{t=$2+0; if (t>a && t<=b) {for(i=1;i<=NF;i++) if ($i=="tps:") {s+=$(i+1); n++}}} END {if (n) printf "%.1f", s/n; else print "nan"}'; }
run_load() { # TOOL|none
  local tool=$1 log="$XBAK_WORK/sb-$1.log" t0 t1 s rss
  sb_sysbench bench oltp_write_only --tables=$SB_TABLES --table-size=$SB_ROWS --threads=2 --time=60 \
    --report-interval=1 run > "$log" 2>&1 &
  local sbpid=$!
  sleep 5
  t0=$(date +%s.%N)
  if [ "$tool" = none ]; then sleep 10; s=10; rss=0; else read -r s rss < <(run_backup "$tool" 2 "$XBAK_WORK/bk"); fi
  t1=$(date +%s.%N)
  kill "$sbpid" 2> /dev/null || true; wait "$sbpid" 2> /dev/null || true
  local a b; a=5; b=$(awk -v x="$t0" -v y="$t1" 'BEGIN{printf "%d", 5 + (y-x) + 0.999}')
  echo "load $tool 2 1 $s $rss tps=$(tps_of "$log" $a $b)" | tee -a "$RES" >&2
}
# Each run starts from a flushed buffer pool, so earlier runs' dirty pages do not skew the next.
for rep in $(seq 1 "$REPS"); do
  for t in none xbak mariabackup; do sb_flush bench > /dev/null 2>&1; run_load $t; done
done

python3 - "$RES" "$OUT" "$QUICK" <<'PY'
import json, sys, platform, subprocess, statistics, datetime
res, out, quick = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows = []
for line in open(res):
    sc, tool, par, rep, s, rss, extra = line.split()
    r = {"scenario": sc, "tool": tool, "parallel": int(par), "rep": int(rep), "seconds": float(s), "peak_rss_kb": int(rss)}
    for kv in extra.split(","):
        if "=" in kv:
            k, v = kv.split("=", 1)
            r[k] = float(v) if v not in ("nan",) else None
    rows.append(r)
def ver(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except Exception: return "?"
summary = []
for sc in sorted({r["scenario"] for r in rows}):
    for par in sorted({r["parallel"] for r in rows if r["scenario"] == sc}):
        cell = {"scenario": sc, "parallel": par}
        for tool in ("xbak", "mariabackup", "none"):
            xs = [r for r in rows if r["scenario"] == sc and r["parallel"] == par and r["tool"] == tool]
            if not xs: continue
            cell[tool] = {"median_s": statistics.median(x["seconds"] for x in xs),
                          "max_rss_kb": max(x["peak_rss_kb"] for x in xs)}
            if "tps" in xs[0]:
                cell[tool]["median_tps"] = statistics.median(x["tps"] for x in xs if x.get("tps") is not None)
        if "xbak" in cell and "mariabackup" in cell:
            cell["speedup"] = cell["mariabackup"]["median_s"] / cell["xbak"]["median_s"]
        summary.append(cell)
doc = {"benchmark": "full backup", "quick": quick, "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": __import__("os").cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": ver(["mariabackup", "--version"]), "mariadbd": ver(["mariadbd", "--version"])},
       "runs": rows, "summary": summary}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
echo "results: $OUT" >&2
