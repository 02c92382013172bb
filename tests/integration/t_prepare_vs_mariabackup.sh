#!/usr/bin/env bash
# Issue "redo log apply", done-when 2, 3 and 4, and restartability:
#  - one backup taken under write load while DDL runs (CREATE, ALTER with a table rebuild, RENAME,
#    TRUNCATE, DROP on InnoDB and Aria tables), copied twice: prepared by `mariabackup --prepare`
#    and by `xbak --prepare`, the two copies have identical pages in every data file;
#  - the xbak copy restores, starts, passes CHECK TABLE EXTENDED, and its CHECKSUM TABLE equals the
#    mariabackup copy's; the DDL tables hold what their last completed statement left;
#  - a corrupt (bad CRC in the middle) or truncated redo log: clear error naming the LSN, non-zero
#    exit, no data file changed, the backup not marked prepared;
#  - xbak --prepare killed with SIGKILL at random moments, then run again: same pages.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
command -v mariabackup > /dev/null || fail "mariabackup (Debian mariadb-backup) is needed"

src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK
CMP="$XBAK_SRC/tests/integration/compare_pages.py"

step "source with every row format, sysbench tables, and DDL victims in InnoDB and Aria"
sb_init src "$src_port" "innodb_log_file_size=48M"
sb_start src
cnf=$(sb_cnf src)
sb_load_sample src
sb_load_sysbench src 4 20000
sb_sql src "CREATE DATABASE ddl"

# Each DDL cycle leaves every table it touches with a row count that says which statement ran
# last, so a restore can be checked without knowing the backup's exact point in time.
ddl_loop() {
  local i=0
  while [ ! -e "$W/stop_ddl" ]; do
    i=$((i + 1))
    sb_sql src "
      CREATE TABLE ddl.c$i (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB
        AS SELECT seq AS id, REPEAT('c', 50) AS v FROM ddl.seq_1_to_100;
      CREATE TABLE ddl.a$i (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=Aria
        AS SELECT seq AS id, REPEAT('a', 50) AS v FROM ddl.seq_1_to_100;
      ALTER TABLE ddl.c$i ADD COLUMN w INT NOT NULL DEFAULT 7, FORCE, ALGORITHM=COPY;
      ALTER TABLE ddl.a$i ADD COLUMN w INT NOT NULL DEFAULT 7;
      RENAME TABLE ddl.c$i TO ddl.r$i, ddl.a$i TO ddl.ra$i;
      TRUNCATE TABLE ddl.r$((i - 1));
      TRUNCATE TABLE ddl.ra$((i - 1));
      DROP TABLE IF EXISTS ddl.r$((i > 1 ? i - 2 : 0)), ddl.ra$((i > 1 ? i - 2 : 0));" 2> /dev/null || true
  done
}
sb_sql src "CREATE TABLE ddl.r0 (id INT PRIMARY KEY) ENGINE=InnoDB; CREATE TABLE ddl.ra0 (id INT PRIMARY KEY) ENGINE=Aria"

step "backup under sysbench load and a DDL loop"
sb_sysbench src oltp_write_only --tables=4 --table-size=20000 --threads=2 --time=600 run > "$W/sysbench.log" 2>&1 &
sbpid=$!
ddl_loop &
ddlpid=$!
stop_load() {
  touch "$W/stop_ddl"
  kill "$sbpid" 2> /dev/null || true
  wait "$sbpid" "$ddlpid" 2> /dev/null || true
}
SB_ON_EXIT=(stop_load "${SB_ON_EXIT[@]}")   # before the servers stop
sleep 4
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/bk" 2> "$W/backup.log" ||
  { tail -n 30 "$W/backup.log" >&2; fail "xbak --backup under load and DDL"; }
sleep 1
stop_load
sb_stop src
grep -E "renamed|dropped|created" "$W/backup.log" | head -n 5 || true
echo "DDL markers: $(find "$W/bk" -name '*.new' -o -name '*.ren' -o -name '*.del' | wc -l)"
for d in mb x c1 c2 k; do cp -a "$W/bk" "$W/$d"; done

step "mariabackup --prepare and xbak --prepare on two copies of the same backup"
mariabackup --no-defaults --prepare --target-dir="$W/mb" > "$W/mb.log" 2>&1 ||
  { tail -n 30 "$W/mb.log" >&2; fail "mariabackup --prepare"; }
xbak --prepare --parallel=4 --target-dir="$W/x" 2> "$W/x.log" || { tail -n 30 "$W/x.log" >&2; fail "xbak --prepare"; }
assert_contains "$W/x/${META}checkpoints" '^backup_type = log-applied$'
grep -o 'redo applied from.*' "$W/x.log"

step "identical pages in every data file"
python3 "$CMP" "$W/mb" "$W/x" || fail "the two preparers disagree (see above)"
# The new ib_logfile0: same size and checkpoint; only the creator string differs (docs/prepare.md).
cmp -s <(head -c 16 "$W/mb/ib_logfile0") <(head -c 16 "$W/x/ib_logfile0") || fail "ib_logfile0 first_lsn differs"
cmp -s <(tail -c +4097 "$W/mb/ib_logfile0") <(tail -c +4097 "$W/x/ib_logfile0") || fail "ib_logfile0 checkpoint/tail differs"

step "restore the xbak copy: starts, CHECK TABLE EXTENDED, same checksums as the mariabackup copy"
sb_init_from_datadir dst "$dst_port" "$W/dst/data"
restore() { # DIR
  rm -rf "$W/dst/data"
  xbak --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$1" 2> "$W/copyback.log" ||
    { tail -n 20 "$W/copyback.log" >&2; fail "copy-back of $1"; }
  if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data"; fi
  sb_start dst
}
restore "$W/x"
sb_check_all dst EXTENDED
for i in 1 2 3 4; do assert_eq 20000 "$(sb_sql dst "SELECT COUNT(*) FROM sbtest.sbtest$i")" "rows in sbtest$i"; done
# Every DDL victim shows one of the states a statement boundary can leave.
sb_sql dst "SELECT table_name, engine, table_rows FROM information_schema.tables WHERE table_schema='ddl'" |
  while IFS=$'\t' read -r t e _; do
    n=$(sb_sql dst "SELECT COUNT(*) FROM ddl.\`$t\`")
    case "$n" in 0 | 100) ;; *) fail "ddl.$t ($e) has $n rows: not a statement boundary" ;; esac
  done
