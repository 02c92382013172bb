#!/usr/bin/env bash
# Issue "hot backups of MySQL 9.7 LTS", its first step: real MySQL in the tests.
#  - MySQL 9.7 from Debian's unstable suite (a Debian root scripts/server-root.sh makes once) runs
#    in the sandbox on loopback beside the host's MariaDB, its datadir at the same path inside the
#    root and out, and takes sysbench's writes;
#  - its datadir has the layout the MySQL backup will read (#innodb_redo/#ib_redoN, mysql.ibd,
#    undo_001/002, the .dblwr files), so that a change of it in a later 9.7 is seen here first;
#  - until xbak reads MySQL's formats, a backup of it is refused by name under those writes, with
#    exit status 1 and before anything is written (no target directory, an empty stream), and
#    --no-server-version-check does not override that;
#  - xbak's MySQL redo copier and page checks (driven by tests/tools/mysql_copy.cc) make a hot
#    copy under one-row-per-transaction writes that mysqld 9.7 recovers (from the backup log
#    turned into one #ib_redo0, with the binary log up to the position read with it) to exactly
#    the transactions committed at the consistent point read from performance_schema.log_status.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
W=$TEST_WORK
bin97=$("$XBAK_SRC/scripts/server-root.sh" mysql-9.7) || fail "no MySQL 9.7 root"
withmy() { PATH="$bin97:$PATH" SB_FLAVOR=mysql "$@"; } # a sandbox function run as MySQL 9.7

step "MySQL 9.7 starts in its root and takes sysbench's writes"
port=$(alloc_port)
withmy sb_init my "$port"
withmy sb_start my
version=$(sb_sql my "SELECT VERSION()")
case "$version" in 9.7.*) ;; *) fail "the mysql-9.7 root runs $version" ;; esac
assert_eq "ON" "$(sb_sql my "SELECT @@gtid_mode")" "gtid_mode"
datadir=$(sb_datadir my)
assert_eq "${datadir%/}" "$(sb_sql my "SELECT TRIM(TRAILING '/' FROM @@datadir)")" \
  "the server's datadir is not the path the host sees"
withmy sb_load_sysbench my 4 2000
sb_sysbench my oltp_write_only --tables=4 --table-size=2000 --threads=2 --time=60 --rate=200 run \
  > "$W/sysbench.log" 2>&1 &
load=$!
sleep 2
kill -0 "$load" || { cat "$W/sysbench.log"; fail "sysbench stopped"; }

step "the datadir has the files a MySQL backup reads"
for f in mysql.ibd undo_001 undo_002 ibdata1 sbtest/sbtest1.ibd; do
  [ -f "$datadir/$f" ] || fail "no $f in the MySQL 9.7 datadir"
done
ls "$datadir/#innodb_redo" | grep -qE '^#ib_redo[0-9]+$' || fail "no #innodb_redo/#ib_redoN files"
ls "$datadir" | grep -qE '^#ib_16384_[0-9]+\.dblwr$' || fail "no doublewrite files"

step "a backup of it is refused by name under writes, before anything is written"
for extra in "" --no-server-version-check; do
  rc=0
  "$XBAK" --backup --defaults-file="$(sb_cnf my)" $extra --target-dir="$W/bk" 2> "$W/refused.log" || rc=$?
  [ "$rc" -eq 1 ] || { cat "$W/refused.log" >&2; fail "expected exit status 1 ($extra), got $rc"; }
  assert_contains "$W/refused.log" "MySQL ${version%%-*} \\(the server at socket .*\\) is not supported"
  assert_contains "$W/refused.log" "Nothing was written"
  [ ! -e "$W/bk" ] || fail "the refused backup created its target directory ($extra)"
  rc=0
  "$XBAK" --backup --defaults-file="$(sb_cnf my)" $extra --stream=xbstream > "$W/s.xb" 2> "$W/refused.log" || rc=$?
  [ "$rc" -eq 1 ] || { cat "$W/refused.log" >&2; fail "expected exit status 1 for a stream ($extra), got $rc"; }
  [ ! -s "$W/s.xb" ] || fail "the refused backup wrote $(stat -c %s "$W/s.xb") bytes to its stream ($extra)"
done
kill -0 "$load" || { cat "$W/sysbench.log"; fail "sysbench stopped during the refusals"; }
# sysbench itself, then the shell function that runs it: the ledger below must be the only writer.
pkill -P "$load" sysbench 2> /dev/null || true
kill "$load" 2> /dev/null || true
wait "$load" 2> /dev/null || true

