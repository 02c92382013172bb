#!/usr/bin/env bash
# Impact on the server: sysbench throughput while a backup runs, as a share of the throughput
# without one, for four modes side by side in one run on one server:
#   none            no backup (the baseline)
#   xbak            xbak --backup --parallel=P --target-dir=DIR
#   xbak-throttle   the same with --throttle=N (N MiB/s of data-file reads)
#   mariabackup     mariabackup --backup --parallel=P --target-dir=DIR
#   benchmarks/impact_bench.sh [--quick] [--reps N] [--throttle N] [--tables N] [--rows N]
#                              [--test oltp_read_write|oltp_write_only] [--out FILE.json]
# Each run: flush the buffer pool's dirty pages, drop the page cache, start sysbench (2 threads,
# one report a second, each line stamped with the wall clock as it arrives), let it warm up,
# then start the backup (to a directory on the same disk, deleted afterwards) or, for the
# baseline, wait a fixed window. The throughput during a backup is the transactions sysbench
# completed between the backup's start and end (per-second reports, prorated at both ends) over
# its duration; its share is that over the median baseline throughput. The backup runs under
# /usr/bin/time for wall time and peak RSS. The order of the modes turns every repetition.
# --wait-quiet (or XBAK_BENCH_WAIT_QUIET=1), for a machine shared with other work: before each run,
# wait until no other mariadbd or sysbench process runs, and run again any run that one overlapped
# (the JSON records the waiting and the runs done again).
# Results: a JSON file (default docs/results/impact-bench.json); benchmarks/report.py renders it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export LC_ALL=C   # a '.' in $EPOCHREALTIME and awk's numbers

QUICK=0; REPS=4; THROTTLE=300; SB_TEST=oltp_read_write; OUT="$ROOT/docs/results/impact-bench.json"
SB_TABLES=""; SB_ROWS=""; WAIT_QUIET=${XBAK_BENCH_WAIT_QUIET:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=1 ;;
    --reps) REPS=$2; shift ;;
    --throttle) THROTTLE=$2; shift ;;
    --tables) SB_TABLES=$2; shift ;;
    --rows) SB_ROWS=$2; shift ;;
    --test) SB_TEST=$2; shift ;;
    --wait-quiet) WAIT_QUIET=1 ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--throttle N] [--tables N] [--rows N] [--test T] [--wait-quiet] [--out FILE]" >&2
      exit 2 ;;
  esac
  shift
done
# The full run's data (about 8 GiB, 32 times the buffer pool; sysbench's default "special"
# distribution keeps its hot rows in the pool, the rest is read from disk) takes xbak about 12 s
# to copy on a 2-core VM; --throttle=300 is about half of its unthrottled rate there.
# --quick is for CI (a few minutes): a small dataset, one repetition, short windows.
PAR=2
if [ $QUICK = 1 ]; then
  : "${SB_TABLES:=4}" "${SB_ROWS:=25000}"; WARM=3; BASE_S=6; PREWARM=5
else
  : "${SB_TABLES:=16}" "${SB_ROWS:=2000000}"; WARM=5; BASE_S=20; PREWARM=30
fi
TAIL=2   # sysbench runs on this long after the backup ends

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/impact-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
SBPID=""; WATCHPID=""
SB_ON_EXIT+=('[ -z "$SBPID" ] || kill "$SBPID" 2> /dev/null' '[ -z "$WATCHPID" ] || kill "$WATCHPID" 2> /dev/null')
# The dataset (8 GiB in a full run) goes once its server has stopped; the logs stay.
SB_ON_EXIT_LATE+=('rm -rf "$XBAK_WORK/impact/data" "$XBAK_WORK/impact/binlog" "$XBAK_WORK/bk"')
sb_cleanup_on_exit
W=$XBAK_WORK
RES="$W/results.tsv"   # mode rep order t0 t1 seconds peak_rss_kb bytes sysbench_log
: > "$RES"

sb_init impact 23706 "innodb_log_file_size=256M" "innodb_buffer_pool_size=256M"
sb_start impact
CNF=$(sb_cnf impact)
echo "loading: sysbench ${SB_TABLES}x${SB_ROWS}" >&2
sb_load_sysbench impact "$SB_TABLES" "$SB_ROWS"
sb_sql impact "RESET MASTER"   # the load's binary log: as large as the data, of no use here
mapfile -t SBCONN < <(sb_sysbench_args impact)

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2> /dev/null || true; }

