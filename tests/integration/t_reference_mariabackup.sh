#!/usr/bin/env bash
# Proves the harness with the reference tool: mariabackup backs up a sandbox holding the sample
# data set, prepares and copies it back into a fresh datadir; a second instance started on it
# must pass CHECK TABLE and have the same CHECKSUM TABLE values as the source. Finally the
# verifier itself is checked: one changed row on the restored side must make the comparison fail.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v mariabackup > /dev/null || fail "mariabackup not installed (scripts/install-deps.sh)"
# Note: mariabackup insists that --defaults-file / --no-defaults is its FIRST option.

src_port=$(alloc_port)
dst_port=$(alloc_port)
bk="$TEST_WORK/backup"

step "init + start source on port $src_port"
sb_init src "$src_port"
sb_start src

step "load data: sample schemas, 100 small tables, sysbench 2x2000"
sb_load_sample src
sb_load_many src 100
sb_load_sysbench src 2 2000
sb_checksums src > "$TEST_WORK/src.sum"
n_tables=$(wc -l < "$TEST_WORK/src.sum")
echo "source: $n_tables tables checksummed"
[ "$n_tables" -ge 130 ] || fail "expected at least 130 tables in the checksum list, got $n_tables"

step "mariabackup --backup"
mariabackup --defaults-file="$(sb_cnf src)" --backup --parallel=2 --target-dir="$bk" \
  > "$TEST_WORK/backup.log" 2>&1 || { tail -n 30 "$TEST_WORK/backup.log" >&2; fail "mariabackup --backup failed"; }
assert_contains "$TEST_WORK/backup.log" 'completed OK!' "backup log"
assert_contains "$bk/${META}checkpoints" '^backup_type = full-backuped' "checkpoints"
assert_file "$bk/${META}binlog_info"
assert_file "$bk/xs_engines/t_csv.CSV"
# (tables whose page 0 was not yet flushed are copied as NAME.new via "DDL tracking"; --prepare
# renames them to NAME.ibd)

step "mariabackup --prepare"
mariabackup --no-defaults --prepare --target-dir="$bk" > "$TEST_WORK/prepare.log" 2>&1 ||
  { tail -n 30 "$TEST_WORK/prepare.log" >&2; fail "mariabackup --prepare failed"; }
assert_contains "$TEST_WORK/prepare.log" 'completed OK!' "prepare log"
assert_file "$bk/xs_rowfmt/t_compressed.ibd"
assert_file "$bk/xs_app/events#P#p2021.ibd"

step "mariabackup --copy-back into a fresh datadir"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/dst/data"
mariabackup --defaults-file="$(sb_cnf dst)" --copy-back --target-dir="$bk" > "$TEST_WORK/copy-back.log" 2>&1 ||
  { tail -n 30 "$TEST_WORK/copy-back.log" >&2; fail "mariabackup --copy-back failed"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$(sb_datadir dst)"; fi
assert_file "$(sb_datadir dst)/ibdata1"

step "start restored instance on port $dst_port"
sb_start dst
if grep -F '[ERROR]' "$(sb_errlog dst)"; then fail "restored server logged errors"; fi

step "verify restored instance: CHECK TABLE, objects, checksums"
sb_check_all dst
assert_eq 1000 "$(sb_sql dst 'SELECT COUNT(*) FROM xs_app.v_customer_totals')" "rows of the view"
assert_eq 1 "$(sb_sql dst "SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema='xs_app'")" "triggers"
assert_eq 1 "$(sb_sql dst "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema='xs_app'")" "routines"
assert_eq 4 "$(sb_sql dst "SELECT COUNT(*) FROM information_schema.partitions WHERE table_schema='xs_app' AND table_name='events'")" "partitions"
assert_eq 50 "$(sb_sql dst "SELECT COUNT(*) FROM xs_app.articles WHERE MATCH(title, body) AGAINST('+backups' IN BOOLEAN MODE)")" "fulltext search"
sb_sql dst "CALL xs_app.add_orders(1)" # the procedure and the trigger still work
assert_eq 801 "$(sb_sql dst 'SELECT COUNT(*) FROM xs_app.orders_audit')" "trigger fired"
sb_sql dst "DELETE FROM xs_app.orders_audit WHERE order_id > 800; DELETE FROM xs_app.orders WHERE id > 800"
sb_checksums dst > "$TEST_WORK/dst.sum"
sb_compare_checksums "$TEST_WORK/src.sum" "$TEST_WORK/dst.sum" || fail "restored data differs from the source"

step "self-test: a changed row must be detected"
sb_sql dst "UPDATE xs_rowfmt.t_redundant SET b = b + 1 WHERE id = 42"
sb_checksums dst > "$TEST_WORK/dst2.sum"
if sb_compare_checksums "$TEST_WORK/src.sum" "$TEST_WORK/dst2.sum" 2> "$TEST_WORK/compare2.txt"; then
  fail "sb_compare_checksums did not notice a changed row"
fi
assert_contains "$TEST_WORK/compare2.txt" '^-xs_rowfmt.t_redundant ' "mismatch report"
assert_eq 1 "$(grep -c '^-' "$TEST_WORK/compare2.txt")" "exactly one table reported"

step "stop both instances"
sb_stop dst
sb_stop src
