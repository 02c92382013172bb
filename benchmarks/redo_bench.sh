#!/usr/bin/env bash
# Redo-apply benchmark: ONE full backup taken under write load, holding at least --redo-mib MiB
# of redo log (default 1100; --quick 160), prepared on fresh copies by
#   mariabackup --prepare --use-memory=M
#   xbak --prepare --parallel=1/2/4 --use-memory=M
# in one run, with wall time, CPU and peak RSS (/usr/bin/time). M is the same for both tools.
#   benchmarks/redo_bench.sh [--quick] [--redo-mib N] [--reps N] [--use-memory M] [--out FILE.json]
# How the backup gets its redo: xbak --backup streams into a pipe that holds the stream back until
# the server has written --redo-mib MiB of log (sysbench oltp_write_only plus whole-table UPDATEs),
# then lets it through; the backup's log copier keeps copying meanwhile (innodb_log_file_size is
# larger than the target, so nothing is overwritten). The page cache is warm for every run.
# Results: docs/results/redo-bench.json; benchmarks/report.py renders them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
REDO_MIB=1100; REPS=3; QUICK=0; MEM=1G; OUT="$ROOT/docs/results/redo-bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REDO_MIB=160; REPS=1 ;;
    --redo-mib) REDO_MIB=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --use-memory) MEM=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--redo-mib N] [--reps N] [--use-memory M] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/redo-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
W=$XBAK_WORK
LOGMB=$(( (REDO_MIB * 2 + 511) / 512 * 512 ))
sb_init rb 23608 "innodb_log_file_size=${LOGMB}M" "innodb_buffer_pool_size=512M"
sb_start rb
sb_load_sysbench rb 8 50000
lsn() { sb_sql rb "SHOW ENGINE INNODB STATUS" | grep -o 'Log sequence number [0-9]*' | grep -o '[0-9]*$'; }

echo "backup under load until $REDO_MIB MiB of redo are written" >&2
sb_sysbench rb oltp_write_only --tables=8 --table-size=50000 --threads=2 --time=3600 run > "$W/sysbench.log" 2>&1 &
SB=$!
bulk() { # whole-table updates: lots of redo (row images + undo) per second
  local i=0
  while [ ! -e "$W/stop" ]; do
    i=$((i % 8 + 1))
    sb_sql rb "UPDATE sbtest.sbtest$i SET c = REPEAT(CHAR(65 + FLOOR(RAND() * 26)), 119), pad = MD5(RAND())" 2> /dev/null || true
  done
}
bulk &
BULK=$!
start=$(lsn)
# The gate: passes the first MiB of the stream (the backup is running), then waits for "go".
gate() {
  python3 -c '
import os, sys, time
go = sys.argv[1]
inp, out = sys.stdin.buffer, sys.stdout.buffer
out.write(inp.read(1 << 20)); out.flush()
while not os.path.exists(go):
    time.sleep(0.2)
while True:
    b = inp.read(1 << 20)
    if not b:
        break
    out.write(b)
' "$W/go"
}
( "$XBAK" --backup --defaults-file="$(sb_cnf rb)" --parallel=2 --progress-interval=0 --stream=xbstream 2> "$W/backup.log" |
  gate | "$XBAK" --extract -C "$W/full" 2> "$W/extract.log" ) &
BK=$!
while :; do
  now=$(lsn)
  [ $(( (now - start) / 1048576 )) -ge "$REDO_MIB" ] && break
  kill -0 "$BK" 2> /dev/null || { tail "$W/backup.log" >&2; echo "the backup ended early" >&2; exit 1; }
  sleep 1
done
touch "$W/go"
wait "$BK" || { tail -n 20 "$W/backup.log" >&2; exit 1; }
touch "$W/stop"; kill "$SB" 2> /dev/null || true; wait "$SB" "$BULK" 2> /dev/null || true
sb_stop rb
REDO_BYTES=$(( $(stat -c %s "$W/full/ib_logfile0") - 12288 ))
echo "backup holds $((REDO_BYTES / 1048576)) MiB of redo" >&2

RES="$W/results.tsv"; : > "$RES"
timed() { # TOOL PARALLEL REP CMD...
  local tool=$1 par=$2 rep=$3 tf="$W/time.txt"
  shift 3
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" > "$W/last.log" 2>&1 || { tail "$W/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$tool $par $rep $e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" | tee -a "$RES" >&2
}
fresh() { rm -rf "$W/run"; cp -a "$W/full" "$W/run"; sync; cat "$W/run/ib_logfile0" > /dev/null; }
for rep in $(seq 1 "$REPS"); do
  fresh
  timed mariabackup 1 "$rep" mariabackup --no-defaults --prepare --use-memory="$MEM" --target-dir="$W/run"
  cp -a "$W/run" "$W/mb-result"
  for p in 1 2 4; do
    fresh
    timed xbak "$p" "$rep" "$XBAK" --prepare --parallel="$p" --use-memory="$MEM" --progress-interval=0 --target-dir="$W/run"
  done
  if [ "$rep" = 1 ]; then
    python3 tests/integration/compare_pages.py "$W/mb-result" "$W/run" > "$W/compare.txt" || { tail "$W/compare.txt" >&2; exit 1; }
    tail -n 1 "$W/compare.txt" >&2
  fi
  rm -rf "$W/mb-result"
done

python3 - "$RES" "$OUT" "$QUICK" "$REDO_BYTES" "$MEM" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick, redo, mem = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5]
rows = []
for line in open(res):
    tool, par, rep, e, m, c = line.split()
    rows.append({"tool": tool, "parallel": int(par), "rep": int(rep), "seconds": float(e),
                 "peak_rss_kb": int(m), "cpu_seconds": float(c)})
ver = subprocess.run(["mariabackup", "--version"], capture_output=True, text=True)
doc = {"benchmark": "redo-prepare", "quick": quick, "redo_bytes": redo, "use_memory": mem,
       "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": (ver.stdout or ver.stderr).strip().splitlines()[0]}, "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
