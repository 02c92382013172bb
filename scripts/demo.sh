#!/usr/bin/env bash
# The xbak demo, on a fresh Debian 12 machine: installs what it needs, builds xbak, starts a
# private MariaDB server with sample data and a sysbench write load, takes a hot full backup
# streamed over 4 named pipes into xbak --extract, then a compressed incremental through stdout,
# prepares the chain (mariabackup --prepare: xbak's own redo apply is not written yet), restores
# with xbak --copy-back, starts a server on the restored datadir and verifies it. Cleans up all
# servers it starts. (xbcloud/S3 joins the demo when it exists.)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

say "installing dependencies (Debian packages)"
bash scripts/install-deps.sh

say "building xbak"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build xbak > /dev/null
XBAK=$ROOT/build/xbak

export XBAK_WORK=$ROOT/.work/demo
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"
mkdir -p "$XBAK_WORK"
sb_cleanup_on_exit

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

say "full hot backup streamed over 4 named pipes: xbak --backup --stream=xbstream --fifo-streams=4 | xbak --extract"
FIFO=$XBAK_WORK/fifos
"$XBAK" --extract --fifo-streams=4 --fifo-dir="$FIFO" -C "$XBAK_WORK/full" &
XPID=$!
"$XBAK" --backup --defaults-file="$(sb_cnf demo)" --parallel=2 --stream=xbstream --fifo-streams=4 --fifo-dir="$FIFO"
wait "$XPID"
cat "$XBAK_WORK/full/xtrabackup_checkpoints"

say "more writes (sysbench keeps going, plus DDL), then an incremental backup, compressed, through stdout"
sb_sql demo "CREATE TABLE many.demo_new (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
  INSERT INTO many.demo_new VALUES (1,'after'),(2,'the full');
  DROP TABLE many.t00007; UPDATE many.t00001 SET v='changed'"
sleep 3
"$XBAK" --backup --defaults-file="$(sb_cnf demo)" --parallel=2 --stream=xbstream --compress=zstd \
  --incremental-basedir="$XBAK_WORK/full" | "$XBAK" --extract -C "$XBAK_WORK/inc1"
"$XBAK" --decompress --target-dir="$XBAK_WORK/inc1" --remove-original
cat "$XBAK_WORK/inc1/xtrabackup_checkpoints"

kill "$SB" 2> /dev/null || true
wait "$SB" 2> /dev/null || true
grep -E "transactions:" "$XBAK_WORK/sysbench.log" || true
sb_checksums demo | grep -v '^sbtest\.' > "$XBAK_WORK/src.sum"

say "prepare: the full backup, then the incremental"
mariabackup --no-defaults --prepare --target-dir="$XBAK_WORK/full" > "$XBAK_WORK/prepare.log" 2>&1
tail -n 1 "$XBAK_WORK/prepare.log"
mariabackup --no-defaults --prepare --target-dir="$XBAK_WORK/full" --incremental-dir="$XBAK_WORK/inc1" \
  > "$XBAK_WORK/prepare-inc.log" 2>&1
tail -n 1 "$XBAK_WORK/prepare-inc.log"

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
