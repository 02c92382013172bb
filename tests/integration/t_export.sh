#!/usr/bin/env bash
# Issue 19: xbak --prepare --export, and one table restored into a running server.
#  - a full backup under writes of tables of every kind IMPORT takes: secondary indexes, instant
#    ADD COLUMN, instant DROP COLUMN, a column added FIRST (instant reorder), ROW_FORMAT=COMPRESSED,
#    a partitioned table, names that need the filename encoding, a DATA DIRECTORY table; and one
#    table in the system tablespace, which cannot be exported and must be named;
#  - two copies prepared with --export, one by xbak, one by mariabackup: the same .cfg files, byte
#    for byte but the host name;
#  - every exported table imported under another name into another server (DISCARD, copy .ibd and
#    .cfg, IMPORT TABLESPACE): CHECK TABLE EXTENDED passes and CHECKSUM TABLE equals that of the
#    same table in the backup restored whole by --copy-back (the exported backup still restores);
#  - the documented sequence: one table back into the running source under another name;
#  - the DATA DIRECTORY table's original file is never opened by the export server (unchanged);
#  - refusals: --export without --prepare, a missing server program (nothing changed), an
#    incremental onto an exported base (nothing changed); --export of a partial backup without the
#    mysql database works.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_mariabackup

W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)
imp_port=$(alloc_port)
R="$W/remote"
mkdir -p "$R"
if [ "$(id -u)" -eq 0 ]; then chown mysql:mysql "$R"; fi
chmod 755 "$W"

