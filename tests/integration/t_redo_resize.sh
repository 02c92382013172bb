#!/usr/bin/env bash
# Issue 18: the server's redo log resized online while a backup copies it. MariaDB 10.11 allows
# `SET GLOBAL innodb_log_file_size` on a running server: it writes ib_logfile101 alongside and
# renames it over ib_logfile0 at the next checkpoint (about a second under write load). Under
# sysbench oltp_write_only, two backups, each with a resize in the middle of its copy:
#   1. --stream=xbstream --compress=zstd to a reader at 1 MiB/s; 32 MiB -> 64 MiB as soon as the
#      InnoDB data copy starts;
#   2. a directory backup slowed by --throttle=2; 64 MiB -> 32 MiB 5 s into the InnoDB data copy.
# The rename must be seen in the server's datadir (ib_logfile0 another inode, of the new size)
# while the backup still runs. Then exactly one of two outcomes is accepted:
#   - the backup fails (exit != 0) with a message naming the replaced log (today: "ib_logfile0 was
#     replaced while the backup was copying it"), and leaves no ${META}checkpoints (in the
#     directory; in the stream, not even a chunk of it);
#   - the backup completes, its redo reaches past the resize, and it prepares and restores to a
#     consistent server (CHECK TABLE, every sysbench table at exactly $ROWS rows).
# Anything else (another error, a backup that ends before the rename) fails the test.
# Environment: XBAK_RESIZE_ROUNDS (default "1 2"; e.g. XBAK_RESIZE_ROUNDS=2).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

TABLES=4
ROWS=10000
TPS=300
ROUNDS=${XBAK_RESIZE_ROUNDS:-1 2}
SLOW=(python3 "$TEST_LIB_DIR/slow_reader.py")
src_port=$(alloc_port)
dst_port=$(alloc_port)
mkdir -p "$TEST_WORK/spool"

restore_check() { # LABEL DIR : prepare DIR, restore it into "dst", CHECK TABLE, count rows
  prepare_backup "$1" "$2"
  copy_back_start "$1" "$2"
  check_rows dst "$1" $TABLES "$ROWS"
  sb_stop dst
}

# wait_for_line LOG REGEX RCFILE : until a line of LOG matches REGEX (fails if the backup ends
# first, or after 120 s)
wait_for_line() {
  local i
  for ((i = 0; i < 1200; i++)); do
    if grep -Eq -- "$2" "$1" 2> /dev/null; then return 0; fi
    if [ -f "$3" ]; then tail -n 20 "$1" >&2; fail "the backup ended before its log said '$2'"; fi
    sleep 0.1
  done
  fail "no line '$2' in $1 after 120 s"
}

# resize LABEL BYTES RCFILE : SET GLOBAL innodb_log_file_size while the backup runs, then wait
# for the rename in the datadir. Sets resized_while_running=1 if the backup had not ended when
# the new ib_logfile0 was seen, and lsn_resized to the server's LSN once it was.
resize() {
  local label=$1 size=$2 rcfile=$3 ino0 t0 i forced=0 now
  ino0=$(stat -c %i "$datadir/ib_logfile0")
  [ ! -f "$rcfile" ] || fail "$label: the backup ended before the resize (test timing)"
  echo "$label: SET GLOBAL innodb_log_file_size = $size ($(date '+%H:%M:%S'), backup running)"
  t0=$SECONDS
  sb_sql src "SET GLOBAL innodb_log_file_size = $size"
  resized_while_running=0
  for ((i = 0; i < 600; i++)); do
    if [ "$(stat -c %i "$datadir/ib_logfile0")" != "$ino0" ] && [ ! -e "$datadir/ib_logfile101" ] &&
      [ "$(stat -c %s "$datadir/ib_logfile0")" = "$size" ]; then
      [ -f "$rcfile" ] || resized_while_running=1
      break
    fi
    if [ "$i" = 100 ] && [ "$forced" = 0 ]; then # 10 s: make the server checkpoint
      sb_sql src "SET GLOBAL innodb_max_dirty_pages_pct = 0"
      forced=1
    fi
    sleep 0.1
  done
  if [ "$forced" = 1 ]; then sb_sql src "SET GLOBAL innodb_max_dirty_pages_pct = DEFAULT"; fi
  [ "$i" -lt 600 ] || { ls -li "$datadir"/ib_logfile* >&2; fail "$label: the server did not switch to the resized log in 60 s"; }
  lsn_resized=$(server_lsn src)
  now=$(date '+%H:%M:%S')
  echo "$label: $now: ib_logfile0 is a new file (inode $ino0 -> $(stat -c %i "$datadir/ib_logfile0"))," \
    "$(($(stat -c %s "$datadir/ib_logfile0") >> 20)) MiB, $((SECONDS - t0)) s after the SET;" \
    "the backup was $([ "$resized_while_running" = 1 ] && echo 'still running' || echo 'over')"
}

