#!/usr/bin/env bash
# Issue "trustworthy", disk full: the target is a 20 MiB tmpfs, the data about 30 MiB.
#   1. xbak --backup --target-dir on it: exit != 0 within a timeout, the error names the file and
#      says "No space left on device", no ${META}checkpoints, the source server untouched
#      (same checksums, still takes writes, no BACKUP STAGE left).
#   2. xbak --extract -C on it: the same (and no complete-looking file).
#   3. xbak --copy-back into a datadir on it: the same.
# Needs root (mount -t tmpfs); without it the test is skipped with a message.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

W=$TEST_WORK
mnt="$W/small"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=20m,mode=0755 xbak-test-full "$mnt" 2> "$W/mount.err"; then
  echo "SKIP: cannot mount a tmpfs ($(cat "$W/mount.err")); run as root"
  exit 0
fi
unmount_small() { umount "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null || true; }
SB_ON_EXIT+=(unmount_small)

src_port=$(alloc_port)
dst_port=$(alloc_port)
step "source server with about 30 MiB of data"
sb_init src "$src_port"
sb_start src
cnf=$(sb_cnf src)
sb_load_sample src
sb_load_sysbench src 2 60000
sb_sql src "CREATE DATABASE IF NOT EXISTS test; CREATE TABLE IF NOT EXISTS test.alive (i INT)"
sb_checksums src > "$W/src.sum"

# full_fails LABEL LOG DIR : the command failed with ENOSPC named, DIR holds nothing complete
full_fails() {
  local label=$1 log=$2 dir=$3 rc=$4
  [ "$rc" -ne 0 ] || fail "$label: exit 0 on a full disk"
  [ "$rc" -ne 124 ] || fail "$label: still running after 120 s (hang on a full disk)"
  grep -q 'No space left on device' "$log" || { cat "$log" >&2; fail "$label: the error does not say 'No space left on device'"; }
  [ ! -e "$dir/${META}checkpoints" ] || fail "$label: ${META}checkpoints exists on the full disk"
  echo "$label: exit $rc: $(grep -m1 'No space left' "$log" | cut -c1-200)"
}
source_untouched() {
  sb_checksums src > "$W/src-after.sum"
  sb_compare_checksums "$W/src.sum" "$W/src-after.sum" || fail "the source data changed"
  sb_sql src "INSERT INTO test.alive VALUES (1); DELETE FROM test.alive" || fail "the source does not take writes"
}

step "backup onto the full disk"
rc=0
timeout 120 "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --target-dir="$mnt/full" 2> "$W/b.log" || rc=$?
full_fails backup "$W/b.log" "$mnt/full" "$rc"
source_untouched
rm -rf "${mnt:?}/full"

step "extract onto the full disk"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream > "$W/full.xbs" 2> "$W/s.log" ||
  { tail "$W/s.log" >&2; fail "stream backup"; }
rc=0
timeout 120 "$XBAK" --extract -C "$mnt/x" < "$W/full.xbs" 2> "$W/x.log" || rc=$?
full_fails extract "$W/x.log" "$mnt/x" "$rc"
rm -rf "${mnt:?}/x"

step "copy-back onto the full disk"
"$XBAK" --extract -C "$W/full" < "$W/full.xbs" 2> /dev/null
mariabackup --no-defaults --prepare --target-dir="$W/full" > "$W/prepare.log" 2>&1 ||
  { tail "$W/prepare.log" >&2; fail "prepare"; }
sb_init_from_datadir dst "$dst_port" "$mnt/data"
rc=0
timeout 120 "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" 2> "$W/cb.log" || rc=$?
full_fails copy-back "$W/cb.log" "$mnt/data" "$rc"
[ -e "$W/full/${META}checkpoints" ] || fail "copy-back touched the backup"
source_untouched
