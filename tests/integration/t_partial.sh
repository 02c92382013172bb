#!/usr/bin/env bash
# Issue 19: partial backups with mariabackup's options (--databases, --databases-file,
# --databases-exclude, --tables, --tables-file, --tables-exclude).
#  - For each filter, xbak and mariabackup back up the same server with the same options; the
#    table files they take (.ibd .frm .MYD .MYI .par .isl .TRG ...) are the same set, except where
#    docs/partial.md says xbak differs on purpose (a .TRN goes with its table, not its trigger's
#    name; db.opt goes with any database a table of which is taken; --databases-exclude=db.t alone
#    leaves out db.t only);
#  - under writes and DDL (tables created, re-created and dropped inside and outside the filter
#    while the copy runs), a partial full + incremental backup prepares with xbak, brings back no
#    table it left out, restores, starts, passes CHECK TABLE EXTENDED, and keeps the load's
#    invariant (two tables written in one transaction have equal counts);
#  - an incremental taken with another filter than its base is refused by name, nothing written
#    (that incremental, taken under the DDL loop, also checks a table newer than the base that is
#    TRUNCATEd during the copy: it was copied twice as db/t.new, which failed the backup);
#  - a table newer than the base renamed during the incremental (by the DDL loop, and once for
#    certain: shop.fresh) is restored under its new name (prepare failed on the rename before);
#  - a bad regex, a missing --tables-file and a name with '/' are refused by option, nothing written.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_mariabackup

W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)

step "source: databases shop, hr, archive; partitions, MyISAM, a view, a trigger"
sb_init src "$src_port"
sb_start src
sb_sql src "CREATE DATABASE shop; CREATE DATABASE hr; CREATE DATABASE archive;
  CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(100));
  CREATE TABLE shop.items (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(100));
  CREATE TABLE shop.audit (id INT PRIMARY KEY, v VARCHAR(100));
  CREATE TABLE shop.tmp_scratch (id INT PRIMARY KEY);
  CREATE TABLE shop.parts (id INT NOT NULL, d INT NOT NULL, PRIMARY KEY (id, d))
    PARTITION BY RANGE (d) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20),
    PARTITION p2 VALUES LESS THAN MAXVALUE);
  CREATE TABLE hr.emp (id INT PRIMARY KEY, name VARCHAR(50), salary INT);
  CREATE TABLE hr.pay (id INT PRIMARY KEY, amount INT) ENGINE=MyISAM;
  CREATE TABLE hr.log (id INT AUTO_INCREMENT PRIMARY KEY, emp INT) ENGINE=Aria;
  CREATE VIEW hr.emp_v AS SELECT id, name FROM hr.emp;
  CREATE TRIGGER hr.emp_ins AFTER INSERT ON hr.emp FOR EACH ROW INSERT INTO hr.log (emp) VALUES (NEW.id);
  CREATE TABLE archive.old (id INT PRIMARY KEY, v TEXT);
  USE shop;
  INSERT INTO shop.orders (n, v) SELECT seq, MD5(seq) FROM seq_1_to_5000;
  INSERT INTO shop.items (n, v) SELECT seq, MD5(seq) FROM seq_1_to_5000;
  INSERT INTO shop.parts SELECT seq, seq % 30 FROM seq_1_to_3000;
  INSERT INTO hr.emp SELECT seq, CONCAT('e', seq), seq * 10 FROM seq_1_to_500;
  INSERT INTO hr.pay SELECT seq, seq FROM seq_1_to_500;
  INSERT INTO archive.old SELECT seq, REPEAT('x', 500) FROM seq_1_to_2000"
cnf=$(sb_cnf src)

# table_files DIR : the table files of a backup, "db/file", sorted (no backup metadata, no system
# or undo tablespaces, no redo log, no Aria logs). A table whose page 0 was not on disk yet is
# copied as db/t.new by mariabackup (xbak copies it as db/t.ibd and rebuilds page 0 from the log):
# the same table.
table_files() {
  (cd "$1" && find . -mindepth 2 -type f | sed -e 's|^\./||' -e 's|[.]new$|.ibd|' | LC_ALL=C sort)
}

