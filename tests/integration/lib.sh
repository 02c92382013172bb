# shellcheck shell=bash
# Common setup for tests/integration/t_*.sh. Source it first thing:
#
#   #!/usr/bin/env bash
#   set -euo pipefail
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   port=$(alloc_port)
#   step "start source"; sb_init src "$port"; sb_start src
#
# CTest passes XBAK (the xbak binary), XBAK_SRC (source dir) and XBAK_BUILD (build dir); when run by
# hand they default to <repo>, <repo>/build and <repo>/build/xbak.
#
# Gives: $TEST_NAME, $TEST_WORK (the per-test work dir, also $XBAK_WORK for the sandbox), $META (the
# metadata files' prefix: ${META}checkpoints is xtrabackup_checkpoints on 10.11), all sb_*
# functions of scripts/lib/sandbox.sh, a cleanup trap (servers stopped, ports released; on failure
# the servers' error-log tails are printed and the work dir is kept), and:
#   step "text"              log a step with elapsed times
#   fail "msg"               fail the test now
#   assert_eq EXP ACT [msg]  assert_ne A B [msg]  assert_file PATH [msg]  assert_dir PATH [msg]
#   assert_contains FILE REGEX [msg]
#   alloc_port               print a free TCP port reserved for this test (range $XBAK_PORT_RANGE)
#   require_xbak             fail unless $XBAK is an executable
#   xbak ARGS...             run $XBAK, logging the command line
# Environment: XBAK_PORT_RANGE (lo-hi, default 24000-24999), XBAK_KEEP_WORK=1 (keep the work dir
# after success too), XBAK_TEST_WORK_ROOT (default <repo>/.work/tests).

TEST_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${XBAK_SRC:=$(cd "$TEST_LIB_DIR/../.." && pwd)}"
: "${XBAK_BUILD:=$XBAK_SRC/build}"
: "${XBAK:=$XBAK_BUILD/xbak}"
export XBAK XBAK_SRC XBAK_BUILD
TEST_NAME=${XBAK_TEST_NAME:-$(basename "${BASH_SOURCE[1]:-$0}" .sh)}
# A test run against another server than the host's 10.11 (XBAK_SERVER, scripts/lib/sandbox.sh)
# has a work dir of its own, so that both cells of a test may run at once.
case "${XBAK_SERVER:-mariadb-10.11}" in mariadb-10.11) ;; *) TEST_NAME+="-$XBAK_SERVER" ;; esac
: "${XBAK_TEST_WORK_ROOT:=$XBAK_SRC/.work/tests}"
TEST_WORK="$XBAK_TEST_WORK_ROOT/$TEST_NAME"
export XBAK_WORK="$TEST_WORK"

# shellcheck source=../../scripts/lib/sandbox.sh
. "$XBAK_SRC/scripts/lib/sandbox.sh"
# The prefix of the metadata files xbak (and the server's own tool) write for XBAK_SERVER's version
# (src/backupdir/server.cc): xtrabackup_* up to MariaDB 11.0 and for MySQL (XtraBackup's names),
# mariadb_backup_* from MariaDB 11.1.
case "$XBAK_SERVER" in mariadb-10.* | mariadb-11.0 | mysql-*) META=xtrabackup_ ;; *) META=mariadb_backup_ ;; esac
export META

# A previous run that was killed may have left servers behind in this test's work dir.
sb_kill_all
rm -rf "$TEST_WORK"
mkdir -p "$TEST_WORK"

_T_START=$(date +%s.%N)
_T_LAST=$_T_START
_T_STEP=""
_t_fmt() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }

# step "text" : "[  12.34s] text" (total elapsed), after "      (previous step: 1.23s)"
step() {
  local now; now=$(date +%s.%N)
  if [ -n "$_T_STEP" ]; then echo "          (took $(_t_fmt "$_T_LAST" "$now")s)"; fi
  printf '[%8ss] %s\n' "$(_t_fmt "$_T_START" "$now")" "$*"
  _T_LAST=$now
  _T_STEP=$*
}

fail() {
  echo "FAIL: $TEST_NAME: $*${_T_STEP:+ (during step: $_T_STEP)}" >&2
  _T_FAILED=1
  exit 1
}

