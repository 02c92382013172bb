#!/usr/bin/env bash
# Issue "incremental backups", backup side: full, writes touching many tables (CREATE, DROP,
# ALTER with a rebuild, RENAME, TRUNCATE between backups), inc1, more writes, inc2, all taken by
# xbak. mariabackup prepares the chain (its .delta/.meta format is ours), the restore starts and
# every table's CHECKSUM equals the source at inc2's point. A base LSN from another server is
# refused. (xbak's own parallel delta apply is not part of this commit.)
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
sb_flush src   # real page images on disk, so inc1 holds true deltas (new tables still come as .new)
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
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/full" --target-dir="$W/inc1" 2> "$W/inc1.log" ||
  { tail "$W/inc1.log"; fail "inc1"; }
assert_contains "$W/inc1/${META}checkpoints" '^backup_type = incremental$'
assert_file "$W/inc1/ibdata1.delta"
assert_file "$W/inc1/ibdata1.meta"
assert_file "$W/inc1/many/t00003.ibd.delta"
[ ! -e "$W/inc1/many/to_drop.ibd.delta" ] || fail "a dropped table has a delta"

step "more writes, then inc2"
writes 2
sb_sql src "ALTER TABLE many.renamed ADD INDEX (v); INSERT INTO many.to_truncate VALUES (8)"
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/inc1" --target-dir="$W/inc2" 2> "$W/inc2.log" ||
  { tail "$W/inc2.log"; fail "inc2"; }
sb_checksums src > "$W/src.sum"
echo "source at inc2: $(wc -l < "$W/src.sum") tables"

step "a base LSN ahead of this server is refused"
if "$XBAK" --backup --defaults-file="$cnf" --incremental-lsn=999999999999 --target-dir="$W/future" 2> "$W/future.log"; then
  fail "an incremental from a future LSN succeeded"
fi
assert_contains "$W/future.log" "ahead of this server's current LSN"
[ ! -e "$W/future/${META}checkpoints" ] || fail "refused incremental left checkpoints"

step "mariabackup prepares xbak's chain: full, inc1, inc2"
mariabackup --no-defaults --prepare --target-dir="$W/full" > "$W/p0.log" 2>&1 || { tail "$W/p0.log"; fail "prepare full"; }
for i in inc1 inc2; do
  mariabackup --no-defaults --prepare --target-dir="$W/full" --incremental-dir="$W/$i" > "$W/p-$i.log" 2>&1 ||
    { tail -n 30 "$W/p-$i.log"; fail "mariabackup --prepare --incremental-dir=$i"; }
done

step "restore and verify against the source at inc2"
rm -rf "$W/dst"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" 2> "$W/cb.log" || { cat "$W/cb.log"; fail "copy-back"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
sb_start dst
sb_check_all dst
sb_checksums dst > "$W/dst.sum"
sb_compare_checksums "$W/src.sum" "$W/dst.sum" || fail "the restored chain differs from the source"
assert_eq 2000 "$(sb_sql dst 'SELECT COUNT(*) FROM many.created_2')" "rows of a table created before inc2"
assert_eq 0 "$(sb_sql dst "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='many' AND table_name IN ('to_drop','to_rename','t00199')")" "dropped/renamed tables gone"
sb_stop dst
sb_stop src
