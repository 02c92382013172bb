#!/usr/bin/env bash
# Issue "trustworthy", security:
#   1. a password given on the command line (--password=S, --password S, -pS) is not in
#      /proc/PID/cmdline of the running backup, nor in its stderr, nor in any file of the backup
#      (${META}info's tool_command shows it masked), nor in --help output; same for xbcloud's
#      --s3-secret-key.
#   2. under umask 022, every file and directory a backup, an extraction, a decompression and a
#      copy-back create is 0640/0750 or tighter: nothing is world-readable.
#   3. xbcloud --insecure prints a warning; TLS verification is on by default (t_xbcloud.sh
#      checks that an untrusted certificate is refused).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
: "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
[ -x "$XBCLOUD" ] || fail "xbcloud binary not found at $XBCLOUD"
umask 022

src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK
secret='Pw-s3cr3t-9f8e7d'
step "source server and a backup user with a password"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 20000
sb_sql src "CREATE USER bk@'127.0.0.1' IDENTIFIED BY '$secret';
  GRANT RELOAD, PROCESS, BINLOG MONITOR, SELECT ON *.* TO bk@'127.0.0.1'"
conn=(--no-defaults --host=127.0.0.1 --port="$src_port" --user=bk --datadir="$(sb_datadir src)")

# backup_with LABEL PASSWORD-ARGS... : a streamed backup held up by a slow reader, its
# /proc/PID/cmdline read while it runs
backup_with() {
  local label=$1 pid job
  shift
  "$XBAK" --backup "${conn[@]}" "$@" --stream=xbstream 2> "$W/$label.err" |
    { sleep 2; "$XBAK" --extract -C "$W/$label" 2> "$W/$label-x.err"; } &
  local job=$!
  sleep 1
  pid=$(pgrep -f -n -- "--stream=xbstream.*--port=$src_port|--port=$src_port.*--stream=xbstream" || true)
  [ -n "$pid" ] || pid=$(pgrep -n -x xbak || true)
  [ -n "$pid" ] || fail "$label: the backup is not running"
  tr '\0' ' ' < "/proc/$pid/cmdline" > "$W/$label.cmdline"
  wait "$job"
  assert_contains "$W/$label/${META}checkpoints" '^backup_type = full-backuped$' "$label complete"
  if grep -q -- "$secret" "$W/$label.cmdline"; then fail "$label: password visible in /proc/$pid/cmdline"; fi
  if grep -q -- "$secret" "$W/$label.err"; then fail "$label: password in stderr"; fi
  if grep -rlq -- "$secret" "$W/$label"; then fail "$label: password in $(grep -rl -- "$secret" "$W/$label")"; fi
  echo "$label: cmdline while running: $(cut -c1-160 "$W/$label.cmdline")"
  echo "$label: tool_command = $(sed -n 's/^tool_command = //p' "$W/$label/${META}info")"
}

step "the password on the command line is wiped and never written"
backup_with eq "--password=$secret"
backup_with short "-p$secret"
backup_with sep --password "$secret"
MYSQL_PWD=$secret "$XBAK" --help --password="$secret" > "$W/help.out" 2>&1 || true
if grep -q -- "$secret" "$W/help.out"; then fail "password in --help output"; fi
rc=0
"$XBAK" --backup --no-defaults --host=127.0.0.1 --port="$src_port" --user=bk --password="wrong-$secret" \
  --target-dir="$W/denied" 2> "$W/denied.err" || rc=$?
assert_ne 0 "$rc" "a wrong password must fail"
if grep -q -- "$secret" "$W/denied.err"; then fail "a wrong password is echoed in the error"; fi
echo "wrong password: $(tail -n 1 "$W/denied.err" | cut -c1-160)"

step "file modes under umask 022: nothing world-readable"
check_modes() { # DIR LABEL [MINDEPTH]: MINDEPTH 1 when DIR itself was made by someone else
  local bad
  bad=$(find "$1" -mindepth "${3:-0}" \( -type f -perm /o=rwx \) -o \( -type d -perm /o=rwx \) -o \( -type f -perm /g=wx \) -o \( -type d -perm /g=w \) | head -5)
  [ -z "$bad" ] || { ls -la $bad >&2; fail "$2: world-accessible or group-writable entries"; }
  echo "$2: $(find "$1" -type f | wc -l) files, modes: $(find "$1" -printf '%m\n' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
}
"$XBAK" --backup --defaults-file="$(sb_cnf src)" --target-dir="$W/dirbk" 2> /dev/null || fail "backup to a directory"
check_modes "$W/dirbk" "backup --target-dir"
check_modes "$W/eq" "extract"
"$XBAK" --backup --defaults-file="$(sb_cnf src)" --incremental-basedir="$W/dirbk" --target-dir="$W/inc" 2> /dev/null ||
  fail "incremental"
check_modes "$W/inc" "incremental backup"
"$XBAK" --backup --defaults-file="$(sb_cnf src)" --compress=zstd --target-dir="$W/zbk" 2> /dev/null || fail "compressed"
"$XBAK" --decompress --remove-original --target-dir="$W/zbk" 2> /dev/null || fail "decompress"
check_modes "$W/zbk" "decompress"
mariabackup --no-defaults --prepare --target-dir="$W/dirbk" > "$W/prepare.log" 2>&1 || fail "prepare"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/dirbk" 2> "$W/cb.log" ||
  { cat "$W/cb.log" >&2; fail "copy-back"; }
check_modes "$W/dst/data" "copy-back" 1  # the datadir itself is the sandbox's

step "xbcloud: --insecure warns, the secret key is wiped from the command line"
rc=0
"$XBCLOUD" get --insecure --s3-endpoint=https://127.0.0.1:9 --s3-bucket=xbak-test --max-retries=0 x > /dev/null 2> "$W/insecure.err" || rc=$?
assert_contains "$W/insecure.err" 'WARNING.*--insecure: the TLS certificate of the endpoint is not verified'
"$XBCLOUD" get --s3-endpoint=http://127.0.0.1:9 --s3-bucket=xbak-test --s3-access-key=AK --s3-secret-key="$secret" \
  --max-retries=4 x > /dev/null 2> "$W/xbcloud.err" &
xpid=$!
sleep 0.5
if kill -0 "$xpid" 2> /dev/null; then
  tr '\0' ' ' < "/proc/$xpid/cmdline" > "$W/xbcloud.cmdline" || true
  if grep -q -- "$secret" "$W/xbcloud.cmdline"; then fail "xbcloud: secret key visible in /proc/PID/cmdline"; fi
  echo "xbcloud cmdline while running: $(cat "$W/xbcloud.cmdline")"
fi
wait "$xpid" 2> /dev/null || true
if grep -q -- "$secret" "$W/xbcloud.err"; then fail "xbcloud: secret in stderr"; fi
echo "xbcloud: $(tail -n 1 "$W/xbcloud.err" | cut -c1-160)"
