#!/usr/bin/env bash
# Scale benchmark (issue 20): a server of N small InnoDB tables (5 rows each), then one row changed in
# every table; side by side in one run, xbak against mariabackup at each --parallel:
#   full         --backup into a directory (page cache dropped first); its floor: the datadir's files
#                (but the redo log and the temporary tablespace, which a backup does not read whole)
#                read and written (xbak_copy_floor, reading ahead as xbak does, one syncfs). And
#                `--stream=xbstream > /dev/null` (full-stream), whose floor reads the same files only
#                (xbak_copy_floor SRC -): the bytes a backup must read, nothing written (issue 41).
#   incremental  --backup --incremental-basedir=<its own full>  (page cache dropped first)
#   inc-prepare  --prepare --incremental-dir on a fresh copy of the prepared full (xbak's chain for
#                both tools, so they apply the same deltas; the page cache holds the copies, as right
#                after `xbcloud get`, as in prepare_bench.sh); mariabackup applies deltas one by one
#                whatever --parallel says, so it runs once, at the largest. The floor: every delta's
#                pages written into the same files at their offsets, each file's writeback started
#                when it is done (as xbak does), the incremental's other files (table definitions,
#                its redo log and metadata) written over the base's (from 2026-11-29), then one syncfs
#                (benchmarks/floor/xbak_delta_floor, as many threads as --parallel), nothing else.
#                xbak's delta step (its log's "delta step": everything before the redo step) is
#                recorded beside its total.
#   copy-back    --copy-back of the prepared chain into an empty datadir, then `sync` (mariabackup
#                does not sync what it wrote, xbak does: both are timed until the data is on disk);
#                page cache dropped first (after the last row's files were deleted: see below).
#                The floor: every file read and written, largest first, zeros left as holes, its
#                writeback started when done, one syncfs (benchmarks/floor/xbak_copy_floor, as many
#                threads as --parallel, reading ahead as xbak does), nothing else.
#   restore      xbak --restore of the chain as taken (the full and the incremental, unprepared) into an
#                empty datadir, which syncs what it wrote; page cache dropped first. The floor: the
#                full backup's files copied as above, then the incremental's pages written into them
#                (xbak_copy_floor, then xbak_delta_floor), nothing else (no redo applied).
# Ratios to the floors are given at each --parallel (xbak_inc_prepare_over_floor_pN,
# xbak_copy_back_over_floor_pN, xbak_full_over_floor_pN, ...), and mariabackup's full backup over
# xbak's at each (mariabackup_over_xbak_full_pN), so that the same command measures a 2-core and a
# 64-core machine.
# Every row: wall s, CPU s, peak RSS and peak open descriptors (benchmarks/measure.py samples
# /proc/PID/fd). A tool that fails (mariabackup opens every tablespace at once and stops at the
# shell's open-files limit) is recorded with its error, not retried.
#
#   benchmarks/scale_bench.sh [--quick] [--tables "N ..."] [--rows R] [--pars "P ..."] [--warm] [--out FILE.json]
#
# --rows R: tables of R rows of about 230 bytes (about 65 to a page) instead of 5 small ones, and
# every 50th row changed instead of one per table: the seeds' other shape, fewer and larger deltas
# (`--tables 500 --rows 10000`: about 2.5 MB of changed pages per table, issue 41). Results then go
# to docs/results/scale-bench-wide.json unless --out says otherwise.
#
# The incremental prepare (and its floor) starts with the page cache dropped (`sync; echo 3 >
# /proc/sys/vm/drop_caches`), as a restore at 3 AM reads backups that are not in memory (issue 41);
# --warm reads the copies once first instead, as right after `xbcloud get` (the figures of record
# before 2026-11-29). The JSON says which, per scale ("inc_prepare_cache").
#
# Default: --tables "20000 100000 19000" --pars "1 2 4" (about an hour and a half on 2 cores, 30 GB
# of disk at 100,000 tables). 20,000 and 100,000 are the scales of issue 20; 19,000 is there because
# mariabackup --backup opens every tablespace at once and needs one descriptor per table: at 20,000
# it fails under a hard open-files limit of 20,000 (this machine's, which a container cannot raise),
# and 19,000 shows every step of both tools side by side. --quick: 500 tables, --pars "1 2". Results: docs/results/scale-bench.json;
# benchmarks/report.py renders them.
# One scale again without losing the others' rows: --tables N --out .work/scale-N.json, then
# benchmarks/merge_scale.py docs/results/scale-bench.json .work/scale-N.json (each scale keeps its date).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SCALES="20000 100000 19000"; PARS="1 2 4"; QUICK=0; CACHE=cold; OUT=""; ROWS=5
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; SCALES=500; PARS="1 2" ;;
    --tables) SCALES=$2; shift ;;
    --rows) ROWS=$2; shift ;;
    --pars) PARS=$2; shift ;;
    --warm) CACHE=warm ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--tables \"N ...\"] [--rows R] [--pars \"P ...\"] [--warm] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