# compare_with_mariabackup CASE [EXCLUDE_REGEX] -- OPTIONS... : both tools back up with OPTIONS;
# their table files must match (files matching EXCLUDE_REGEX aside)
compare_with_mariabackup() {
  local name=$1 skip=$2
  shift 3
  xbak --backup --defaults-file="$cnf" --target-dir="$W/x-$name" "$@" 2> "$W/x-$name.log" ||
    { tail -n 20 "$W/x-$name.log" >&2; fail "$name: xbak --backup $*"; }
  mariabackup --defaults-file="$cnf" --backup --target-dir="$W/m-$name" "$@" > "$W/m-$name.log" 2>&1 ||
    { tail -n 20 "$W/m-$name.log" >&2; fail "$name: mariabackup --backup $*"; }
  table_files "$W/x-$name" | grep -Ev "$skip" > "$W/x-$name.files" || true
  table_files "$W/m-$name" | grep -Ev "$skip" > "$W/m-$name.files" || true
  if ! cmp -s "$W/x-$name.files" "$W/m-$name.files"; then
    diff "$W/m-$name.files" "$W/x-$name.files" >&2 || true
    fail "$name: xbak and mariabackup took different files (< mariabackup, > xbak)"
  fi
  [ -s "$W/x-$name.files" ] || fail "$name: no table files at all"
  assert_contains "$W/x-$name/${META}info" '^partial = Y$' "$name: ${META}info"
  assert_file "$W/x-$name/xbak_table_filter" "$name: the recorded filter"
  echo "$name: $(wc -l < "$W/x-$name.files") table files, the same as mariabackup's"
}

step "the same files as mariabackup, filter by filter"
# db.opt is compared apart: xbak takes it with every database any table of which it takes.
NONE='/db[.]opt$'
compare_with_mariabackup databases '[.]TRN$|/db[.]opt$' -- --databases="shop hr.emp"
assert_file "$W/x-databases/hr/db.opt" "db.opt of a database some of whose tables are taken"
assert_file "$W/x-databases/hr/emp_ins.TRN" "the trigger of hr.emp goes with it"
assert_file "$W/x-databases/shop/parts#P#p1.ibd"
[ ! -e "$W/x-databases/hr/pay.MYD" ] || fail "--databases='shop hr.emp' took hr.pay"
[ ! -e "$W/x-databases/mysql" ] || fail "--databases='shop hr.emp' took the mysql database"

compare_with_mariabackup tables '/db[.]opt$' -- --tables='^shop[.]it,^hr[.],[.]parts#P#p2$'
assert_file "$W/x-tables/shop/db.opt"
[ ! -e "$W/x-tables/archive" ] || fail "--tables took a directory of archive, none of whose tables match"
assert_file "$W/x-tables/shop/parts#P#p2.ibd"
[ ! -e "$W/x-tables/shop/parts#P#p0.ibd" ] || fail "the regex on one partition took another"
assert_file "$W/x-tables/hr/emp_v.frm" "the view matches ^hr[.]"

compare_with_mariabackup excludes "$NONE" -- --databases="shop hr archive mysql" \
  --databases-exclude="archive shop.audit" --tables-exclude='^shop[.]tmp_'
[ ! -e "$W/x-excludes/shop/audit.ibd" ] || fail "--databases-exclude=shop.audit took it"
[ ! -e "$W/x-excludes/archive" ] || fail "--databases-exclude=archive took it"

printf 'shop.orders\nhr.pay\n' > "$W/list"
compare_with_mariabackup tables_file "$NONE" -- --tables-file="$W/list"
printf 'hr\nshop.items\n' > "$W/dblist"
compare_with_mariabackup databases_file '[.]TRN$|/db[.]opt$' -- --databases-file="$W/dblist"

# The one deliberate difference: excluding one table alone (mariabackup leaves out its database).
xbak --backup --defaults-file="$cnf" --target-dir="$W/x-one" --databases-exclude="shop.audit" 2> "$W/x-one.log" ||
  fail "--databases-exclude=shop.audit"
[ ! -e "$W/x-one/shop/audit.ibd" ] && [ -e "$W/x-one/shop/orders.ibd" ] && [ -e "$W/x-one/hr/emp.ibd" ] ||
  fail "--databases-exclude=shop.audit must leave out shop.audit only"

