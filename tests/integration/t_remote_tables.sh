#!/usr/bin/env bash
# Issue 19: tables created with DATA DIRECTORY (an .isl in the datadir points at the .ibd elsewhere).
#  - full and incremental backups under a write load take them (as db/t.ibd, with the .isl);
#  - xbak --prepare (full + incremental) and mariabackup --prepare of copies give identical pages;
#  - --copy-back refuses, naming the directory, while their original place holds files (the
#    source's own tablespaces here), and writes nothing;
#  - --copy-back --remote-tablespaces-to-datadir puts them in the datadir without the .isl (one
#    made unreadable first: it does not matter then): the
#    server starts, CHECK TABLE EXTENDED passes, SHOW CREATE TABLE has no DATA DIRECTORY;
#  - with the original place emptied (the source's remote directories moved away, as after losing
#    the machine), --copy-back puts them back there with their .isl: same checksums as above, and
#    SHOW CREATE TABLE names the original DATA DIRECTORY;
#  - a streamed backup (xbstream) carries the .ibd and the .isl.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_mariabackup

W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)
R1="$W/remote1"
R2="$W/remote2"
CMP=(python3 "$XBAK_SRC/tests/integration/compare_pages.py")
mkdir -p "$R1" "$R2"
if [ "$(id -u)" -eq 0 ]; then chown mysql:mysql "$R1" "$R2"; fi
chmod 755 "$W"

step "source: tables in two DATA DIRECTORYs (one ROW_FORMAT=COMPRESSED), one local"
sb_init src "$src_port"
sb_start src
sb_sql src "CREATE DATABASE r;
  CREATE TABLE r.t1 (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200)) DATA DIRECTORY='$R1';
  CREATE TABLE r.t2 (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200))
    ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4 DATA DIRECTORY='$R2';
  CREATE TABLE r.l (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200));
  SET SESSION max_recursive_iterations = 100000;
  INSERT INTO r.t1 (n, v) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 20000)
    SELECT i, REPEAT(MD5(i), 4) FROM s;
  INSERT INTO r.t2 (n, v) SELECT n, v FROM r.t1;
  INSERT INTO r.l (n, v) SELECT n, v FROM r.t1"
ls "$R1/r/t1.ibd" "$R2/r/t2.ibd" > /dev/null || fail "the server did not put the tables in their DATA DIRECTORY"
cnf=$(sb_cnf src)

churn() { # one round of writes to every table (loop_start)
  local i=$1
  sb_sql src "UPDATE r.t1 SET n = n + 1, v = REPEAT(MD5($i), 5) WHERE id % 53 = $i % 53;
    UPDATE r.t2 SET n = n + 1 WHERE id % 47 = $i % 47; INSERT INTO r.t1 (n, v) VALUES ($i, 'x');
    INSERT INTO r.t2 (n, v) VALUES ($i, 'y'); DELETE FROM r.l WHERE id % 101 = $i % 101 LIMIT 5;"
}

step "full and incremental backups under writes"
loop_start churn
sleep 1
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/full" 2> "$W/full.log" ||
  { tail -n 20 "$W/full.log" >&2; fail "xbak --backup with DATA DIRECTORY tables"; }
assert_file "$W/full/r/t1.ibd" "the remote table in the backup"
assert_file "$W/full/r/t1.isl" "its .isl in the backup"
assert_file "$W/full/r/t2.isl"
assert_eq "$R1/r/t1.ibd" "$(cat "$W/full/r/t1.isl")" "the .isl content"
sleep 2
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/full" --target-dir="$W/inc" \
  2> "$W/inc.log" || { tail -n 20 "$W/inc.log" >&2; fail "xbak --backup --incremental"; }
assert_file "$W/inc/r/t1.ibd.delta" "the remote table's delta"
assert_file "$W/inc/r/t2.isl"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream 2> "$W/stream.log" > "$W/s.xb" ||
  { tail -n 20 "$W/stream.log" >&2; fail "xbak --backup --stream with DATA DIRECTORY tables"; }
loop_stop
mkdir -p "$W/s"
"$XBAK" --extract -C "$W/s" < "$W/s.xb" 2> "$W/extract.log" || { cat "$W/extract.log" >&2; fail "extract"; }
assert_file "$W/s/r/t2.ibd" "the remote table in the stream"
assert_file "$W/s/r/t2.isl" "its .isl in the stream"
rm -rf "$W/s" "$W/s.xb"

step "prepare full + incremental: xbak and mariabackup give identical pages"
cp -a "$W/full" "$W/rfull"  # unprepared, for xbak --restore below
cp -a "$W/inc" "$W/rinc"
cp -a "$W/full" "$W/mb"
cp -a "$W/inc" "$W/mb-inc"
mariabackup --no-defaults --prepare --target-dir="$W/mb" > "$W/mb.log" 2>&1 ||
  { tail -n 20 "$W/mb.log" >&2; fail "mariabackup --prepare (full)"; }
mariabackup --no-defaults --prepare --target-dir="$W/mb" --incremental-dir="$W/mb-inc" >> "$W/mb.log" 2>&1 ||
  { tail -n 20 "$W/mb.log" >&2; fail "mariabackup --prepare --incremental-dir"; }