# outcome LABEL RCFILE LOG DIR STREAM : accept a clean failure naming the replaced log, or a
# complete backup whose redo goes past the resize and that restores to consistent data
outcome() {
  local label=$1 rc log=$3 dir=$4 stream=$5 last
  rc=$(cat "$2")
  grep -E 'copying|BACKUP STAGE|ERROR|WARNING|redo log copied|complete' "$log" | cut -c1-400 || true
  if [ "$rc" != 0 ]; then
    grep -Eq 'ib_logfile.*(replaced|resized|changed size|header changed)' "$log" ||
      { tail -n 20 "$log" >&2; fail "$label: the backup failed (exit $rc), but not saying that the redo log was replaced"; }
    if [ -n "$stream" ]; then
      ! grep -aq "${META}checkpoints" "$stream" || fail "$label: the failed backup's stream has ${META}checkpoints"
      "$XBAK" --extract -C "$dir" < "$stream" > /dev/null 2>&1 || true
    fi
    [ -z "$(find "$dir" -name "${META}checkpoints*" 2> /dev/null)" ] ||
      fail "$label: the failed backup left an ${META}checkpoints"
    echo "$label: outcome: the backup failed cleanly (exit $rc), naming the replaced log; no ${META}checkpoints"
    return 0
  fi
  # It completed: it must have followed the log across the switch, and be sound.
  [ "$resized_while_running" = 1 ] || fail "$label: the backup completed before the resized log was in place (test timing)"
  if [ -n "$stream" ]; then
    "$XBAK" --extract -C "$dir" < "$stream" 2> "$TEST_WORK/$label-extract.log" ||
      { tail -n 20 "$TEST_WORK/$label-extract.log" >&2; fail "$label: extract failed"; }
    "$XBAK" --decompress --target-dir="$dir" --parallel=2 --remove-original 2> "$TEST_WORK/$label-decompress.log" ||
      { tail -n 20 "$TEST_WORK/$label-decompress.log" >&2; fail "$label: decompress failed"; }
  fi
  assert_contains "$dir/${META}checkpoints" '^backup_type = full-backuped$' "$label checkpoints"
  last=$(sed -n 's/^last_lsn = \([0-9]*\)$/\1/p' "$dir/${META}checkpoints")
  [ "$last" -gt "$lsn_resized" ] ||
    fail "$label: the backup's redo ends at LSN $last, before the resize (server LSN $lsn_resized once resized)"
  restore_check "$label" "$dir"
  echo "$label: outcome: the backup completed across the resize (last_lsn $last > $lsn_resized) and restores consistently"
}

step "source: 32 MiB redo log, sysbench ${TABLES}x$ROWS, oltp_write_only at $TPS tps in the background"
sb_init src "$src_port" "innodb_log_file_size=32M"
sb_start src
sb_load_sysbench src $TABLES $ROWS
cnf=$(sb_cnf src)
datadir=$(sb_datadir src)
mapfile -t sbconn < <(sb_sysbench_args src)
sysbench oltp_write_only "${sbconn[@]}" --tables=$TABLES --table-size=$ROWS --threads=2 --rate=$TPS \
  --time=1200 --report-interval=10 run > "$TEST_WORK/sysbench.log" 2>&1 &
sbpid=$!
sleep 3
kill -0 "$sbpid" || { cat "$TEST_WORK/sysbench.log"; fail "sysbench did not start"; }

for round in $ROUNDS; do
  case $round in
    1)
      step "round 1: --stream=xbstream --compress=zstd at 1 MiB/s; 32 -> 64 MiB as the data copy starts"
      [ "$(stat -c %s "$datadir/ib_logfile0")" = $((32 << 20)) ] || fail "round 1 expects a 32 MiB log"
      rc_to "$TEST_WORK/r1.rc" "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --compress=zstd \
        --parallel=2 --tmpdir="$TEST_WORK/spool" 2> "$TEST_WORK/r1-backup.log" |
        rc_to "$TEST_WORK/r1-reader.rc" "${SLOW[@]}" 1MiB --max-seconds 600 > "$TEST_WORK/r1.xb" \
          2> "$TEST_WORK/r1-reader.log" &
      pipe=$!
      wait_for_line "$TEST_WORK/r1-backup.log" 'copying [0-9]+ InnoDB files' "$TEST_WORK/r1.rc"
      resize r1 $((64 << 20)) "$TEST_WORK/r1.rc"
      wait "$pipe"
      cat "$TEST_WORK/r1-reader.log"
      outcome r1 "$TEST_WORK/r1.rc" "$TEST_WORK/r1-backup.log" "$TEST_WORK/r1" "$TEST_WORK/r1.xb"
      ;;
    2)
      step "round 2: directory backup with --throttle=2; 64 -> 32 MiB 5 s into the data copy"
      if [ "$(stat -c %s "$datadir/ib_logfile0")" != $((64 << 20)) ]; then
        sb_sql src "SET GLOBAL innodb_log_file_size = $((64 << 20))" # round 1 skipped
      fi
      rc_to "$TEST_WORK/r2.rc" "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/r2" --parallel=2 \
        --throttle=2 2> "$TEST_WORK/r2-backup.log" &
      pipe=$!
      wait_for_line "$TEST_WORK/r2-backup.log" 'copying [0-9]+ InnoDB files' "$TEST_WORK/r2.rc"
      sleep 5
      resize r2 $((32 << 20)) "$TEST_WORK/r2.rc"
      wait "$pipe"
      outcome r2 "$TEST_WORK/r2.rc" "$TEST_WORK/r2-backup.log" "$TEST_WORK/r2" ""
      ;;
    *) fail "unknown round '$round'" ;;
  esac
  kill -0 "$sbpid" || { tail -n 20 "$TEST_WORK/sysbench.log" >&2; fail "sysbench stopped"; }
done

kill "$sbpid" 2> /dev/null || true
wait "$sbpid" 2> /dev/null || true
sb_check_all src QUICK
sb_stop src
