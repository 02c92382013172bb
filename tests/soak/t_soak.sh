#!/usr/bin/env bash
# Soak (issue 18, done-when 2): many hot backups in a row of a server under a write load with DDL,
# each streamed compressed through a throttled consumer, prepared by xbak, restored and checked.
# Not part of every CI run: `scripts/run-tests.sh --soak` runs it (about a minute a backup).
#
#   XBAK_SOAK_BACKUPS   how many backups (default 50)
#   XBAK_SOAK_RATE      the consumer's rate (default 2MiB; the redo race needs the backup to take
#                       long enough for the 32 MiB log to wrap several times)
#   XBAK_SOAK_TPS       sysbench transactions per second (default 300: a steady write load that a
#                       2-core machine sustains next to the backup)
#
# Every backup must complete; its prepared copy must start, pass CHECK TABLE on every table, and
# keep sysbench's invariant (oltp_write_only deletes and re-inserts the same id in one transaction,
# so each table holds exactly its initial rows at every commit). The DDL loop creates, alters,
# renames, truncates and drops tables (one with a FULLTEXT index) all the time. The last line names
# how many of the backups passed and the largest redo lag any of them saw.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
require_xbak

N=${XBAK_SOAK_BACKUPS:-50}
RATE=${XBAK_SOAK_RATE:-2MiB}
TPS=${XBAK_SOAK_TPS:-300}
TABLES=4
ROWS=20000
src_port=$(alloc_port)
dst_port=$(alloc_port)
READER="$XBAK_SRC/tests/integration/slow_reader.py"

step "source: 32 MiB redo log, sysbench tables, sample data"
sb_init src "$src_port" "innodb_log_file_size=32M"
sb_start src
sb_load_sample src
sb_load_sysbench src $TABLES $ROWS
sb_sql src "CREATE DATABASE IF NOT EXISTS ddl"

step "write load: sysbench oltp_write_only at $TPS tps, and a DDL loop"
sb_sysbench src oltp_write_only --tables=$TABLES --table-size=$ROWS --threads=2 --rate="$TPS" \
  --time=0 --report-interval=30 run > "$TEST_WORK/sysbench.log" 2>&1 &
ddl_loop() {
  local i=0
  while :; do
    i=$((i + 1))
    sb_sql src "CREATE TABLE IF NOT EXISTS ddl.ft$((i % 3)) (id INT AUTO_INCREMENT PRIMARY KEY, body TEXT,
                  FULLTEXT KEY (body)) ENGINE=InnoDB;
                INSERT INTO ddl.ft$((i % 3))(body) SELECT CONCAT('soak words ', seq, ' ', REPEAT('x', seq % 50))
                  FROM seq_1_to_200;
                CREATE TABLE ddl.t$i (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB;
                INSERT INTO ddl.t$i SELECT seq, REPEAT('v', 50) FROM seq_1_to_500;
                ALTER TABLE ddl.t$i ADD COLUMN w INT DEFAULT 7, ALGORITHM=COPY;
                RENAME TABLE ddl.t$i TO ddl.r$i;
                TRUNCATE TABLE ddl.r$i;
                DROP TABLE IF EXISTS ddl.r$((i - 2));
                DROP TABLE IF EXISTS ddl.ft$(((i + 1) % 3));" > /dev/null 2>&1 || true
    sleep 0.5
  done
}
ddl_loop &
sleep 3

passed=0
max_lag_pct=0
max_lag_line=""
for b in $(seq 1 "$N"); do
  step "backup $b of $N: stream, zstd, consumer at $RATE"
  out="$TEST_WORK/b$b"
  rm -rf "$out" "$TEST_WORK/b$((b - 1))"
  mkdir -p "$out"
  set +e
  "$XBAK" --backup --defaults-file="$(sb_cnf src)" --parallel=2 --stream=xbstream --compress=zstd \
    --tmpdir="$TEST_WORK" 2> "$TEST_WORK/backup.log" |
    python3 "$READER" "$RATE" --max-seconds 900 --label "b$b" > "$out/stream.xb"
  rc=("${PIPESTATUS[@]}")
  set -e
  [ "${rc[0]}" = 0 ] && [ "${rc[1]}" = 0 ] ||
    { tail -n 20 "$TEST_WORK/backup.log" >&2; fail "backup $b failed (xbak ${rc[0]}, reader ${rc[1]})"; }
  lag=$(grep -o 'largest redo lag [^;]*' "$TEST_WORK/backup.log" | tail -1)
  pct=$(echo "$lag" | grep -o '([0-9]*%' | tr -d '(%')
  echo "backup $b: $lag"
  if [ -n "$pct" ] && [ "$pct" -gt "$max_lag_pct" ]; then max_lag_pct=$pct; max_lag_line="backup $b: $lag"; fi

  mkdir -p "$out/full"
  "$XBAK" --extract -C "$out/full" < "$out/stream.xb" 2> "$TEST_WORK/extract.log" ||
    { tail "$TEST_WORK/extract.log" >&2; fail "backup $b: extract failed"; }
  rm -f "$out/stream.xb"
  "$XBAK" --decompress --remove-original --target-dir="$out/full" 2> "$TEST_WORK/decompress.log" ||
    { tail "$TEST_WORK/decompress.log" >&2; fail "backup $b: decompress failed"; }
  prepare_backup "backup-$b" "$out/full"
  copy_back_start "backup-$b" "$out/full"
  check_rows dst "backup-$b" $TABLES "$ROWS"
  sb_stop dst
  passed=$((passed + 1))
  echo "backup $b: restored, CHECK TABLE clean, $TABLES x $ROWS sysbench rows"
done

grep -E "transactions:|queries:" "$TEST_WORK/sysbench.log" || true
echo "largest redo lag of all backups: ${max_lag_line:-none measured}"
echo "soak: $passed passed, $((N - passed)) failed"