# --wait-quiet: other servers and load generators on the machine, i.e. every mariadbd and sysbench
# but this benchmark's own (its server's my.cnf, its port).
others() {
  local pid cmd
  for pid in $(pgrep -x 'mariadbd|sysbench'); do
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null) || continue
    case "$cmd" in *"--defaults-file=$CNF"* | *"--mysql-port=23706"*) ;; *) echo "$pid $cmd" ;; esac
  done
}
WAITED=0; REDONE=0
wait_quiet() {
  [ "$WAIT_QUIET" = 1 ] || return 0
  local t0=$SECONDS said=0
  while [ -n "$(others)" ]; do
    [ $said = 1 ] || { echo "waiting for other servers to end: $(others | head -n 1 | cut -c1-100)" >&2; said=1; }
    sleep 10
  done
  WAITED=$((WAITED + SECONDS - t0))
}
watch_start() { # until watch_stop: a file $W/overlapped appears if another server runs meanwhile
  rm -f "$W/overlapped"
  [ "$WAIT_QUIET" = 1 ] || return 0
  ( while :; do [ -z "$(others)" ] || others > "$W/overlapped"; sleep 1; done ) &
  WATCHPID=$!
}
watch_stop() {
  [ -z "$WATCHPID" ] || { kill "$WATCHPID" 2> /dev/null || true; wait "$WATCHPID" 2> /dev/null || true; }
  WATCHPID=""
  [ ! -e "$W/overlapped" ]
}
stamp() { local l; while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }

sysbench_start() { # LOG : sysbench in the background (pid in SBPID), its lines stamped into LOG
  local log=$1 i
  rm -f "$W/sb.fifo"; mkfifo "$W/sb.fifo"
  stamp < "$W/sb.fifo" > "$log" &
  STAMPPID=$!
  sysbench "$SB_TEST" "${SBCONN[@]}" --tables="$SB_TABLES" --table-size="$SB_ROWS" --threads=2 --time=3600 \
    --report-interval=1 run > "$W/sb.fifo" 2>&1 &
  SBPID=$!
  for ((i = 0; i < 300; i++)); do
    grep -q 'Threads started' "$log" && return 0
    kill -0 "$SBPID" 2> /dev/null || break
    sleep 0.1
  done
  echo "sysbench did not start:" >&2; tail "$log" >&2; return 1
}

sysbench_stop() {
  kill "$SBPID" 2> /dev/null || true
  wait "$SBPID" 2> /dev/null || true
  wait "$STAMPPID" 2> /dev/null || true
  SBPID=""
}

backup() { # MODE DIR : the backup, under /usr/bin/time; prints "seconds rss_kb"
  local mode=$1 dir=$2 tf="$W/time.txt"
  case "$mode" in
    xbak | xbak-throttle)
      local thr=0; [ "$mode" = xbak-throttle ] && thr=$THROTTLE
      /usr/bin/time -f '%e %M' -o "$tf" "$XBAK" --backup --defaults-file="$CNF" --parallel=$PAR \
        --throttle="$thr" --progress-interval=0 --target-dir="$dir" 2> "$W/last.log" ;;
    mariabackup)
      /usr/bin/time -f '%e %M' -o "$tf" mariabackup --defaults-file="$CNF" --backup --parallel=$PAR \
        --target-dir="$dir" 2> "$W/last.log" ;;
  esac || { tail "$W/last.log" >&2; return 1; }
  tail -n 1 "$tf"
}

run_one() { # MODE REP ORDER
  local mode=$1 rep=$2 order=$3 log="$W/sb-$1-$2.log" bk="$W/bk" t0 t1 s rss bytes=0 timing
  wait_quiet
  sb_flush impact > /dev/null 2>&1
  rm -rf "$bk"
  drop_caches
  watch_start
  sysbench_start "$log"
  sleep "$WARM"
  t0=$EPOCHREALTIME
  if [ "$mode" = none ]; then
    sleep "$BASE_S"; s=$BASE_S; rss=0
  else
    timing=$(backup "$mode" "$bk")
    read -r s rss <<< "$timing"
  fi
  t1=$EPOCHREALTIME
  sleep "$TAIL"
  sysbench_stop
  if [ -d "$bk" ]; then bytes=$(du -sb "$bk" | cut -f1); rm -rf "$bk"; fi
  if ! watch_stop; then
    echo "$mode rep $rep overlapped another server ($(head -n 1 "$W/overlapped" | cut -c1-100)); again" >&2
    REDONE=$((REDONE + 1))
    run_one "$@"
    return
  fi
  echo "$mode $rep $order $t0 $t1 $s $rss $bytes $log" | tee -a "$RES" >&2
}