sb_checksums dst > "$W/sum_x"
sb_stop dst
restore "$W/mb"
sb_checksums dst > "$W/sum_mb"
sb_stop dst
sb_compare_checksums "$W/sum_mb" "$W/sum_x"

step "corrupt redo log (one byte in the middle): error names the LSN, nothing written"
datasums() { find "$1" -name '*.ibd' -o -name 'ibdata1' -o -name 'undo*' | sort | xargs md5sum | sed "s#$1##"; }
log_size=$(stat -c %s "$W/c1/ib_logfile0")
datasums "$W/c1" > "$W/c1.before"
python3 - "$W/c1/ib_logfile0" "$log_size" << 'EOF'
import sys
path, size = sys.argv[1], int(sys.argv[2])
off = 12288 + (size - 12288) // 2
with open(path, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5A]))
EOF
if xbak --prepare --target-dir="$W/c1" 2> "$W/c1.log"; then fail "xbak --prepare accepted a corrupt redo log"; fi
cat "$W/c1.log" | tail -n 2
# The flipped byte lands where the run's log puts it: in a record (the CRC-32C fails: "the redo log
# is corrupt at LSN N") or in an mtr's length ("corrupt redo log at LSN N (byte B): mtr longer
# than 1048576 bytes"); either way the error says corrupt and names the LSN.
assert_contains "$W/c1.log" 'corrupt (redo log )?at LSN [0-9]+'
assert_contains "$W/c1/${META}checkpoints" '^backup_type = full-backuped$'
datasums "$W/c1" | diff -q "$W/c1.before" - > /dev/null || fail "a data file changed although the log is corrupt"

step "truncated redo log (tail missing): error names the LSN, nothing written"
truncate -s $((log_size - 3000)) "$W/c2/ib_logfile0"
datasums "$W/c2" > "$W/c2.before"
if xbak --prepare --target-dir="$W/c2" 2> "$W/c2.log"; then fail "xbak --prepare accepted a truncated redo log"; fi
tail -n 1 "$W/c2.log"
assert_contains "$W/c2.log" 'ends at LSN [0-9]+.*truncated'
assert_contains "$W/c2/${META}checkpoints" '^backup_type = full-backuped$'
datasums "$W/c2" | diff -q "$W/c2.before" - > /dev/null || fail "a data file changed although the log is truncated"

step "restartable: SIGKILL at random moments, then run again: the same pages"
for t in 0.01 0.03 0.06 0.1 0.2; do
  timeout -s KILL "$t" "$XBAK" --prepare --parallel=2 --use-memory=16M --target-dir="$W/k" 2> /dev/null || true
done
xbak --prepare --parallel=2 --use-memory=16M --target-dir="$W/k" 2> "$W/k.log" || { tail "$W/k.log"; fail "re-run after kills"; }
python3 "$CMP" "$W/x" "$W/k" || fail "prepare interrupted by SIGKILL and re-run gives other pages"
echo "prepare: identical to mariabackup's, restartable, and refuses broken logs"