# xbak's MySQL pieces on the live server, driven by tests/tools/mysql_copy.cc until xbak --backup
# runs them: the redo copier (across the 2 MiB files the server fills about every second here,
# held and cut at the consistent LSN), the data files copied page by page in MySQL's format
# while written, and the backup log turned into the one redo file mysqld recovers from.
step "a hot copy with xbak's MySQL redo copier recovers to exactly the consistent point"
TOOL=$XBAK_BUILD/tests/xbak_test_mysql_copy
[ -x "$TOOL" ] || fail "no $TOOL (build the tests)"
sb_sql my "CREATE DATABASE led; CREATE TABLE led.ledger (id INT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB"
gtid_seq() { sed -E 's/.*[:-]([0-9]+)$/\1/' <<< "$1"; } # the last transaction number of a one-server GTID set
base=$(gtid_seq "$(sb_sql my "SELECT @@gtid_executed")")
# The only writer from now on: one INSERT per transaction, ids 1, 2, 3... in order.
seq 1 2000000 | sed "s/.*/INSERT INTO led.ledger VALUES (&, REPEAT('x', 200));/" |
  mariadb --defaults-file="$(sb_cnf my)" > "$W/ledger.log" 2>&1 &
ledger=$!
sleep 1
hot=$W/hot
mkdir -p "$hot/data"
coproc COPY { "$TOOL" redo "$datadir/#innodb_redo" "$hot/xtrabackup_logfile" 2> "$W/redo-copy.log"; }
read -r word cp <&"${COPY[0]}" || { cat "$W/redo-copy.log"; fail "the redo copier did not start"; }
assert_eq checkpoint "$word"
(cd "$datadir" && find . -path './#innodb_redo' -prune -o -path './#innodb_temp' -prune -o \
  -type f ! -name ibtmp1 ! -name '*.dblwr' -print) > "$W/files"
while read -r f; do
  mkdir -p "$hot/data/$(dirname "$f")"
  case "$f" in
    *.ibd | ./ibdata1 | ./undo_[0-9]*) "$TOOL" file "$datadir/$f" "$hot/data/$f" || fail "copying $f" ;;
    *) cp -p "$datadir/$f" "$hot/data/$f" ;;
  esac
done < "$W/files"
echo hold >&"${COPY[1]}"
read -r word <&"${COPY[0]}"
assert_eq held "$word"
read -r lsn gtids blf blp < <(sb_sql my "SELECT STORAGE_ENGINES->>'\$.InnoDB.LSN', LOCAL->>'\$.gtid_executed',
  LOCAL->>'\$.binary_log_file', LOCAL->>'\$.binary_log_position' FROM performance_schema.log_status")
# The binary log up to that position: recovery commits the transactions it finds prepared in
# InnoDB that the binary log holds (committed in it, not yet in InnoDB at the LSN) and rolls back
# the others, as XtraBackup's prepare does with the binlog it copies.
mkdir -p "$hot/binlog"
head -c "$blp" "$(dirname "$(sb_cnf my)")/binlog/$blf" > "$hot/binlog/$blf"
echo "finish $lsn" >&"${COPY[1]}"
read -r word <&"${COPY[0]}" || true
[ "$word" = done ] || { cat "$W/redo-copy.log"; fail "the redo copier failed"; }
kill "$ledger" 2> /dev/null || true
wait "$ledger" 2> /dev/null || true
want=$(($(gtid_seq "$gtids") - base))
[ "$want" -gt 1000 ] || fail "only $want ledger rows were committed during the copy"
log_mib=$(($(stat -c %s "$hot/xtrabackup_logfile") >> 20))
[ "$log_mib" -ge 4 ] || fail "the copy spanned $log_mib MiB of redo: fewer than two of the server's files"
"$TOOL" recovery-log "$hot/xtrabackup_logfile" > /dev/null
mkdir -p "$hot/data/#innodb_redo"
mv "$hot/xtrabackup_logfile" "$hot/data/#innodb_redo/#ib_redo0"
withmy sb_init_from_datadir rec "$(alloc_port)" "$hot/data"
cp "$hot/binlog/$blf" "$W/rec/binlog/$blf"
echo "$W/rec/binlog/$blf" > "$W/rec/binlog/mysql-bin.index"
chown -R mysql:mysql "$W/rec/binlog"
withmy sb_start rec
read -r rows max < <(sb_sql rec "SELECT COUNT(*), IFNULL(MAX(id), 0) FROM led.ledger")
assert_eq "$want" "$rows" "ledger rows recovered (the transactions committed at LSN $lsn)"
assert_eq "$want" "$max" "the last ledger id recovered"
for t in led.ledger sbtest.sbtest1 sbtest.sbtest2 sbtest.sbtest3 sbtest.sbtest4; do
  sb_sql rec "CHECK TABLE $t" | grep -q "status	OK" || fail "CHECK TABLE $t failed on the recovered copy"
done
withmy sb_stop rec
withmy sb_stop my
step "done"
