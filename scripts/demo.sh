#!/usr/bin/env bash
# The xbak demo, on a fresh Debian 12 machine: installs what it needs, builds xbak and xbcloud,
# starts a private MariaDB server with sample data and a sysbench write load and a local MinIO,
# streams a hot full backup over 4 named pipes into `xbcloud put`, then a compressed incremental
# through stdout, gets both back with `xbcloud get` (the full one over 4 pipes), applies the
# backup's redo log and then the incremental's deltas and redo log with `xbak --prepare --parallel`
# (no mariabackup involved), restores with xbak --copy-back, starts a server on the restored
# datadir and verifies it. Cleans up all servers it starts.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

say "installing dependencies (Debian packages)"
bash scripts/install-deps.sh

say "building xbak and xbcloud"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build xbak xbcloud > /dev/null
XBAK=$ROOT/build/xbak
XBCLOUD=$ROOT/build/xbcloud

say "building MinIO once (go install, about 4 minutes the first time; cached afterwards)"
scripts/build-go-tools.sh > /dev/null

export XBAK_WORK=$ROOT/.work/demo
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"
mkdir -p "$XBAK_WORK"
. scripts/lib/objstore.sh   # exports the test credentials as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
SB_ON_EXIT+=(os_cleanup)
sb_cleanup_on_exit

say "starting MinIO on 127.0.0.1:23900 with a bucket 'backups'"
os_minio_start 23900 "$XBAK_WORK/minio"
os_bucket_create 23900 backups
S3=(--s3-endpoint=http://127.0.0.1:23900 --s3-bucket=backups --parallel=8)

say "starting a sandbox MariaDB on 127.0.0.1:23306 with sample data"
sb_init demo 23306
sb_start demo
sb_load_sample demo
sb_load_sysbench demo 4 20000
sb_load_many demo 200

say "sysbench oltp_write_only keeps writing during the backups"
sb_sysbench demo oltp_write_only --tables=4 --table-size=20000 --threads=2 --time=600 run \
  > "$XBAK_WORK/sysbench.log" 2>&1 &
SB=$!
sleep 2

say "full hot backup to S3 over 4 named pipes: xbak --backup --fifo-streams=4 & xbcloud put --fifo-streams=4"
FIFO=$XBAK_WORK/fifos
"$XBCLOUD" put "${S3[@]}" --fifo-streams=4 --fifo-dir="$FIFO" demo-full &
PUT=$!
"$XBAK" --backup --defaults-file="$(sb_cnf demo)" --parallel=2 --stream=xbstream --fifo-streams=4 --fifo-dir="$FIFO"
wait "$PUT"

say "the full backup's LSN, read back from S3 (xbcloud get NAME FILE)"
"$XBCLOUD" get "${S3[@]}" demo-full xtrabackup_checkpoints | "$XBAK" --extract -C "$XBAK_WORK/meta"
cat "$XBAK_WORK/meta/xtrabackup_checkpoints"
FULL_LSN=$(awk '/^to_lsn/ {print $3}' "$XBAK_WORK/meta/xtrabackup_checkpoints")

say "more writes (sysbench keeps going, plus DDL), then an incremental backup, compressed, through stdout"
sb_sql demo "CREATE TABLE many.demo_new (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
  INSERT INTO many.demo_new VALUES (1,'after'),(2,'the full');
  DROP TABLE many.t00007; UPDATE many.t00001 SET v='changed'"
sleep 3
"$XBAK" --backup --defaults-file="$(sb_cnf demo)" --parallel=2 --stream=xbstream --compress=zstd \
  --incremental-lsn="$FULL_LSN" | "$XBCLOUD" put "${S3[@]}" demo-inc1

kill "$SB" 2> /dev/null || true
wait "$SB" 2> /dev/null || true
grep -E "transactions:" "$XBAK_WORK/sysbench.log" || true
sb_checksums demo | grep -v '^sbtest\.' > "$XBAK_WORK/src.sum"

say "the incident: get both backups back from S3 (the full one over 4 pipes), verify every object's MD5"
"$XBCLOUD" get "${S3[@]}" --fifo-streams=4 --fifo-dir="$XBAK_WORK/get-fifos" demo-full &
GET=$!
"$XBAK" --extract --fifo-streams=4 --fifo-dir="$XBAK_WORK/get-fifos" -C "$XBAK_WORK/full"
wait "$GET"
"$XBCLOUD" get "${S3[@]}" demo-inc1 | "$XBAK" --extract -C "$XBAK_WORK/inc1"
"$XBAK" --decompress --target-dir="$XBAK_WORK/inc1" --remove-original
cat "$XBAK_WORK/inc1/xtrabackup_checkpoints"

say "prepare with xbak alone: the full backup's redo, then the incremental's deltas and redo (--parallel=4)"
"$XBAK" --prepare --apply-log-only --parallel=4 --target-dir="$XBAK_WORK/full"
"$XBAK" --prepare --apply-log-only --parallel=4 --target-dir="$XBAK_WORK/full" --incremental-dir="$XBAK_WORK/inc1"
"$XBAK" --prepare --parallel=4 --target-dir="$XBAK_WORK/full"   # the final --prepare: nothing left to do

say "restore: xbak --copy-back into an empty datadir, start a second server on 127.0.0.1:23307"
sb_init_from_datadir restored 23307 "$XBAK_WORK/restored/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf restored)" --parallel=2 --target-dir="$XBAK_WORK/full"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$XBAK_WORK/restored/data"; fi
sb_start restored

say "verify: CHECK TABLE on every table, and the sysbench invariant (20000 rows per table)"
sb_check_all restored
for i in 1 2 3 4; do
  n=$(sb_sql restored "SELECT COUNT(*) FROM sbtest.sbtest$i")
  [ "$n" = 20000 ] || { echo "sbtest$i has $n rows, expected 20000" >&2; exit 1; }
done
echo "sysbench tables: 4 x 20000 rows, as at every commit point"
say "verify: CHECKSUM TABLE of the tables sysbench did not touch equals the source (taken after the incremental)"
[ "$(sb_sql restored 'SELECT v FROM many.demo_new WHERE id=2')" = "the full" ] || { echo "demo_new missing" >&2; exit 1; }
sb_checksums restored | grep -v '^sbtest\.' > "$XBAK_WORK/dst.sum"
sb_compare_checksums "$XBAK_WORK/src.sum" "$XBAK_WORK/dst.sum"
echo "$(wc -l < "$XBAK_WORK/src.sum") tables identical"

say "demo complete: the restored server holds the backup's data"