TABLES="orders inst_add inst_drop inst_first zip parted remote versioned pending"
step "source: tables of every kind IMPORT takes"
sb_init src "$src_port"
sb_start src
sb_sql src "CREATE DATABASE shop; CREATE DATABASE \`my-db\`; USE shop;
  CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(100), KEY (n), KEY (v(10)));
  CREATE TABLE inst_add (id INT PRIMARY KEY, a INT);
  CREATE TABLE inst_drop (id INT PRIMARY KEY, a INT, b VARCHAR(50), c INT);
  CREATE TABLE inst_first (id INT PRIMARY KEY, a INT);
  CREATE TABLE zip (id INT PRIMARY KEY, v VARCHAR(200), KEY (v)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4;
  CREATE TABLE parted (id INT NOT NULL, d INT NOT NULL, v VARCHAR(50), PRIMARY KEY (id, d))
    PARTITION BY HASH (d) PARTITIONS 3;
  CREATE TABLE remote (id INT PRIMARY KEY, v VARCHAR(100)) DATA DIRECTORY='$R';
  CREATE TABLE \`my-db\`.\`t-1\` (id INT PRIMARY KEY, v VARCHAR(100));
  CREATE TABLE versioned (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING;
  CREATE TABLE pending (id INT PRIMARY KEY, v VARCHAR(100));
  INSERT INTO pending SELECT seq, MD5(seq) FROM seq_1_to_500;
  SET GLOBAL innodb_file_per_table = 0;
  CREATE TABLE insys (id INT PRIMARY KEY);
  SET GLOBAL innodb_file_per_table = 1;
  INSERT INTO orders (n, v) SELECT seq, MD5(seq) FROM seq_1_to_20000;
  INSERT INTO inst_add SELECT seq, seq FROM seq_1_to_5000;
  INSERT INTO inst_drop SELECT seq, seq, MD5(seq), seq FROM seq_1_to_5000;
  INSERT INTO inst_first SELECT seq, seq FROM seq_1_to_5000;
  INSERT INTO zip SELECT seq, REPEAT(MD5(seq), 3) FROM seq_1_to_5000;
  INSERT INTO parted SELECT seq, seq % 17, MD5(seq) FROM seq_1_to_6000;
  INSERT INTO remote SELECT seq, MD5(seq) FROM seq_1_to_3000;
  INSERT INTO \`my-db\`.\`t-1\` SELECT seq, MD5(seq) FROM seq_1_to_1000;
  INSERT INTO insys SELECT seq FROM seq_1_to_100;
  INSERT INTO versioned SELECT seq, seq FROM seq_1_to_2000; UPDATE versioned SET v = v + 1 WHERE id % 3 = 0;
  ALTER TABLE inst_add ADD COLUMN x INT NOT NULL DEFAULT 42, ADD COLUMN y VARCHAR(20) DEFAULT 'dflt', ALGORITHM=INSTANT;
  ALTER TABLE inst_drop DROP COLUMN b, ALGORITHM=INSTANT;
  ALTER TABLE inst_first ADD COLUMN f INT DEFAULT 7 FIRST, ALGORITHM=INSTANT;
  UPDATE inst_add SET x = id WHERE id % 3 = 0; UPDATE inst_drop SET c = -c WHERE id % 5 = 0;
  INSERT INTO inst_first (id, a) SELECT seq + 5000, seq FROM seq_1_to_100"
cnf=$(sb_cnf src)

churn() { # one round of writes to every table (loop_start)
  local i=$1
  sb_sql src "USE shop; UPDATE orders SET n = n + 1 WHERE id % 61 = $i % 61; INSERT INTO orders (n, v) VALUES ($i, 'x');
    UPDATE inst_add SET x = x + 1, y = 'u$i' WHERE id % 41 = $i % 41; INSERT INTO inst_add (id, a) VALUES (100000 + $i, $i);
    UPDATE inst_drop SET a = a + 1 WHERE id % 43 = $i % 43; UPDATE inst_first SET f = f + 1 WHERE id % 47 = $i % 47;
    UPDATE zip SET v = REPEAT(MD5($i), 3) WHERE id % 53 = $i % 53; INSERT INTO parted VALUES (10000 + $i, $i % 17, 'p');
    UPDATE remote SET v = MD5($i) WHERE id % 59 = $i % 59; UPDATE \`my-db\`.\`t-1\` SET v = MD5($i) WHERE id % 7 = $i % 7" || true
}

step "full backup under writes"
loop_start churn
# A transaction open across the whole backup (on a table the churn does not scan, which it would
# block): the export server rolls it back.
(sb_sql src "START TRANSACTION; INSERT INTO shop.pending VALUES (-1, 'never committed');
  UPDATE shop.pending SET v = 'uncommitted' WHERE id <= 100;
  SELECT SLEEP(600); ROLLBACK" > /dev/null 2>&1 || true) &
openpid=$!
sleep 1
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/full" 2> "$W/full.log" ||
  { tail -n 20 "$W/full.log" >&2; fail "xbak --backup"; }
xbak --backup --defaults-file="$cnf" --target-dir="$W/partial" --databases="shop" 2> "$W/partial.log" ||
  { tail -n 20 "$W/partial.log" >&2; fail "partial backup"; }
loop_stop
sb_sql src "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'" |
  while read -r id; do sb_sql src "KILL $id"; done
wait "$openpid" || true
cp -a "$W/full" "$W/mb"

step "refusals"
if "$XBAK" --export --target-dir="$W/full" 2> "$W/r1.log"; then fail "--export without --prepare ran"; fi
assert_contains "$W/r1.log" "--export goes with --prepare"
"$XBAK" --prepare --parallel=2 --target-dir="$W/full" 2> "$W/prep.log" || { tail "$W/prep.log" >&2; fail "prepare"; }
if "$XBAK" --prepare --export --mariadbd=/nonexistent/mariadbd --target-dir="$W/full" 2> "$W/r2.log"; then
  fail "--export with a missing server program ran"
fi
assert_contains "$W/r2.log" "--export needs the MariaDB server program"
[ ! -e "$W/full/xbak_exported" ] || fail "a refused --export marked the backup exported"
ls "$W/full"/shop/*.cfg > /dev/null 2>&1 && fail "a refused --export wrote .cfg files"

step "xbak --prepare --export and mariabackup --prepare --export of copies of the same backup"
"$XBAK" --prepare --export --target-dir="$W/full" 2> "$W/export.log" ||
  { tail -n 30 "$W/export.log" >&2; fail "xbak --prepare --export"; }
cat "$W/export.log" | grep -E "exported|not exported" >&2
assert_contains "$W/export.log" "not exported: shop[.]insys" "the table in the system tablespace is named"
assert_file "$W/full/xbak_exported"
# Had the export server followed the .isl to the source's own file, it would have written its .cfg
# there (and changed that file).
[ ! -e "$R/shop/remote.cfg" ] || fail "the export server opened the source's DATA DIRECTORY file"
mariabackup --prepare --export --target-dir="$W/mb" > "$W/mb-export.log" 2>&1 ||
  { tail -n 30 "$W/mb-export.log" >&2; fail "mariabackup --prepare --export"; }
# .cfg: version (4 bytes), host name length (4), host name, then the rest. Hosts may differ.
python3 - "$W/full" "$W/mb" << 'EOF'
import os, struct, sys
a_dir, b_dir = sys.argv[1], sys.argv[2]
def body(p):
    d = open(p, 'rb').read()
    n = struct.unpack('>I', d[4:8])[0]
    return d[:4] + d[8 + n:]
a = sorted(os.path.relpath(os.path.join(r, f), a_dir) for r, _, fs in os.walk(a_dir) for f in fs if f.endswith('.cfg'))
b = sorted(os.path.relpath(os.path.join(r, f), b_dir) for r, _, fs in os.walk(b_dir) for f in fs if f.endswith('.cfg'))
missing = sorted(set(b) - set(a) - {'shop/remote.cfg'})  # mariabackup skips DATA DIRECTORY tables
if missing: sys.exit('xbak wrote no .cfg for: %s' % missing)
diff = [f for f in a if f in b and body(os.path.join(a_dir, f)) != body(os.path.join(b_dir, f))]
if diff: sys.exit('.cfg files differ from mariabackup\'s: %s' % diff)
print('%d .cfg files, %d identical to mariabackup\'s (host name aside)' % (len(a), len([f for f in a if f in b])))
EOF
for t in $TABLES; do
  compgen -G "$W/full/shop/$t.cfg" > /dev/null || compgen -G "$W/full/shop/$t#P#*.cfg" > /dev/null ||
    fail "no .cfg for shop.$t"
done
assert_file "$W/full/my@002ddb/t@002d1.cfg" "the .cfg of \`my-db\`.\`t-1\`"
assert_file "$W/full/shop/remote.isl" "the .isl is back after the export"

step "an exported backup takes no incremental, and still restores"
xbak --backup --defaults-file="$cnf" --incremental-basedir="$W/full" --target-dir="$W/inc" 2> "$W/inc.log" ||
  fail "incremental backup"
cp "$W/full/${META}checkpoints" "$W/cp.before"
if "$XBAK" --prepare --target-dir="$W/full" --incremental-dir="$W/inc" 2> "$W/r3.log"; then
  fail "an incremental was applied to an exported base"
fi
assert_contains "$W/r3.log" "was exported .* can no longer take incrementals"
cmp -s "$W/cp.before" "$W/full/${META}checkpoints" || fail "the refused apply changed the base"
sb_stop dst 2> /dev/null || true
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" --remote-tablespaces-to-datadir \
  2> "$W/copyback.log" || { tail "$W/copyback.log" >&2; fail "copy-back of the exported backup"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
sb_start dst
sb_check_all dst

step "every exported table imported under another name into another server"
sb_init imp "$imp_port"
sb_start imp
sb_sql imp "CREATE DATABASE restored"
impdir=$(sb_datadir imp)
import_table() { # SERVER DB SRCDB SRCNAME NEWNAME : create like the backup's table, import its files
  local srv=$1 db=$2 sdb=$3 t=$4 new=$5 ddl f base
  ddl=$(sb_sql dst "SHOW CREATE TABLE \`$sdb\`.\`$t\`" | cut -f2- |
    sed -e "s/ DATA DIRECTORY='[^']*'//" -e "s/^CREATE TABLE \`[^\`]*\`/CREATE TABLE \`$db\`.\`$new\`/")
  sb_sql "$srv" "$(printf '%b' "$ddl")"
  local fsdb fst dir p
  fsdb=$(sb_sql dst "SELECT CAST(CONVERT('$sdb' USING filename) AS BINARY)")
  fst=$(sb_sql dst "SELECT CAST(CONVERT('$t' USING filename) AS BINARY)")
  dir=$(sb_datadir "$srv")/$db
  put() { # FILE-STEM TABLE : DISCARD TABLE's tablespace, copy STEM.ibd and STEM.cfg in, IMPORT
    sb_sql "$srv" "ALTER TABLE \`$db\`.\`$2\` DISCARD TABLESPACE"
    cp "$W/full/$fsdb/$1.ibd" "$dir/$2.ibd"
    cp "$W/full/$fsdb/$1.cfg" "$dir/$2.cfg"
    if [ "$(id -u)" -eq 0 ]; then chown mysql:mysql "$dir/$2.ibd" "$dir/$2.cfg"; fi
    sb_sql "$srv" "ALTER TABLE \`$db\`.\`$2\` IMPORT TABLESPACE"
  }
  if ! compgen -G "$W/full/$fsdb/$fst#P#*.ibd" > /dev/null; then
    put "$fst" "$new"
    return
  fi
  # MariaDB imports a partition through a table of its own, then exchanges it in.
  for p in $(sb_sql dst "SELECT PARTITION_NAME FROM information_schema.PARTITIONS
      WHERE TABLE_SCHEMA = '$sdb' AND TABLE_NAME = '$t' ORDER BY PARTITION_ORDINAL_POSITION"); do
    sb_sql "$srv" "CREATE TABLE \`$db\`.\`${new}_$p\` LIKE \`$db\`.\`$new\`;
      ALTER TABLE \`$db\`.\`${new}_$p\` REMOVE PARTITIONING"
    put "$fst#P#$p" "${new}_$p"
    sb_sql "$srv" "ALTER TABLE \`$db\`.\`$new\` EXCHANGE PARTITION $p WITH TABLE \`$db\`.\`${new}_$p\`;
      DROP TABLE \`$db\`.\`${new}_$p\`"
  done
}
for t in $TABLES; do import_table imp restored shop "$t" "${t}_r"; done
import_table imp restored my-db t-1 t1_r
sb_check_all imp
for t in $TABLES; do
  a=$(sb_sql dst "CHECKSUM TABLE shop.$t EXTENDED" | cut -f2)
  b=$(sb_sql imp "CHECKSUM TABLE restored.${t}_r EXTENDED" | cut -f2)
  assert_eq "$a" "$b" "CHECKSUM of shop.$t: restored whole vs imported"
  echo "shop.$t: imported, checksum $b"
done
assert_eq 0 "$(sb_sql imp "SELECT COUNT(*) FROM restored.pending_r WHERE id = -1 OR v = 'uncommitted'")" \
  "rows of the transaction open at the backup's end, imported"
a=$(sb_sql dst "CHECKSUM TABLE \`my-db\`.\`t-1\` EXTENDED" | cut -f2)
b=$(sb_sql imp "CHECKSUM TABLE restored.t1_r EXTENDED" | cut -f2)
assert_eq "$a" "$b" "CHECKSUM of my-db.t-1"
for t in inst_add inst_first; do
  sb_sql imp "SELECT * FROM restored.${t}_r ORDER BY id LIMIT 1" > "$W/$t.imp"
  sb_sql dst "SELECT * FROM shop.$t ORDER BY id LIMIT 1" > "$W/$t.dst"
  cmp -s "$W/$t.imp" "$W/$t.dst" || fail "$t: first row differs after import"
done

step "the documented sequence: one table back into the running source under another name"
import_table src shop shop orders orders_restored
a=$(sb_sql dst "CHECKSUM TABLE shop.orders EXTENDED" | cut -f2)
b=$(sb_sql src "CHECKSUM TABLE shop.orders_restored EXTENDED" | cut -f2)
assert_eq "$a" "$b" "shop.orders_restored in the running source"
sb_sql src "CHECK TABLE shop.orders_restored EXTENDED" | grep -q "status.OK" || fail "CHECK TABLE orders_restored"

step "an export killed while its server runs: nothing left running, copy-back refuses, a re-run finishes"
"$XBAK" --prepare --target-dir="$W/partial" 2> "$W/pprep.log" || { tail "$W/pprep.log" >&2; fail "prepare partial"; }
"$XBAK" --prepare --export --target-dir="$W/partial" 2> "$W/pexport1.log" &
xpid=$!
for _ in $(seq 200); do
  [ -e "$W/partial/shop/remote.isl.xbak-export" ] && grep -q "starting .*mariadbd" "$W/pexport1.log" && break
  sleep 0.05
done
kill -9 "$xpid"
wait "$xpid" 2> /dev/null || true
assert_file "$W/partial/shop/remote.isl.xbak-export" "the .isl set aside by the killed export"
for _ in $(seq 100); do pgrep -f -- "--datadir=$W/partial" > /dev/null || break; sleep 0.1; done
if pgrep -f -- "--datadir=$W/partial" > /dev/null; then fail "the export server outlived the killed xbak"; fi
mkdir -p "$W/cb-refused"
if "$XBAK" --copy-back --target-dir="$W/partial" --datadir="$W/cb-refused" 2> "$W/cbr.log"; then
  fail "copy-back of a backup whose export was interrupted"
fi
assert_contains "$W/cbr.log" "an interrupted xbak --prepare --export set this DATA DIRECTORY link aside"
[ -z "$(ls -A "$W/cb-refused")" ] || fail "the refused copy-back wrote into the datadir"

step "--export of a partial backup (no mysql database), relative --target-dir, after the interruption"
(cd "$W" && "$XBAK" --prepare --export --target-dir=partial) 2> "$W/pexport.log" ||
  { tail -n 30 "$W/pexport.log" >&2; fail "xbak --prepare --export of a partial backup"; }
assert_contains "$W/pexport.log" "put back 1 .isl file"
assert_file "$W/partial/shop/remote.isl" "the .isl back after the re-run"
assert_file "$W/partial/shop/orders.cfg"
assert_file "$W/partial/shop/parted#P#p1.cfg"
assert_file "$W/partial/shop/remote.cfg"
sb_stop dst
sb_stop imp
echo "export: ok"