[[ "$ROWS" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --rows wants a count of rows, not '$ROWS'" >&2; exit 2; }
if [ -z "$OUT" ]; then
  OUT="$ROOT/docs/results/scale-bench.json"
  [ "$ROWS" = 5 ] || OUT="$ROOT/docs/results/scale-bench-wide.json"
fi
MAXPAR=$(printf '%s\n' $PARS | sort -n | tail -n 1)

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak xbak_delta_floor xbak_copy_floor > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBAK=$BUILD/xbak
# The source the binaries were built from, taken now: a commit during the run would otherwise
# name code this run did not measure.
XBAK_REV=$(git describe --always --dirty); export XBAK_REV
export XBAK_SCALE_ROWS=$ROWS
FLOOR=$BUILD/benchmarks/floor/xbak_delta_floor
COPY_FLOOR=$BUILD/benchmarks/floor/xbak_copy_floor
MEASURE=$ROOT/benchmarks/measure.py

export XBAK_WORK=$ROOT/.work/scale-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
W=$XBAK_WORK
RES="$W/rows.jsonl"; : > "$RES"
SCALE_INFO="$W/scales.jsonl"; : > "$SCALE_INFO"

# Before every row. The sleep: this file system is mounted with online discard, and the blocks of
# the files deleted before a row are trimmed after the sync; a row started at once ran 1.5-2 s
# longer after mariabackup's 40,000 fully allocated files were deleted (20,000 tables; 7.8 s
# against 6.3 s for the same copy 10 s later), which gave whichever row came next a handicap.
drop_caches() { sync; sleep "${XBAK_SETTLE_S:-10}"; echo 3 > /proc/sys/vm/drop_caches 2> /dev/null || true; }

# load_wide COUNT ROWS: COUNT tables many.t00000.. of ROWS rows each, a 200-character v per row
load_wide() {
  awk -v n="$1" -v rows="$2" 'BEGIN {
    pad = sprintf("%200s", ""); gsub(/ /, "x", pad)
    print "DROP DATABASE IF EXISTS many; CREATE DATABASE many; USE many;"
    for (i = 0; i < n; i++) {
      t = sprintf("t%05d", i)
      printf "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(255) NOT NULL, k INT NOT NULL, KEY (k)) ENGINE=InnoDB;\n", t
      for (r = 1; r <= rows; r++) {
        if (r % 500 == 1) printf "%sINSERT INTO %s VALUES", (r > 1 ? ";\n" : ""), t
        printf "%s(%d,\"%s\",%d)", (r % 500 == 1 ? " " : ","), r, pad, (i * rows + r) % 13
      }
      print ";"
    }
  }' | sb_sql sc
}

# run TABLES STEP TOOL PAR CMD... : one measured row; a failure is recorded with its last error line
run() {
  local tables=$1 step=$2 tool=$3 par=$4 log="$W/logs/$2-$3-p$4.log" m err=""
  shift 4
  mkdir -p "$W/logs"; : > "$log"
  m=$("$MEASURE" --log "$log" -- "$@")
  if [ "$(jq -r .rc <<< "$m")" != 0 ]; then
    err=$(grep -v '^\s*$' "$log" | grep -i -m 1 -E 'error|fail|too many|refus|cannot' || tail -n 1 "$log")
    echo "   $step $tool --parallel=$par FAILED: $err" >&2
  fi
  # xbak --prepare --incremental-dir ends with "delta step X s, redo step Y s"
  local ds; ds=$(grep -o 'delta step [0-9.]* s' "$log" | tail -n 1 | awk '{print $3}' || true)
  jq -c --argjson t "$tables" --arg s "$step" --arg tool "$tool" --argjson p "$par" --arg e "$err" --arg ds "$ds" \
    '. + {tables: $t, step: $s, tool: $tool, parallel: $p} + (if $e == "" then {} else {error: $e} end)
       + (if $ds == "" then {} else {delta_step_seconds: ($ds | tonumber)} end)' \
    <<< "$m" | tee -a "$RES" | jq -r '"   \(.step) \(.tool) p\(.parallel): \(.seconds) s, \(.peak_rss_kb / 1024 | floor) MiB, \(.peak_fds) fds"' >&2
  [ "$(jq -r .rc <<< "$m")" = 0 ]
}

write_json() { # the results so far (after each scale: a long run stopped midway keeps them)
  python3 - "$RES" "$SCALE_INFO" "$OUT" "$QUICK" "$PARS" << 'PY'
import json, sys, platform, subprocess, datetime, os, resource
res, info, out, quick, pars = sys.argv[1:6]
rows = [json.loads(l) for l in open(res) if l.strip()]
scales = [json.loads(l) for l in open(info) if l.strip()]
ver = subprocess.run(["mariabackup", "--version"], capture_output=True, text=True)
git = os.environ["XBAK_REV"]

def best(n, step, tool):
    ok = [r for r in rows if r["tables"] == n and r["step"] == step and r["tool"] == tool and r["rc"] == 0]
    return min(ok, key=lambda r: r["seconds"]) if ok else None

for s in scales:
    n, ratios = s["tables"], {}
    xf, xi = best(n, "full", "xbak"), best(n, "incremental", "xbak")
    if xf and xi:
        ratios["xbak_incremental_over_full"] = round(xi["seconds"] / xf["seconds"], 2)
    xp, mp, fl = best(n, "inc-prepare", "xbak"), best(n, "inc-prepare", "mariabackup"), best(n, "floor", "floor")
    if xp and mp:
        ratios["mariabackup_over_xbak_inc_prepare"] = round(mp["seconds"] / xp["seconds"], 2)
    if xp and fl:
        ratios["xbak_inc_prepare_over_floor"] = round(xp["seconds"] / fl["seconds"], 2)
        ds = [r["delta_step_seconds"] for r in rows if r["tables"] == n and r["step"] == "inc-prepare"
              and r["tool"] == "xbak" and r["rc"] == 0 and "delta_step_seconds" in r]
        if ds:
            ratios["xbak_delta_step_over_floor"] = round(min(ds) / fl["seconds"], 2)
    for step in ("full", "incremental", "copy-back"):
        x, m = best(n, step, "xbak"), best(n, step, "mariabackup")
        if x and m:
            ratios[f"mariabackup_over_xbak_{step}"] = round(m["seconds"] / x["seconds"], 2)
    # Each figure over its floor at the same --parallel (issue 41).
    def at(step, tool, p):
        ok = [r for r in rows if r["tables"] == n and r["step"] == step and r["tool"] == tool
              and r["parallel"] == p and r["rc"] == 0]
        return ok[0]["seconds"] if ok else None
    for p in sorted({r["parallel"] for r in rows if r["tables"] == n}):
        for step, floor_step, key in (("inc-prepare", "floor", "inc_prepare"), ("copy-back", "copy-back", "copy_back"),
                                      ("restore", "restore", "restore"), ("full", "full", "full"),
                                      ("full-stream", "full-stream", "full_stream")):
            x, f = at(step, "xbak", p), at(floor_step, "floor", p)
            if x and f:
                ratios[f"xbak_{key}_over_floor_p{p}"] = round(x / f, 2)
        x, m = at("full", "xbak", p), at("full", "mariabackup", p)
        if x and m:
            ratios[f"mariabackup_over_xbak_full_p{p}"] = round(m / x, 2)
    s["ratios"] = ratios
    s["failed"] = sorted({f'{r["step"]} {r["tool"]}' for r in rows if r["tables"] == n and r["rc"] != 0})
doc = {"benchmark": "scale", "quick": quick == "1", "parallel": [int(p) for p in pars.split()],
       "rows": int(os.environ["XBAK_SCALE_ROWS"]),
       "date": datetime.datetime.now().isoformat(timespec="seconds"), "xbak": git,
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release(),
                   "open_files_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1]},
       "versions": {"mariabackup": (ver.stdout or ver.stderr).strip().splitlines()[0]},
       "scales": scales, "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
for s in scales:
    print(f'{s["tables"]} tables: {json.dumps(s["ratios"])}' + (f' failed: {s["failed"]}' if s["failed"] else ""),
          file=sys.stderr)
PY
}

for N in $SCALES; do
  echo "== $N tables" >&2
  sb_kill_all; rm -rf "$W/sc" "$W/data-sc"
  sb_init sc 23640
  sb_start sc
  CNF=$(sb_cnf sc)
  t=$(date +%s.%N)
  if [ "$ROWS" = 5 ]; then sb_load_many sc "$N"; else load_wide "$N" "$ROWS"; fi
  sb_flush sc > /dev/null
  CREATE_S=$(echo "$(date +%s.%N) - $t" | bc)

  echo "-- full backups" >&2
  DATADIR=$(sb_datadir sc)
  SKIP=(--skip ib_logfile0 --skip ibtmp1)   # not read whole by a backup: the floor skips them too
  for p in $PARS; do
    rm -rf "$W/full-floor"; drop_caches
    run "$N" full floor "$p" "$COPY_FLOOR" "${SKIP[@]}" "$DATADIR" "$W/full-floor" "$p"
    rm -rf "$W/full-floor"; drop_caches
    run "$N" full-stream floor "$p" "$COPY_FLOOR" "${SKIP[@]}" "$DATADIR" - "$p"
    drop_caches
    run "$N" full-stream xbak "$p" sh -c '"$@" > /dev/null' - "$XBAK" --backup --defaults-file="$CNF" \
      --parallel="$p" --progress-interval=0 --stream=xbstream --target-dir="$W/full-stream" || true
    for tool in xbak mariabackup; do
      rm -rf "$W/full-$tool"; drop_caches
      if [ $tool = xbak ]; then
        run "$N" full xbak "$p" "$XBAK" --backup --defaults-file="$CNF" --parallel="$p" --progress-interval=0 \
          --target-dir="$W/full-xbak" || true
      else
        run "$N" full mariabackup "$p" mariabackup --defaults-file="$CNF" --backup --parallel="$p" \
          --target-dir="$W/full-mariabackup" || true
      fi
    done
  done
  [ -f "$W/full-xbak/xtrabackup_checkpoints" ] || { echo "xbak's full backup failed" >&2; exit 1; }
  FULL_BYTES=$(du -sb "$W/full-xbak" | cut -f1)

  if [ "$ROWS" = 5 ]; then
    echo "-- one row changed in every table" >&2
    WHERE="id=3"
  else
    echo "-- every 50th row changed in every table" >&2
    WHERE="id % 50 = 3"
  fi
  awk -v n="$N" -v w="$WHERE" 'BEGIN { print "USE many;"; for (i = 0; i < n; i++) printf "UPDATE t%05d SET v=\"changed\" WHERE %s;\n", i, w }' |
    sb_sql sc
  sb_flush sc > /dev/null

  echo "-- incremental backups" >&2
  for p in $PARS; do
    for tool in xbak mariabackup; do
      rm -rf "$W/inc-$tool"; drop_caches
      [ -f "$W/full-$tool/xtrabackup_checkpoints" ] || continue   # its full failed: nothing to base on
      if [ $tool = xbak ]; then
        run "$N" incremental xbak "$p" "$XBAK" --backup --defaults-file="$CNF" --parallel="$p" \
          --progress-interval=0 --incremental-basedir="$W/full-xbak" --target-dir="$W/inc-xbak" || true
      else
        run "$N" incremental mariabackup "$p" mariabackup --defaults-file="$CNF" --backup --parallel="$p" \
          --incremental-basedir="$W/full-mariabackup" --target-dir="$W/inc-mariabackup" || true
      fi
    done
  done
  [ -f "$W/inc-xbak/xtrabackup_checkpoints" ] || { echo "xbak's incremental backup failed" >&2; exit 1; }
  sb_stop sc
  rm -rf "$W/full-mariabackup" "$W/inc-mariabackup" "$(sb_datadir sc)"
  DELTAS=$(find "$W/inc-xbak" -name '*.delta' | wc -l)
  DELTA_BYTES=$(find "$W/inc-xbak" -name '*.delta' -printf '%s\n' | awk '{t+=$1} END {print t+0}')
  echo "   $DELTAS deltas, $((DELTA_BYTES >> 20)) MiB; full backup $((FULL_BYTES >> 20)) MiB" >&2

  echo "-- one-pass restore of the chain, as taken, into an empty datadir" >&2
  for p in $PARS; do
    for tool in xbak floor; do   # the floor last: see the copy-back rows
      rm -rf "$W/restored"; drop_caches
      if [ $tool = floor ]; then
        # The full backup's files copied, then the incremental's pages written into them.
        run "$N" restore floor "$p" sh -c '"$1" "$2" "$3" "$4" > /dev/null && "$5" "$3" "$6" "$4" > /dev/null' - \
          "$COPY_FLOOR" "$W/full-xbak" "$W/restored" "$p" "$FLOOR" "$W/inc-xbak"
      else
        run "$N" restore xbak "$p" "$XBAK" --restore --parallel="$p" --progress-interval=0 \
          --target-dir="$W/full-xbak" --incremental-dir="$W/inc-xbak" --datadir="$W/restored" || true
      fi
    done
  done
  rm -rf "$W/restored"

  echo "-- incremental prepare (fresh copies of xbak's prepared full and incremental each run)" >&2
  "$XBAK" --prepare --progress-interval=0 --target-dir="$W/full-xbak" 2> "$W/logs/prepare-full.log"
  fresh() { # new copies, written out; then none of them in the page cache (--warm: all of them)
    rm -rf "$W/run" "$W/run-inc"; cp -a "$W/full-xbak" "$W/run"; cp -a "$W/inc-xbak" "$W/run-inc"
    drop_caches
    if [ "$CACHE" = warm ]; then find "$W/run" "$W/run-inc" -type f -exec cat {} + > /dev/null; fi
  }
  for p in $PARS; do
    fresh
    run "$N" floor floor "$p" "$FLOOR" "$W/run" "$W/run-inc" "$p"
    fresh
    run "$N" inc-prepare xbak "$p" "$XBAK" --prepare --parallel="$p" --progress-interval=0 \
      --target-dir="$W/run" --incremental-dir="$W/run-inc"
  done
  fresh
  run "$N" inc-prepare mariabackup "$MAXPAR" mariabackup --prepare --parallel="$MAXPAR" --target-dir="$W/run" \
    --incremental-dir="$W/run-inc" || true
  # The chain for copy-back: xbak's prepare of the same copies.
  fresh
  "$XBAK" --prepare --parallel="$MAXPAR" --progress-interval=0 --target-dir="$W/run" --incremental-dir="$W/run-inc" \
    2> "$W/logs/prepare-chain.log"

  rm -rf "$W/run-inc" "$W/full-xbak" "$W/inc-xbak"

  echo "-- copy-back of the prepared chain into an empty datadir" >&2
  for p in $PARS; do
    # The floor last (see drop_caches: before the settling sleep, the row after mariabackup's
    # files were deleted ran 1.5-2 s longer, which put the floor above xbak when it came first).
    for tool in mariabackup xbak floor; do
      # The last row's 200,000 files (and the prepare copies) were just deleted: while their
      # inode table blocks are cached, ext4 skips recently deleted inodes one by one at every
      # file creation (recently_deleted()), and the row measured that: 100,000 files created
      # right after 100,000 deleted took 42 s, 6 s with the cache dropped after the sync, 2.8 s
      # on a fresh filesystem (.work/fsx, a Python loop). Dropped here for every row, so both
      # tools start cold, as the backup rows do.
      rm -rf "$W/restored"; drop_caches
      if [ $tool = floor ]; then
        run "$N" copy-back floor "$p" "$COPY_FLOOR" "$W/run" "$W/restored" "$p"
      elif [ $tool = xbak ]; then
        run "$N" copy-back xbak "$p" sh -c '"$@" && sync' - "$XBAK" --copy-back --parallel="$p" \
          --progress-interval=0 --target-dir="$W/run" --datadir="$W/restored" || true
      else
        run "$N" copy-back mariabackup "$p" sh -c '"$@" && sync' - mariabackup --no-defaults --copy-back \
          --parallel="$p" --target-dir="$W/run" --datadir="$W/restored" || true
      fi
    done
  done
  rm -rf "$W/restored" "$W/run"
  jq -nc --argjson t "$N" --argjson c "$CREATE_S" --argjson fb "$FULL_BYTES" --argjson d "$DELTAS" \
    --argjson db "$DELTA_BYTES" --arg cache "$CACHE" \
    --argjson rows "$ROWS" \
    '{tables: $t, rows: $rows, create_s: $c, full_bytes: $fb, deltas: $d, delta_bytes: $db, inc_prepare_cache: $cache}' >> "$SCALE_INFO"
  write_json
done

echo "results: $OUT" >&2
