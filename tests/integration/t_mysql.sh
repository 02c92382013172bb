#!/usr/bin/env bash
# Issue "hot backups of MySQL 9.7 LTS", its first step: real MySQL in the tests.
#  - MySQL 9.7 from Debian's unstable suite (a Debian root scripts/server-root.sh makes once) runs
#    in the sandbox on loopback beside the host's MariaDB, its datadir at the same path inside the
#    root and out, and takes sysbench's writes;
#  - its datadir has the layout the MySQL backup will read (#innodb_redo/#ib_redoN, mysql.ibd,
#    undo_001/002, the .dblwr files), so that a change of it in a later 9.7 is seen here first;
#  - until xbak reads MySQL's formats, a backup of it is refused by name under those writes, with
#    exit status 1 and before anything is written (no target directory, an empty stream), and
#    --no-server-version-check does not override that.
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
kill "$load" 2> /dev/null || true
wait "$load" 2> /dev/null || true
withmy sb_stop my
step "done"