# Unrecorded warm-up: the buffer pool and the server's caches settle before the first run.
echo "warm-up: $SB_TEST for $PREWARM s" >&2
wait_quiet
sb_flush impact > /dev/null 2>&1
sysbench_start "$W/sb-prewarm.log"
sleep "$PREWARM"
sysbench_stop

MODES=(none xbak xbak-throttle mariabackup)
for rep in $(seq 1 "$REPS"); do
  for k in 0 1 2 3; do
    run_one "${MODES[$(((k + rep - 1) % 4))]}" "$rep" "$k"
  done
done

python3 - "$RES" "$OUT" "$QUICK" "$SB_TEST" "$SB_TABLES" "$SB_ROWS" "$PAR" "$THROTTLE" "$WARM" "$BASE_S" \
  "$WAIT_QUIET" "$WAITED" "$REDONE" <<'PY'
import datetime, json, os, platform, re, statistics, subprocess, sys
res, out, quick, test = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
tables, rows, par, throttle, warm, base_s, wait_quiet, waited, redone = (int(x) for x in sys.argv[5:14])


def series(path):
    """(start, [(wall time of the report, tps over the second before it)])"""
    start, pts = None, []
    for line in open(path):
        ts, _, rest = line.rstrip("\n").partition(" ")
        if "Threads started" in rest:
            start = float(ts)
        m = re.match(r"\[ *\d+s \].* tps: ([\d.]+)", rest)
        if m:
            pts.append((float(ts), float(m.group(1))))
    return start, pts


def rate(start, pts, a, b):
    """transactions per second over [a, b], each report's interval prorated; and the time covered"""
    total = covered = 0.0
    prev = start
    for w, tps in pts:
        lo, hi = max(prev, a), min(w, b)
        if hi > lo:
            total += tps * (hi - lo)
            covered += hi - lo
        prev = w
    return (total / covered if covered else None), covered


rows_out = []
for line in open(res):
    mode, rep, order, t0, t1, s, rss, nbytes, log = line.split()
    t0, t1 = float(t0), float(t1)
    start, pts = series(log)
    tps, covered = rate(start, pts, t0, t1)
    before, _ = rate(start, pts, t0 - 3, t0)
    rows_out.append({"mode": mode, "tool": mode.split("-")[0], "throttle": throttle if mode == "xbak-throttle" else 0,
                     "rep": int(rep), "order": int(order), "seconds": float(s), "window_seconds": round(t1 - t0, 3),
                     "covered_seconds": round(covered, 3), "peak_rss_kb": int(rss), "bytes": int(nbytes),
                     "tps": tps, "tps_before": before,
                     "series": [[round(w - t0, 3), v] for w, v in pts]})
base = statistics.median(r["tps"] for r in rows_out if r["mode"] == "none" and r["tps"])
for r in rows_out:
    r["share"] = r["tps"] / base if r["tps"] else None
    r["lost_transactions"] = round((base - r["tps"]) * r["window_seconds"]) if r["tps"] and r["mode"] != "none" else 0
summary = {}
for mode in ("none", "xbak", "xbak-throttle", "mariabackup"):
    xs = [r for r in rows_out if r["mode"] == mode]
    if not xs:
        continue
    summary[mode] = {"median_tps": statistics.median(r["tps"] for r in xs),
                     "median_share": statistics.median(r["share"] for r in xs),
                     "median_s": statistics.median(r["seconds"] for r in xs),
                     "max_rss_kb": max(r["peak_rss_kb"] for r in xs),
                     "median_lost_transactions": statistics.median(r["lost_transactions"] for r in xs)}
    if mode != "none":
        summary[mode]["median_mib_per_s"] = statistics.median(r["bytes"] / 1048576 / r["seconds"] for r in xs)


def ver(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except Exception:
        return "?"


doc = {"benchmark": "impact", "quick": quick, "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": ver(["mariabackup", "--version"]), "mariadbd": ver(["mariadbd", "--version"]),
                    "sysbench": ver(["sysbench", "--version"])},
       "sysbench": {"test": test, "tables": tables, "table_size": rows, "threads": 2, "report_interval": 1},
       "server": {"innodb_log_file_size": "256M", "innodb_buffer_pool_size": "256M"},
       "parallel": par, "throttle": throttle, "warmup_seconds": warm, "baseline_seconds": base_s,
       "wait_quiet": {"on": wait_quiet == 1, "waited_seconds": waited, "runs_done_again": redone},
       "baseline_tps": base, "runs": rows_out, "summary": summary}
json.dump(doc, open(out, "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
echo "results: $OUT" >&2
