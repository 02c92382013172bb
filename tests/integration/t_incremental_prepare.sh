#!/usr/bin/env bash
# Issue "incremental backups": full, writes touching many tables (CREATE, DROP, ALTER with a
# rebuild, RENAME, TRUNCATE between backups), inc1, more writes, inc2. The chain is prepared by
# xbak alone (--prepare --parallel=8: deltas, then each step's redo log), restored, and every
# table's CHECKSUM equals the source at inc2's point. The same chain prepared by mariabackup alone
# gives identical data files.
# Interop: xbak applies mariabackup's incrementals. Chain errors: wrong order, applied twice.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

src_port=$(alloc_port)
dst_port=$(alloc_port)
sb_init src "$src_port"
sb_start src
cnf=$(sb_cnf src)
W=$TEST_WORK

step "data, then a full backup"
sb_load_sample src
sb_load_sysbench src 2 5000
sb_load_many src 200
sb_sql src "CREATE TABLE many.to_drop (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO many.to_drop VALUES (1),(2);
  CREATE TABLE many.to_rename (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO many.to_rename VALUES (1,1);
  CREATE TABLE many.to_truncate (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO many.to_truncate VALUES (7);
  CREATE TABLE many.to_alter (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO many.to_alter VALUES (1,10),(2,20);"
sb_flush src   # real page images on disk, so inc1 holds true deltas
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/full" 2> "$W/full.log" || { tail "$W/full.log"; fail "full backup"; }

writes() { # N : update many tables, DDL of every kind
  local n=$1 i
  {
    for i in $(seq 0 3 199); do printf "UPDATE many.t%05d SET v=CONCAT(v,'-%s') WHERE id=1;\n" "$i" "$n"; done
    echo "UPDATE sbtest.sbtest1 SET k=k+1 WHERE id <= 2000;"
    echo "DELETE FROM sbtest.sbtest2 WHERE id % 7 = $n;"
    echo "CREATE TABLE many.created_$n (id INT PRIMARY KEY, s TEXT) ENGINE=InnoDB;"
    echo "INSERT INTO many.created_$n SELECT seq, REPEAT('c', 300) FROM test.seq_1_to_2000;"
    echo "INSERT INTO xs_engines.t_myisam (id, a, b) VALUES (1000 + $n, 'inc$n', 'myisam row');" 
  } > "$W/writes$n.sql"
  sb_sql src "CREATE DATABASE IF NOT EXISTS test"
  sb_sql src < "$W/writes$n.sql"
}

step "writes + DDL, then inc1"
writes 1
sb_sql src "DROP TABLE many.to_drop; RENAME TABLE many.to_rename TO many.renamed; TRUNCATE TABLE many.to_truncate;
  ALTER TABLE many.to_alter ADD COLUMN w INT DEFAULT 5, ALGORITHM=COPY; DROP TABLE many.t00199"
sb_flush src   # the checkpoint moves, so the chain check can tell the backups apart
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/full" --target-dir="$W/inc1" 2> "$W/inc1.log" ||
  { tail "$W/inc1.log"; fail "inc1"; }
assert_contains "$W/inc1/${META}checkpoints" '^backup_type = incremental$'
assert_file "$W/inc1/ibdata1.delta"
assert_file "$W/inc1/ibdata1.meta"

[ ! -e "$W/inc1/many/to_drop.ibd.delta" ] || fail "a dropped table has a delta"

step "more writes, then inc2"
writes 2
sb_sql src "ALTER TABLE many.renamed ADD INDEX (v); INSERT INTO many.to_truncate VALUES (8)"
sb_flush src
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/inc1" --target-dir="$W/inc2" 2> "$W/inc2.log" ||
  { tail "$W/inc2.log"; fail "inc2"; }
sb_checksums src > "$W/src.sum"
echo "source at inc2: $(wc -l < "$W/src.sum") tables"
for d in full inc1 inc2; do cp -a "$W/$d" "$W/mb-$d"; done   # for the mariabackup-only chain

step "chain errors are refused before anything is written"
xbak --prepare --parallel=4 --target-dir="$W/full" 2> "$W/p0.log" || { tail "$W/p0.log"; fail "prepare full"; }
cp -a "$W/full" "$W/full-before"
if "$XBAK" --prepare --apply-log-only --target-dir="$W/full" --incremental-dir="$W/inc2" 2> "$W/order.log"; then
  fail "inc2 applied before inc1"
fi
assert_contains "$W/order.log" "LSN"
diff -r "$W/full" "$W/full-before" > /dev/null || fail "a refused incremental changed the base"

step "an apply killed at any point is detected and finished by re-running it"
cp -a "$W/full-before" "$W/ref"
xbak --prepare --apply-log-only --parallel=8 --target-dir="$W/ref" --incremental-dir="$W/inc1" 2> "$W/ref.log" ||
  { tail "$W/ref.log"; fail "reference apply"; }
inc1_to_lsn=$(grep -o '^to_lsn = [0-9]*' "$W/inc1/${META}checkpoints" | grep -o '[0-9]*$')
for delay in 0.02 0.1 0.2 0.3 0.4 0.6; do
  rm -rf "$W/killed"; cp -a "$W/full-before" "$W/killed"
  "$XBAK" --prepare --apply-log-only --parallel=8 --target-dir="$W/killed" --incremental-dir="$W/inc1" 2> /dev/null &
  pid=$!; sleep "$delay"; kill -9 "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true
  if [ -e "$W/killed/xbak_incremental_in_progress" ]; then
    state="interrupted in the deltas"
    if [ -e "$W/killed/${META}checkpoints" ]; then
      # Killed between writing the marker and removing ${META}checkpoints (the order that
      # never leaves a base with neither): nothing else may have changed yet.
      diff -r -x xbak_incremental_in_progress "$W/killed" "$W/full-before" > /dev/null ||
        fail "an interrupted apply left ${META}checkpoints in a base it had changed (delay $delay)"
      state="interrupted as it began"
    fi
    if "$XBAK" --prepare --apply-log-only --target-dir="$W/killed" --incremental-dir="$W/inc2" 2> "$W/k.log"; then
      fail "another incremental was applied over an interrupted apply"
    fi
    assert_contains "$W/k.log" "interrupted"
  elif grep -q '^backup_type = full-backuped' "$W/killed/${META}checkpoints"; then
    state="interrupted in the redo"
    if "$XBAK" --copy-back --target-dir="$W/killed" --datadir="$W/nowhere" 2> /dev/null; then
      fail "copy-back accepted a backup whose redo apply was interrupted"
    fi
  elif grep -q "^to_lsn = $inc1_to_lsn\$" "$W/killed/${META}checkpoints"; then
    state="finished before the kill"
  else
    state="killed before it changed anything"
  fi
  if [ "$state" != "finished before the kill" ]; then
    "$XBAK" --prepare --apply-log-only --parallel=8 --target-dir="$W/killed" --incremental-dir="$W/inc1" 2> "$W/k2.log" ||
      { tail "$W/k2.log"; fail "re-running an apply killed after $delay s"; }
  fi
  diff -r "$W/killed" "$W/ref" > "$W/kdiff" || { head "$W/kdiff"; fail "killed after $delay s ($state) then re-run: differs"; }
  echo "killed after ${delay}s ($state): re-run gives the same files"
done
rm -rf "$W/killed" "$W/ref"

step "xbak applies inc1 and inc2 (parallel 8): deltas and redo"
apply() { # INC
  xbak --prepare --apply-log-only --parallel=8 --target-dir="$W/full" --incremental-dir="$W/$1" 2> "$W/apply-$1.log" ||
    { tail -n 20 "$W/apply-$1.log"; fail "xbak --prepare --incremental-dir=$1"; }
  grep -E "applied" "$W/apply-$1.log" | tail -n 3
  assert_contains "$W/full/${META}checkpoints" '^backup_type = log-applied$'
}
apply inc1
if "$XBAK" --prepare --apply-log-only --target-dir="$W/full" --incremental-dir="$W/inc1" 2> "$W/twice.log"; then
  fail "inc1 applied twice"
fi
apply inc2

step "restore and verify against the source at inc2"
restore() { # DIR
  rm -rf "$W/dst"
  sb_init_from_datadir dst "$dst_port" "$W/dst/data"
  "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$1" 2> "$W/cb.log" || { cat "$W/cb.log"; fail "copy-back $1"; }
  if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
  sb_start dst
  sb_check_all dst
  sb_checksums dst > "$W/dst.sum"
  sb_compare_checksums "$W/src.sum" "$W/dst.sum" || fail "restore of $1 differs from the source"
  [ "$(sb_sql dst 'SELECT COUNT(*) FROM many.created_2')" = 2000 ] || fail "created_2 rows"
  sb_stop dst
}
restore "$W/full"

step "the same chain prepared by mariabackup alone gives identical data files"
mariabackup --no-defaults --prepare --target-dir="$W/mb-full" > "$W/mb0.log" 2>&1
for i in inc1 inc2; do
  mariabackup --no-defaults --prepare --target-dir="$W/mb-full" --incremental-dir="$W/mb-$i" > "$W/mb-$i.log" 2>&1 ||
    { tail -n 30 "$W/mb-$i.log"; fail "mariabackup incremental prepare of $i"; }
done
differ=0
while read -r f; do
  if ! cmp -s "$W/full/$f" "$W/mb-full/$f"; then echo "differs: $f ($(cmp "$W/full/$f" "$W/mb-full/$f" 2>&1 | head -1))"; differ=$((differ+1)); fi
done < <(cd "$W/mb-full" && find . \( -name '*.ibd' -o -name 'ibdata*' -o -name 'undo[0-9]*' \) | sort)
(cd "$W/full" && find . -name '*.ibd' | sort) > "$W/ibd-xbak"
(cd "$W/mb-full" && find . -name '*.ibd' | sort) > "$W/ibd-mb"
diff "$W/ibd-xbak" "$W/ibd-mb" || fail "the two chains hold different tablespaces"
echo "$(wc -l < "$W/ibd-mb") .ibd files + system and undo tablespaces compared, $differ differ"
[ "$differ" -eq 0 ] || fail "$differ data files differ between the xbak and mariabackup chains"

step "interop: xbak applies mariabackup's incremental"
mariabackup --defaults-file="$cnf" --backup --target-dir="$W/mbf" > "$W/mbf.log" 2>&1
writes 3
mariabackup --defaults-file="$cnf" --backup --incremental-basedir="$W/mbf" --target-dir="$W/mbi" > "$W/mbi.log" 2>&1
sb_checksums src > "$W/src.sum"
mariabackup --no-defaults --prepare --target-dir="$W/mbf" > "$W/mbf-p.log" 2>&1
apply_dir() { xbak --prepare --apply-log-only --parallel=4 --target-dir="$1" --incremental-dir="$2" 2> "$W/ax.log" || { tail "$W/ax.log"; fail "xbak applying $2"; }; }
apply_dir "$W/mbf" "$W/mbi"
restore "$W/mbf"
sb_stop src
