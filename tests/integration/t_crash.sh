#!/usr/bin/env bash
# Issue "trustworthy", crash tests: kill -9 at random points (seeded; the seed is printed, set
# XBAK_CRASH_SEED to replay) of
#   1. xbak --backup --target-dir           (N points)
#   2. xbak --backup --stream | xbak --extract, the backup killed   (N points)
#   3. the same pipe, the extractor killed  (N points)
#   4. xbak --copy-back                      (N points)
# and after each: nothing incomplete looks complete (no ${META}checkpoints in a killed
# backup's directory or in an extraction of a cut stream, and xbak --verify says so), the server
# still takes writes (no BACKUP STAGE lock left behind), and re-running the step succeeds: a new
# backup, a new extraction and a copy-back into a cleaned datadir, whose server starts and whose
# tables all pass CHECK TABLE with the source's checksums.
# Kill during xbcloud put: t_xbcloud.sh; during xbak --prepare --incremental-dir:
# t_incremental_prepare.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

N=${XBAK_CRASH_POINTS:-8}
seed=${XBAK_CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$seed
echo "kill points per step: $N, seed $seed (XBAK_CRASH_SEED=$seed replays them)"
src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK

step "source server with data"
sb_init src "$src_port"
sb_start src
cnf=$(sb_cnf src)
sb_load_sample src
sb_load_sysbench src 4 50000
sb_checksums src > "$W/src.sum"

ms_now() { date +%s%3N; }
# a random point in [0, $1) ms, as seconds for sleep
point() { awk -v ms=$((RANDOM % ($1 * 9 / 10))) 'BEGIN { printf "%.3f", ms / 1000 }'; }
server_alive() { # the server takes writes: no BACKUP STAGE lock or connection left behind
  sb_sql src "CREATE TABLE IF NOT EXISTS test.alive (i INT) ENGINE=InnoDB; INSERT INTO test.alive VALUES (1)" ||
    fail "the server does not take writes after the kill"
}
sb_sql src "CREATE DATABASE IF NOT EXISTS test"
# not_complete DIR LABEL: DIR must not look like a complete backup
not_complete() {
  local dir=$1 label=$2 rc=0
  [ ! -e "$dir/${META}checkpoints" ] || fail "$label: a killed run left ${META}checkpoints in $dir"
  if [ -d "$dir" ]; then
    "$XBAK" --verify --target-dir="$dir" > "$W/verify.out" 2>&1 || rc=$?
    [ "$rc" -eq 1 ] || { cat "$W/verify.out" >&2; fail "$label: xbak --verify did not flag the incomplete $dir (exit $rc)"; }
    grep -Eq "${META}checkpoints[^:]*: missing" "$W/verify.out" || fail "$label: verify does not name the missing marker"
  fi
}

step "timing: one uninterrupted backup"
t0=$(ms_now)
"$XBAK" --backup --defaults-file="$cnf" --target-dir="$W/timing" 2> "$W/timing.log" ||
  { tail "$W/timing.log" >&2; fail "backup"; }
T=$(($(ms_now) - t0))
echo "a backup takes $T ms; kill points are drawn from [0, $T) ms"
[ "$T" -gt 200 ] || T=200

step "kill -9 during xbak --backup --target-dir"
completed=0
for i in $(seq "$N"); do
  d="$W/kb$i"
  "$XBAK" --backup --defaults-file="$cnf" --target-dir="$d" 2> "$W/kb$i.log" &
  pid=$!
  p=$(point "$T")
  sleep "$p"
  kill -9 "$pid" 2> /dev/null || true
  rc=0
  wait "$pid" 2> /dev/null || rc=$?
  if [ "$rc" -eq 0 ]; then
    completed=$((completed + 1))
    echo "point $i (${p}s): the backup had finished"
    "$XBAK" --verify --target-dir="$d" > /dev/null || fail "a backup that finished does not verify"
  elif [ -e "$d/${META}checkpoints" ]; then
    # Killed after its last write (${META}checkpoints comes last, after everything else is
    # durable), while exiting: under ASan the leak check at exit makes that window long. The
    # backup is complete, and must verify as such.
    "$XBAK" --verify --target-dir="$d" > "$W/verify.out" 2>&1 ||
      { cat "$W/verify.out" >&2; fail "backup killed at ${p}s left ${META}checkpoints but does not verify"; }
    completed=$((completed + 1))
    echo "point $i (${p}s): killed (exit $rc) while exiting, after the backup was complete; it verifies"
  else
    not_complete "$d" "backup killed at ${p}s"
    echo "point $i (${p}s): killed (exit $rc), $(find "$d" -type f 2> /dev/null | wc -l || true) files left, no ${META}checkpoints"
  fi
  server_alive
  rm -rf "$d"
done
"$XBAK" --backup --defaults-file="$cnf" --target-dir="$W/again" 2> "$W/again.log" || { tail "$W/again.log" >&2; fail "re-run"; }
"$XBAK" --verify --target-dir="$W/again" > /dev/null || fail "the re-run backup does not verify"
echo "re-run after the kills: backup complete and verified"

step "kill -9 of the backup in xbak --backup --stream | xbak --extract"
for i in $(seq "$N"); do
  d="$W/ks$i"
  (
    "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream 2> "$W/ks$i-b.log" &
    echo $! > "$W/ks$i.pid"
    wait 2> /dev/null
  ) | "$XBAK" --extract -C "$d" 2> "$W/ks$i-x.log" &
  xpid=$!
  p=$(point "$T")
  sleep "$p"
  bpid=$(cat "$W/ks$i.pid" 2> /dev/null || true)
  [ -n "$bpid" ] && kill -9 "$bpid" 2> /dev/null || true
  rc=0
  timeout 60 tail --pid="$xpid" -f /dev/null || fail "extract did not end after its writer was killed (hang)"
  wait "$xpid" 2> /dev/null || rc=$?
  if [ "$rc" -eq 0 ] && [ -e "$d/${META}checkpoints" ]; then
    echo "point $i (${p}s): the backup had finished"
  elif [ "$rc" -eq 0 ]; then
    # The writer died between two files: the stream itself is whole (every file it holds has
    # its EOF chunk), but the backup is not: no ${META}checkpoints, which not_complete checks.
    not_complete "$d" "stream cut at ${p}s"
    echo "point $i (${p}s): the stream ended between files: extract OK, backup marked incomplete"
  else
    not_complete "$d" "stream cut at ${p}s"
    echo "point $i (${p}s): extract failed: $(tail -n 1 "$W/ks$i-x.log" | cut -c1-150)"
  fi
  server_alive
  rm -rf "$d"
done

step "kill -9 of xbak --extract"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream > "$W/full.xbs" 2> "$W/s.log" || fail "stream backup"
t0=$(ms_now)
"$XBAK" --extract -C "$W/xt" < "$W/full.xbs" 2> /dev/null
TX=$(($(ms_now) - t0))
[ "$TX" -gt 100 ] || TX=100
rm -rf "$W/xt"
for i in $(seq "$N"); do
  d="$W/kx$i"
  "$XBAK" --extract -C "$d" < "$W/full.xbs" 2> "$W/kx$i.log" &
  pid=$!
  p=$(point "$TX")
  sleep "$p"
  kill -9 "$pid" 2> /dev/null || true
  rc=0
  wait "$pid" 2> /dev/null || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "point $i (${p}s): the extraction had finished"
  elif [ -e "$d/${META}checkpoints" ]; then
    # Killed after the stream's last file was in place, while exiting (ASan's leak check at exit
    # makes that window long; CI's ASan pass hit it): every file must then be there, and verify.
    "$XBAK" --verify --target-dir="$d" > "$W/verify.out" 2>&1 ||
      { cat "$W/verify.out" >&2; fail "extract killed at ${p}s left ${META}checkpoints but does not verify"; }
    echo "point $i (${p}s): killed while exiting, after the last file; the backup verifies"
  else
    not_complete "$d" "extract killed at ${p}s"
    partial=$(find "$d" -name '*.xbpartial' 2> /dev/null | wc -l || true)
    echo "point $i (${p}s): killed, $(find "$d" -type f 2> /dev/null | wc -l || true) files, $partial still .xbpartial"
  fi
  # re-running into the same directory: refused without --overwrite, completes with it
  rc=0
  "$XBAK" --extract -C "$d" < "$W/full.xbs" 2> "$W/kx$i-re.log" || rc=$?
  if [ "$rc" -ne 0 ]; then
    "$XBAK" --extract --overwrite -C "$d" < "$W/full.xbs" 2> "$W/kx$i-re.log" ||
      { cat "$W/kx$i-re.log" >&2; fail "re-extract --overwrite after a kill failed"; }
  fi
  "$XBAK" --verify --target-dir="$d" > "$W/kx$i-v.log" || { cat "$W/kx$i-v.log" >&2; fail "re-extracted backup does not verify"; }
  [ -z "$(find "$d" -name '*.xbpartial')" ] || fail "re-extract left .xbpartial files"
  rm -rf "$d"
done
echo "re-running each extraction (with --overwrite over the leftovers) gave a backup that verifies"

step "kill -9 during xbak --copy-back: the datadir is marked and unstartable; re-running resumes it"
xbak --prepare --target-dir="$W/again" 2> "$W/prepare.log" || { tail "$W/prepare.log" >&2; fail "prepare"; }
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
t0=$(ms_now)
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/again" 2> /dev/null
TC=$(($(ms_now) - t0))
[ "$TC" -gt 100 ] || TC=100
cp -a "$W/again" "$W/other"   # another prepared backup, which must not go over an interrupted restore
for i in $(seq "$N"); do
  rm -rf "$W/dst/data"
  "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/again" 2> "$W/kc$i.log" &
  pid=$!
  p=$(point "$TC")
  sleep "$p"
  kill -9 "$pid" 2> /dev/null || true
  rc=0
  wait "$pid" 2> /dev/null || rc=$?
  # Killed while its marker was being written (xbak_copy_back_in_progress.tmp alone): nothing of
  # the backup is there yet, and the re-run below must take the datadir as empty.
  n=$(find "$W/dst/data" -type f ! -name xbak_copy_back_in_progress.tmp 2> /dev/null | wc -l || true)
  echo "point $i (${p}s): copy-back exit $rc, $n files in the datadir"
  finished=0
  if [ "$rc" -ne 0 ] && [ "$n" -gt 0 ] && [ ! -e "$W/dst/data/xbak_copy_back_in_progress" ]; then
    # Killed after its last step (the marker goes once the redo log is in place and everything
    # is synced): a finished restore, checked below like a resumed one.
    [ -e "$W/dst/data/ib_logfile0" ] || fail "a killed copy-back left no in-progress marker"
    finished=1
    echo "  (killed after it had finished)"
  fi
  if [ "$rc" -ne 0 ] && [ "$n" -gt 0 ] && [ "$finished" = 0 ]; then
    # Killed: the datadir says so, and it has no redo log yet, so mariadbd refuses to start on it.
    [ -e "$W/dst/data/xbak_copy_back_in_progress" ] || fail "a killed copy-back left no in-progress marker"
    [ ! -e "$W/dst/data/ib_logfile0" ] || fail "a killed copy-back left ib_logfile0: the datadir looks startable"
    if "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/other" 2> /dev/null; then
      fail "another backup was restored over an interrupted restore"
    fi
  fi
  # Re-running the same copy-back resumes it (or, if it had finished, refuses the full datadir).
  rc2=0
  "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/again" 2> "$W/kc$i-re.log" || rc2=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$finished" = 0 ]; then
      [ "$rc2" -eq 0 ] || { tail -n 3 "$W/kc$i-re.log" >&2; fail "resuming the copy-back killed at point $i"; }
    else
      [ "$rc2" -ne 0 ] || fail "a copy-back went over the finished restore of point $i"
    fi
    [ ! -e "$W/dst/data/xbak_copy_back_in_progress" ] || fail "the resumed copy-back left its marker"
    (cd "$W/again" && find . -type f ! -name 'xtrabackup_*' ! -name 'mariadb_backup_*' ! -name backup-my.cnf) | while read -r f; do
      cmp -s "$W/again/$f" "$W/dst/data/$f" || fail "resumed copy-back (point $i): $f differs from the backup"
    done
  fi
done
# The narrowest kill point, made on purpose: killed while writing its marker, a copy-back leaves
# only the marker's temporary file; the same command run again takes the datadir as empty.
rm -rf "$W/dst/data"
mkdir -p "$W/dst/data"
echo "copy-back of $W/again" > "$W/dst/data/xbak_copy_back_in_progress.tmp"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/again" 2> "$W/kc-tmp.log" ||
  { tail -n 3 "$W/kc-tmp.log" >&2; fail "copy-back over the lone temporary file of a half-written marker"; }
[ ! -e "$W/dst/data/xbak_copy_back_in_progress.tmp" ] || fail "the half-written marker was left"
echo "a copy-back killed while writing its marker: the same command finishes it"
rm -rf "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/again" 2> "$W/cb.log" ||
  { cat "$W/cb.log" >&2; fail "copy-back re-run"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
sb_start dst
sb_check_all dst
echo "restored server after the kills: every table passes CHECK TABLE"
sb_stop dst

step "the server is killed (-9) mid-backup: the backup fails cleanly, no hang, nothing complete"
"$XBAK" --backup --defaults-file="$cnf" --log-copy-timeout=20 --target-dir="$W/gone" 2> "$W/gone.log" &
pid=$!
sleep "$(point "$T")"
kill -9 "$(cat "$(sb_pidfile src)")"
rc=0
timeout 120 tail --pid="$pid" -f /dev/null || fail "xbak still runs 120 s after the server died (hang)"
wait "$pid" 2> /dev/null || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "the backup had finished before the kill"
else
  not_complete "$W/gone" "server killed"
  echo "server killed: xbak exit $rc: $(tail -n 1 "$W/gone.log" | cut -c1-200)"
fi
sb_start src
server_alive