assert_eq() { # EXPECTED ACTUAL [msg]
  [ "$1" == "$2" ] || fail "${3:-assert_eq}: expected '$1', got '$2'"
}
assert_ne() { # A B [msg]
  [ "$1" != "$2" ] || fail "${3:-assert_ne}: both are '$1'"
}
assert_file() { # PATH [msg] : a regular file
  [ -f "$1" ] || fail "${2:-assert_file}: no file $1"
}
assert_dir() { # PATH [msg]
  [ -d "$1" ] || fail "${2:-assert_dir}: no directory $1"
}
assert_contains() { # FILE REGEX [msg] : grep -E REGEX FILE matches
  assert_file "$1"
  grep -Eq -- "$2" "$1" || fail "${3:-assert_contains}: '$2' not found in $1"
}

require_xbak() {
  [ -x "$XBAK" ] || fail "xbak binary not found or not executable: XBAK=$XBAK"
}

# require_xbcloud: xbak and the xbcloud under test, and the object-storage helpers
# (scripts/lib/objstore.sh: MinIO, the emulators), whose servers stop with the test.
require_xbcloud() {
  require_xbak
  : "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
  [ -x "$XBCLOUD" ] || fail "xbcloud binary not found at $XBCLOUD"
  . "$XBAK_SRC/scripts/lib/objstore.sh"
  SB_ON_EXIT+=(os_cleanup)
}

xbak() { # run the xbak under test, logging the command
  echo "+ xbak $*" >&2
  "$XBAK" "$@"
}

# --- ports -----------------------------------------------------------------------------------------
: "${XBAK_PORT_RANGE:=24000-24999}"
_PORT_LOCKS="${TMPDIR:-/tmp}/xbak-ports"
_T_PORTS=()

