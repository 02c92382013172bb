#!/usr/bin/env bash
# The whole of xbak on AArch64 (issue 21), run by scripts/cross-aarch64.sh after the cross build:
# the AArch64 xbak and xbcloud under qemu-user, against what the x86-64 build does.
#   1. A full backup taken by the x86-64 xbak while sysbench writes, and an incremental after, are
#      verified (--verify) and prepared (--prepare --apply-log-only, then --incremental-dir) by
#      both builds: every file of the two prepared backups is byte-identical, and the AArch64 one,
#      copied back, starts and holds the source's data (CHECKSUM TABLE of every table).
#   2. xbcloud put and get against MinIO on loopback, AArch64 and x86-64 crossed both ways: the
#      streams extract to the same files as the stream that was put.
# Needs: XBAK, XBCLOUD (x86-64), XBAK_ARM, XBCLOUD_ARM (AArch64), qemu-aarch64-static.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
require_xbak
: "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
for b in "$XBCLOUD" "${XBAK_ARM:-}" "${XBCLOUD_ARM:-}"; do
  [ -n "$b" ] && [ -x "$b" ] || fail "binary not found: '$b' (XBCLOUD, XBAK_ARM, XBCLOUD_ARM)"
done
file -b "$XBAK_ARM" | grep -q 'ARM aarch64' || fail "$XBAK_ARM is not an AArch64 binary"
QEMU=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static is needed"
arm() { "$QEMU" "$@"; }
. "$XBAK_SRC/scripts/lib/objstore.sh"
SB_ON_EXIT+=(os_cleanup)

src_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
W=$TEST_WORK

step "the AArch64 binaries run"
arm "$XBAK_ARM" --version
arm "$XBCLOUD_ARM" --version

step "source server: sample data and sysbench, written to during the backups"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
cnf=$(sb_cnf src)
# sysbench itself in the background (not the sb_sysbench function), so that $! is its pid.
mapfile -t sbconn < <(sb_sysbench_args src)
sysbench oltp_write_only "${sbconn[@]}" --tables=2 --table-size=5000 --threads=1 --rate=50 --time=600 run \
  > "$W/sysbench.log" 2>&1 &
sbpid=$!
sleep 2

step "x86-64 xbak: a full backup under load, then an incremental of the final state"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/full" 2> "$W/full.log" ||
  { tail -n 20 "$W/full.log" >&2; fail "full backup failed"; }
kill -0 "$sbpid" 2> /dev/null || { tail "$W/sysbench.log" >&2; fail "sysbench stopped during the full backup"; }
kill "$sbpid"
wait "$sbpid" 2> /dev/null || true
# The incremental is taken after the writes, so that the chain restored must equal the source now.
sb_checksums src > "$W/src.sum"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/full" \
  --target-dir="$W/inc" 2> "$W/inc.log" || { tail -n 20 "$W/inc.log" >&2; fail "incremental failed"; }

step "--verify: the same verdict from both builds"
for d in full inc; do
  args=(--verify --target-dir="$W/full")
  [ "$d" = inc ] && args+=(--incremental-dir="$W/inc")
  "$XBAK" "${args[@]}" > "$W/verify-x86-$d.out" 2> "$W/verify-x86-$d.log" ||
    { tail "$W/verify-x86-$d.log" >&2; fail "x86-64 --verify of $d failed"; }
  arm "$XBAK_ARM" "${args[@]}" > "$W/verify-arm-$d.out" 2> "$W/verify-arm-$d.log" ||
    { tail "$W/verify-arm-$d.log" >&2; fail "AArch64 --verify of $d failed"; }
  # The reports, without timings.
  diff <(sed -E 's/[0-9.]+ ?(s|ms|MiB\/s)\b//g' "$W/verify-x86-$d.out") \
    <(sed -E 's/[0-9.]+ ?(s|ms|MiB\/s)\b//g' "$W/verify-arm-$d.out") ||
    fail "--verify of $d reports differently on AArch64"
  echo "verify $d: $(tail -n 1 "$W/verify-arm-$d.out")"