step "bad filters are refused by option, before anything is written"
refused() { # MSG-REGEX OPTIONS... : xbak --backup refuses, writes no target directory
  local re=$1
  shift
  if "$XBAK" --backup --defaults-file="$cnf" --target-dir="$W/refused" "$@" 2> "$W/refused.log"; then
    fail "xbak --backup $* succeeded"
  fi
  assert_contains "$W/refused.log" "$re" "refusal of $*"
  [ ! -e "$W/refused" ] || fail "xbak --backup $* wrote $W/refused"
}
refused "--tables: 'shop.*' is not a valid regular expression" --tables='shop[.]('
refused "--tables-file .*/nope" --tables-file="$W/nope"
refused "--databases: name '\.\./etc' is not valid" --databases="../etc"
# Outside --backup the options would be ignored: refused instead.
if "$XBAK" --prepare --tables='^a[.]' --target-dir="$W/x-tables" 2> "$W/refused-prepare.log"; then
  fail "--prepare --tables ran"
fi
assert_contains "$W/refused-prepare.log" "--tables applies to --backup only"

step "partial full + incremental under writes and DDL inside and outside the filter"
FILTER=(--databases="shop hr mysql" --databases-exclude="shop.audit" --tables-exclude='^shop[.]tmp_')
load() { # one round (loop_start): orders and items in one transaction; audit, archive and tmp_ tables churn
  local i=$1
  sb_sql src "START TRANSACTION; INSERT INTO shop.orders (n, v) VALUES ($i, MD5($i));
    INSERT INTO shop.items (n, v) VALUES ($i, MD5($i)); UPDATE shop.orders SET n = n + 1 WHERE id % 97 = $i % 97;
    COMMIT; REPLACE INTO shop.audit VALUES ($i % 500, MD5($i)); UPDATE archive.old SET v = REPEAT(MD5($i), 10)
    WHERE id % 50 = $i % 50; INSERT INTO shop.parts VALUES ($i + 10000, $i % 30);" || true
}
ddl() { # one round (loop_start): tables created, re-created and dropped on both sides of the filter
  local i=$(($1 + 3))
  sb_sql src "USE shop; CREATE TABLE shop.tmp_$i (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, MD5(seq) v FROM seq_1_to_200;
    CREATE TABLE shop.kept_$i (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, MD5(seq) v FROM seq_1_to_200;
    CREATE TABLE archive.new_$i (id INT PRIMARY KEY) SELECT seq id FROM seq_1_to_100;
    TRUNCATE TABLE shop.tmp_scratch; DROP TABLE IF EXISTS shop.tmp_$((i - 2)), archive.new_$((i - 2));
    RENAME TABLE shop.kept_$((i - 1)) TO shop.moved_$((i - 1)); DROP TABLE IF EXISTS shop.moved_$((i - 4));" || true
  sleep 0.2
}
# shop.big (about 20 MiB): with --throttle, the full backup reads it for about a second while the
# DDL loop runs.
sb_sql src "CREATE TABLE shop.big (id INT PRIMARY KEY, v VARCHAR(120)) SELECT seq id, REPEAT(MD5(seq), 3) v
  FROM shop.seq_1_to_150000"
loop_start load
loop_start ddl
sleep 2
# --throttle slows the copy so that the DDL loop runs while it does.
xbak --backup --defaults-file="$cnf" --parallel=2 --throttle=20 --target-dir="$W/pfull" "${FILTER[@]}" \
  2> "$W/pfull.log" || { tail -n 20 "$W/pfull.log" >&2; fail "partial full backup under DDL"; }
sleep 2
# A table newer than the base, renamed while the incremental copies (its delta is under its old
# name: prepare must put it under the new one).
# FLUSH ... FOR EXPORT writes its pages: page 0 is on disk, so it is copied as a delta, not whole.
# It is the largest table (about 30 MiB, shop.big 20 MiB): the InnoDB files are copied largest
# first, so its copy starts the InnoDB phase and, throttled, lasts over a second; the rename,
# issued once its delta is begun, always runs during that copy. (With 30,000 rows it came after
# the tables that the load had grown, or that a server which had not checkpointed since its
# start made "newer than the base" and copied whole, and the rename could meet BACKUP STAGE
# BLOCK_DDL and wait until the backup's end.)
sb_sql src "CREATE TABLE shop.fresh (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, REPEAT(MD5(seq), 3) v
  FROM shop.seq_1_to_250000;
  FLUSH TABLES shop.fresh FOR EXPORT; UNLOCK TABLES"
rm -rf "$W/pinc.log" "$W/pinc"
# Its delta is written as fresh.ibd.delta.xbpartial until complete: that name means the copy began.
(until [ -e "$W/pinc/shop/fresh.ibd.delta.xbpartial" ] || [ -e "$W/pinc/shop/fresh.ibd.delta" ]; do sleep 0.02; done
  echo "rename issued $(date '+%T.%N')" > "$W/rename.log"
  sb_sql src "RENAME TABLE shop.fresh TO shop.fresh_renamed"
  echo "rename done $(date '+%T.%N')" >> "$W/rename.log") &
renpid=$!
xbak --backup --defaults-file="$cnf" --parallel=2 --throttle=20 --incremental-basedir="$W/pfull" \
  --target-dir="$W/pinc" "${FILTER[@]}" 2> "$W/pinc.log" ||
  { tail -n 20 "$W/pinc.log" >&2; fail "partial incremental backup under DDL"; }
wait "$renpid"
assert_contains "$W/pinc.log" "table shop/fresh was renamed to shop/fresh_renamed during the backup" \
  "the rename of shop.fresh happened during the incremental"
# An incremental with another filter: taken, but refused at prepare.
xbak --backup --defaults-file="$cnf" --incremental-basedir="$W/pfull" --target-dir="$W/pother" \
  --databases="shop mysql" 2> "$W/pother.log" || fail "incremental with another filter"
loop_stop
grep -E "created during the backup|dropped during the backup|renamed" "$W/pfull.log" "$W/pinc.log" | head -n 5 || true

leftout() { # DIR : files of tables the filter leaves out
  (cd "$1" && find . \( -path './archive*' -o -path './shop/tmp_*' -o -path './shop/audit.*' \) -print)
}
[ -z "$(leftout "$W/pfull")" ] || fail "the partial full backup took tables it leaves out: $(leftout "$W/pfull")"

prepare_backup pfull "$W/pfull"
[ -z "$(leftout "$W/pfull")" ] ||
  fail "xbak --prepare brought back tables the partial backup left out: $(leftout "$W/pfull")"
cp "$W/pfull/${META}checkpoints" "$W/cp.before"
if "$XBAK" --prepare --target-dir="$W/pfull" --incremental-dir="$W/pother" 2> "$W/pother-prepare.log"; then
  fail "an incremental with another filter was applied"
fi
assert_contains "$W/pother-prepare.log" "other --databases/--tables options" "refusal of a mismatched incremental"
cmp -s "$W/cp.before" "$W/pfull/${META}checkpoints" || fail "the refused apply changed the base"
"$XBAK" --prepare --parallel=2 --target-dir="$W/pfull" --incremental-dir="$W/pinc" 2> "$W/pinc-prepare.log" ||
  { tail -n 30 "$W/pinc-prepare.log" >&2; fail "xbak --prepare --incremental-dir of the partial incremental"; }
[ -z "$(leftout "$W/pfull")" ] ||
  fail "the incremental prepare brought back tables the backup left out: $(leftout "$W/pfull")"

step "restore the partial backup: it starts, CHECK TABLE EXTENDED passes, the invariant holds"
copy_back_start partial "$W/pfull"
o=$(sb_sql dst "SELECT COUNT(*) FROM shop.orders")
it=$(sb_sql dst "SELECT COUNT(*) FROM shop.items")
assert_eq "$o" "$it" "rows of shop.orders and shop.items (inserted in one transaction)"
[ "$o" -gt 5000 ] || fail "the restore holds none of the rows written during the backups ($o)"
n=$(sb_sql dst "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'archive'
  OR TABLE_NAME LIKE 'tmp\\_%' OR TABLE_NAME = 'audit'")
assert_eq 0 "$n" "tables the filter leaves out, visible in the restored server"
sb_sql dst "SELECT COUNT(*) FROM hr.emp_v" > /dev/null
assert_eq 250000 "$(sb_sql dst "SELECT COUNT(*) FROM shop.fresh_renamed")" "rows of shop.fresh_renamed"
echo "restored: $o orders = $it items; $(sb_sql dst "SELECT COUNT(*) FROM information_schema.TABLES
  WHERE TABLE_SCHEMA = 'shop' AND (TABLE_NAME LIKE 'kept\\_%' OR TABLE_NAME LIKE 'moved\\_%')") tables created (and renamed) during the backups"
sb_stop dst
echo "partial backups: ok"