_port_in_use() { # PORT : something accepts connections on 127.0.0.1:PORT
  (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
}

# alloc_port : print a free port, reserved (lock dir with our pid) until this test exits
alloc_port() {
  local lo=${XBAK_PORT_RANGE%-*} hi=${XBAK_PORT_RANGE#*-} span start i p owner
  span=$((hi - lo + 1))
  mkdir -p "$_PORT_LOCKS" 2> /dev/null && chmod 1777 "$_PORT_LOCKS" 2> /dev/null || true
  start=$(((RANDOM * 32768 + RANDOM + $$) % span))
  for ((i = 0; i < span; i++)); do
    p=$((lo + (start + i) % span))
    if ! mkdir "$_PORT_LOCKS/$p" 2> /dev/null; then
      owner=$(cat "$_PORT_LOCKS/$p/pid" 2> /dev/null || true)
      if [ -n "$owner" ] && kill -0 "$owner" 2> /dev/null; then continue; fi
      # stale lock (owner gone): take it over
      rm -rf "$_PORT_LOCKS/$p" 2> /dev/null || continue
      mkdir "$_PORT_LOCKS/$p" 2> /dev/null || continue
    fi
    echo $$ > "$_PORT_LOCKS/$p/pid"
    if _port_in_use "$p"; then rm -rf "$_PORT_LOCKS/$p"; continue; fi
    # alloc_port normally runs in $(...), a subshell: record the port in a file the trap reads
    echo "$p" >> "$TEST_WORK/.ports"
    echo "$p"
    return 0
  done
  fail "no free port in $XBAK_PORT_RANGE"
}

_release_ports() {
  local p
  [ -f "$TEST_WORK/.ports" ] || return 0
  while read -r p; do
    [ "$(cat "$_PORT_LOCKS/$p/pid" 2> /dev/null)" = "$$" ] && rm -rf "${_PORT_LOCKS:?}/$p"
  done < "$TEST_WORK/.ports"
  rm -f "$TEST_WORK/.ports"
}

# --- exit handling -----------------------------------------------------------------------------------
_on_err() { # STATUS LINE CMD : report the failing command and its call stack (set -e path)
  local where i
  where="$(basename "${BASH_SOURCE[1]:-?}"):$2"
  for ((i = 1; i < ${#FUNCNAME[@]} - 1; i++)); do
    where+=" <- $(basename "${BASH_SOURCE[i + 1]}"):${BASH_LINENO[i]}"
  done
  echo "FAIL: $TEST_NAME: command failed (status $1): $3" >&2
  echo "      at $where${_T_STEP:+ (during step: $_T_STEP)}" >&2
  _T_FAILED=1
}
set -E
trap '_on_err $? $LINENO "$BASH_COMMAND"' ERR

_t_diagnostics() { # on failure, before the servers are stopped: the tails of their error logs
  [ "$SB_EXIT_RC" -ne 0 ] || return 0
  local log
  while IFS= read -r log; do
    echo "----- last 15 lines of ${log#"$TEST_WORK"/} -----" >&2
    tail -n 15 "$log" >&2
  done < <(find "$TEST_WORK" -path '*/run/error.log' -type f 2> /dev/null)
}

_t_finish() { # after the servers are stopped
  _release_ports
  local total; total=$(_t_fmt "$_T_START" "$(date +%s.%N)")
  if [ "$SB_EXIT_RC" -eq 0 ]; then
    [ -n "$_T_STEP" ] && echo "          (took $(_t_fmt "$_T_LAST" "$(date +%s.%N)")s)"
    if [ "${XBAK_KEEP_WORK:-0}" != 1 ]; then rm -rf "$TEST_WORK"; fi
    echo "PASS: $TEST_NAME (${total}s)"
  else
    echo "FAIL: $TEST_NAME (exit $SB_EXIT_RC after ${total}s); work dir kept: $TEST_WORK" >&2
  fi
}

_t_kill_jobs() { # background jobs the test left running (e.g. a sysbench load), by pid
  local j
  # A job started from a function (sb_sysbench ... &) is a subshell whose command is its child:
  # the child first, or it outlives the subshell.
  for j in $(jobs -p); do
    pkill -TERM -P "$j" 2> /dev/null || true
    kill "$j" 2> /dev/null || true
  done
}

# restore_and_verify DIR LABEL: prepares the full backup in DIR with xbak --prepare, copies it back
# with xbak into a server "dst" on $dst_port, starts it, runs CHECK TABLE on every table and
# compares every table's CHECKSUM with $TEST_WORK/src.sum.
restore_and_verify() {
  local dir=$1 label=$2
  assert_contains "$dir/${META}checkpoints" '^backup_type = full-backuped$' "$label checkpoints"
  prepare_backup "$label" "$dir"
  copy_back_start "$label" "$dir"
  sb_checksums dst > "$TEST_WORK/$label.sum"
  sb_compare_checksums "$TEST_WORK/src.sum" "$TEST_WORK/$label.sum" || fail "$label: restored data differs"
  sb_stop dst
  echo "$label: $(wc -l < "$TEST_WORK/src.sum") tables identical"
}

# prepare_backup LABEL DIR : xbak --prepare --parallel=2 DIR (the log's tail on failure)
prepare_backup() {
  "$XBAK" --prepare --parallel=2 --target-dir="$2" 2> "$TEST_WORK/$1-prepare.log" ||
    { tail -n 30 "$TEST_WORK/$1-prepare.log" >&2; fail "$1: xbak --prepare failed"; }
}

# copy_back_start LABEL DIR [CNF LINES...] : copy the prepared DIR back into a new server "dst" on
# $dst_port (a running "dst" is stopped first; the lines go into its my.cnf, e.g. its encryption
# plugin), start it, CHECK TABLE EXTENDED everything. Leaves dst running.
copy_back_start() {
  local label=$1 dir=$2
  shift 2
  sb_stop dst
  rm -rf "$TEST_WORK/dst"
  sb_init_from_datadir dst "$dst_port" "$TEST_WORK/dst/data" "$@"
  "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$dir" 2> "$TEST_WORK/$label-copyback.log" ||
    { tail -n 20 "$TEST_WORK/$label-copyback.log" >&2; fail "$label: xbak --copy-back failed"; }
  if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$TEST_WORK/dst/data"; fi
  sb_start dst
  sb_check_all dst
}

# check_rows NAME LABEL TABLES ROWS : each of sbtest.sbtest1..TABLES on server NAME has exactly ROWS
# rows (sysbench oltp_write_only keeps that true at every commit: a restore of any moment must too)
check_rows() {
  local i n
  for i in $(seq 1 "$3"); do
    n=$(sb_sql "$1" "SELECT COUNT(*) FROM sbtest.sbtest$i")
    assert_eq "$4" "$n" "$2: rows in sbtest$i"
  done
  echo "$2: all $3 sysbench tables have exactly $4 rows"
}

# rc_to FILE CMD... : run CMD, write its exit status to FILE, succeed. For pipelines whose every
# part's status matters, without tripping set -e or the ERR trap; FILE appears when CMD ends.
rc_to() {
  local f=$1
  shift
  if "$@"; then echo 0 > "$f"; else echo $? > "$f"; fi
}

# server_lsn NAME : the current LSN of server NAME (Innodb_lsn_current)
server_lsn() {
  sb_sql "$1" "SELECT variable_value FROM information_schema.global_status WHERE variable_name = 'INNODB_LSN_CURRENT'"
}

# checkpoint_past NAME LSN : flush server NAME's dirty pages until its checkpoint LSN is above LSN.
# A backup's to_lsn is the server's checkpoint when it ends, so two backups with no checkpoint between
# them share it; a test that needs the chain's links to differ (a "gap") makes the checkpoint move.
checkpoint_past() {
  local name=$1 lsn=$2 i ck
  for ((i = 0; i < 300; i++)); do
    ck=$(sb_sql "$name" "SELECT variable_value FROM information_schema.global_status
      WHERE variable_name = 'INNODB_LSN_LAST_CHECKPOINT'")
    [ "$ck" -gt "$lsn" ] && return 0
    # Needs writes after LSN (the caller's); sb_flush only makes the page cleaner catch up.
    [ $((i % 20)) -eq 0 ] && sb_flush "$name" > /dev/null
    sleep 0.1
  done
  fail "$name: checkpoint still at $ck, not past $lsn, after 30 s"
}

# require_mariabackup : the reference tool (Debian's mariadb-backup) is installed
require_mariabackup() {
  command -v mariabackup > /dev/null || fail "mariabackup (Debian mariadb-backup) is needed"
}

# loop_start FUNC : runs "FUNC 1", "FUNC 2", ... in the background until loop_stop (a write load or a
# DDL loop beside a backup; a failing call does not stop it). Stopped on exit too.
_LOOP_PIDS=()
loop_start() {
  rm -f "$TEST_WORK/.loop-stop"
  (
    i=0
    while [ ! -e "$TEST_WORK/.loop-stop" ]; do
      i=$((i + 1))
      "$1" "$i" || true
    done
  ) &
  _LOOP_PIDS+=($!)
}
# loop_stop : stops every loop_start loop and waits for it
loop_stop() {
  touch "$TEST_WORK/.loop-stop"
  local p
  for p in "${_LOOP_PIDS[@]}"; do wait "$p" 2> /dev/null || true; done
  _LOOP_PIDS=()
}

SB_ON_EXIT+=(loop_stop _t_diagnostics _t_kill_jobs)
SB_ON_EXIT_LATE+=(_t_finish)
sb_cleanup_on_exit
echo "== $TEST_NAME (work dir $TEST_WORK)"

# restore_chain_from_store TAG DST_PORT SRC_SUMS CMD_ARRAY NAME...: the chain NAME... (full first)
# restored straight from object storage, each backup's `xbcloud get` into a named pipe read by
# `xbak --restore --from-stream`; then a server on DST_PORT started on the datadir, CHECK TABLE,
# and its checksums compared with SRC_SUMS (sb_checksums). CMD_ARRAY names an array holding the
# xbcloud command and its store options (e.g. ("$XBCLOUD" --s3-bucket=B ...)).
restore_chain_from_store() {
  local tag=$1 port=$2 sums=$3 n g streams=() gets=()
  local -n _cmd=$4
  shift 4
  for n in "$@"; do
    mkfifo "$TEST_WORK/s-$tag-${n//\//_}"
    "${_cmd[@]}" get --parallel=4 "$n" > "$TEST_WORK/s-$tag-${n//\//_}" 2> "$TEST_WORK/get-$tag-${n//\//_}.log" &
    gets+=($!)
    streams+=(--from-stream="$TEST_WORK/s-$tag-${n//\//_}")
  done
  "$XBAK" --restore --parallel=2 "${streams[@]}" --datadir="$TEST_WORK/data-$tag" 2> "$TEST_WORK/restore-$tag.log" ||
    { tail -n 20 "$TEST_WORK/restore-$tag.log" >&2; fail "[$tag] restore of $* from object storage"; }
  for g in "${gets[@]}"; do wait "$g" || fail "[$tag] an xbcloud get of the chain failed"; done
  sb_init_from_datadir dst "$port" "$TEST_WORK/data-$tag"
  if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$TEST_WORK/data-$tag"; fi
  sb_start dst
  sb_check_all dst
  sb_checksums dst > "$TEST_WORK/dst-$tag.sum"
  sb_compare_checksums "$sums" "$TEST_WORK/dst-$tag.sum" || fail "[$tag] the chain restored from object storage differs"
  sb_stop dst
}