done

step "--prepare by both builds: byte-identical results"
for a in x86 arm; do
  cp -a "$W/full" "$W/full-$a"
  cp -a "$W/inc" "$W/inc-$a"
done
"$XBAK" --prepare --apply-log-only --parallel=2 --target-dir="$W/full-x86" 2> "$W/prep-x86-1.log"
"$XBAK" --prepare --parallel=2 --target-dir="$W/full-x86" --incremental-dir="$W/inc-x86" 2> "$W/prep-x86-2.log"
t0=$SECONDS
arm "$XBAK_ARM" --prepare --apply-log-only --parallel=2 --target-dir="$W/full-arm" 2> "$W/prep-arm-1.log" ||
  { tail -n 20 "$W/prep-arm-1.log" >&2; fail "AArch64 --prepare --apply-log-only failed"; }
arm "$XBAK_ARM" --prepare --parallel=2 --target-dir="$W/full-arm" --incremental-dir="$W/inc-arm" \
  2> "$W/prep-arm-2.log" || { tail -n 20 "$W/prep-arm-2.log" >&2; fail "AArch64 incremental --prepare failed"; }
echo "AArch64 prepare under qemu: $((SECONDS - t0)) s"
n=$(find "$W/full-x86" -type f | wc -l)
diff -r "$W/full-x86" "$W/full-arm" > "$W/prepared.diff" ||
  { head -n 20 "$W/prepared.diff" >&2; fail "the AArch64 prepare differs from the x86-64 one"; }
diff -r "$W/inc-x86" "$W/inc-arm" > /dev/null || fail "the incremental directories differ after prepare"
echo "prepared backups: all $n files byte-identical"

step "the AArch64-prepared chain restored: the source's data"
copy_back_start arm-prepared "$W/full-arm"
sb_checksums dst > "$W/arm-prepared.sum"
sb_compare_checksums "$W/src.sum" "$W/arm-prepared.sum" || fail "the AArch64-prepared chain restored differs"
check_rows dst arm-prepared 2 5000
sb_stop dst
echo "arm-prepared: $(wc -l < "$W/src.sum") tables identical"

step "xbcloud put/get on MinIO, AArch64 and x86-64 crossed"
os_minio_start "$s3_port" "$W/minio"
os_bucket_create "$s3_port" xbak-cross
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket=xbak-cross --progress-interval=0)
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream > "$W/b.xbs" 2> "$W/b.log"
"$XBAK" --extract -C "$W/ref" < "$W/b.xbs"
arm "$XBCLOUD_ARM" put "${S3[@]}" --parallel=4 from-arm < "$W/b.xbs" 2> "$W/put-arm.log" ||
  { cat "$W/put-arm.log" >&2; fail "AArch64 xbcloud put failed"; }
"$XBCLOUD" put "${S3[@]}" --parallel=4 from-x86 < "$W/b.xbs" 2> "$W/put-x86.log"
for pair in "arm from-x86" "x86 from-arm" "arm from-arm"; do
  set -- $pair
  bin=$XBCLOUD
  [ "$1" = arm ] && bin="$QEMU $XBCLOUD_ARM"
  $bin get "${S3[@]}" --parallel=4 "$2" 2> "$W/get-$1-$2.log" | "$XBAK" --extract -C "$W/got-$1-$2" ||
    { cat "$W/get-$1-$2.log" >&2; fail "$1 xbcloud get $2 | xbak --extract failed"; }
  diff -r "$W/ref" "$W/got-$1-$2" > /dev/null || fail "$1 get of $2: extracted files differ from the stream put"
  echo "$1 xbcloud get of $2: $(find "$W/ref" -type f | wc -l) files identical"
done
arm "$XBCLOUD_ARM" verify "${S3[@]}" from-x86 2> "$W/verify-s3.log" ||
  { cat "$W/verify-s3.log" >&2; fail "AArch64 xbcloud verify failed"; }
sb_stop src