prepare_backup full "$W/full"
"$XBAK" --prepare --target-dir="$W/full" --incremental-dir="$W/inc" 2> "$W/full-inc-prepare.log" ||
  { tail -n 20 "$W/full-inc-prepare.log" >&2; fail "xbak --prepare --incremental-dir"; }
"${CMP[@]}" "$W/mb" "$W/full" || fail "xbak and mariabackup prepared different pages"

step "copy-back while the original DATA DIRECTORY holds files: refused, nothing written"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
if "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" 2> "$W/refused.log"; then
  fail "copy-back restored over the source's DATA DIRECTORY"
fi
cat "$W/refused.log"
assert_contains "$W/refused.log" "DATA DIRECTORY and belongs in $R1/r, which is not empty" "the refusal names the place"
[ -z "$(ls -A "$W/dst/data" 2> /dev/null)" ] || { ls -la "$W/dst/data" >&2; fail "a refused copy-back wrote into the datadir"; }

step "copy-back --remote-tablespaces-to-datadir: in the datadir, no .isl (a broken one does not matter)"
cp "$W/full/r/t2.isl" "$W/t2.isl.saved"
printf 'relative/path' > "$W/full/r/t2.isl"
"$XBAK" --copy-back --remote-tablespaces-to-datadir --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" \
  2> "$W/cb1.log" || { tail -n 20 "$W/cb1.log" >&2; fail "copy-back --remote-tablespaces-to-datadir"; }
assert_file "$W/dst/data/r/t1.ibd"
cp "$W/t2.isl.saved" "$W/full/r/t2.isl"
[ ! -e "$W/dst/data/r/t1.isl" ] || fail "an .isl was restored with --remote-tablespaces-to-datadir"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
sb_start dst
sb_check_all dst EXTENDED
if sb_sql dst "SHOW CREATE TABLE r.t1" | grep -q "DATA DIRECTORY"; then fail "r.t1 still says DATA DIRECTORY"; fi
sb_checksums dst > "$W/datadir.sum"
sb_stop dst

step "original place emptied (source's remote dirs moved away): copy-back puts them back there"
sb_stop src
mv "$R1" "$R1.src"
mv "$R2" "$R2.src"
rm -rf "$W/dst"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/full" 2> "$W/cb2.log" ||
  { tail -n 20 "$W/cb2.log" >&2; fail "copy-back to the original DATA DIRECTORY"; }
tail -n 1 "$W/cb2.log"
assert_file "$R1/r/t1.ibd" "r.t1 back in its DATA DIRECTORY"
assert_file "$R2/r/t2.ibd" "r.t2 back in its DATA DIRECTORY"
assert_file "$W/dst/data/r/t1.isl" "its .isl in the datadir"
[ ! -e "$W/dst/data/r/t1.ibd" ] || fail "r.t1.ibd restored into the datadir as well"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data" "$R1" "$R2"; fi
sb_start dst
sb_check_all dst EXTENDED
sb_sql dst "SHOW CREATE TABLE r.t2" | grep -q "DATA DIRECTORY='$R2/'" ||
  { sb_sql dst "SHOW CREATE TABLE r.t2" >&2; fail "r.t2 lost its DATA DIRECTORY"; }
sb_checksums dst > "$W/remote.sum"
sb_stop dst
sb_compare_checksums "$W/datadir.sum" "$W/remote.sum" || fail "the two restores differ"
echo "both restores: $(wc -l < "$W/remote.sum") tables, identical"

step "xbak --restore of the unprepared chain: refused while the DATA DIRECTORYs hold files, then put back there"
rm -rf "$W/dst"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
rm -rf "$W/dst/data"
if "$XBAK" --restore --datadir="$W/dst/data" --target-dir="$W/rfull" --incremental-dir="$W/rinc" 2> "$W/rs-refused.log"; then
  fail "xbak --restore wrote over a DATA DIRECTORY"
fi
assert_contains "$W/rs-refused.log" "$R1/r is not empty"
[ ! -e "$W/dst/data" ] || fail "the refused restore wrote into the datadir"
rm -rf "$R1" "$R2"
"$XBAK" --restore --parallel=2 --datadir="$W/dst/data" --target-dir="$W/rfull" --incremental-dir="$W/rinc" \
  2> "$W/rs.log" || { tail -n 20 "$W/rs.log" >&2; fail "xbak --restore with DATA DIRECTORY tables"; }
assert_file "$R1/r/t1.ibd" "r.t1 back in its DATA DIRECTORY"
assert_file "$W/dst/data/r/t1.isl" "its .isl in the datadir"
[ ! -e "$W/dst/data/r/t1.ibd" ] || fail "r.t1.ibd left in the datadir as well"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data" "$R1" "$R2"; fi
sb_start dst
sb_check_all dst EXTENDED
sb_checksums dst > "$W/restore.sum"
sb_stop dst
sb_compare_checksums "$W/remote.sum" "$W/restore.sum" || fail "xbak --restore differs from --prepare + --copy-back"
