#!/usr/bin/env bash
# --history and --incremental-history-name/-uuid: a row per backup in mysql.mariadb_backup_history
# (the table mariabackup writes, shared with it), and incrementals based on that table.
#  - a full backup with --history=nightly: its row (name, tool, LSNs, format) matches its
#    ${META}checkpoints and ${META}info;
#  - a streamed incremental with --incremental-history-name=nightly starts at the full's to_lsn;
#    --incremental-history-uuid=<the full's uuid> too; mariabackup --history adds its row to the
#    same table;
#  - the chain prepares and restores to the source's data;
#  - an unknown series, and a user who may not create the table, fail before anything is copied.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

src_port=$(alloc_port)
dst_port=$(alloc_port)
W=$TEST_WORK
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
cnf=$(sb_cnf src)
H=mysql.mariadb_backup_history
field() { sb_sql src "SELECT $1 FROM $H WHERE uuid = '$2'"; }
cp_field() { sed -n "s/^$1 = //p" "$2/${META}checkpoints"; }

step "full backup with --history=nightly: its row matches its metadata"
xbak --backup --defaults-file="$cnf" --history=nightly --target-dir="$W/full" 2> "$W/full.log" ||
  { tail "$W/full.log" >&2; fail "xbak --backup --history"; }
uuid=$(sed -n 's/^uuid = //p' "$W/full/${META}info")
assert_contains "$W/full/${META}info" '^name = nightly$'
assert_eq nightly "$(field name "$uuid")" "history name"
assert_eq xbak "$(field tool_name "$uuid")"
assert_eq "$(cp_field to_lsn "$W/full")" "$(field innodb_to_lsn "$uuid")" "history innodb_to_lsn"
assert_eq "N file N" "$(field "CONCAT_WS(' ', incremental, format, partial)" "$uuid")"
field binlog_pos "$uuid" | grep -Eq "^filename 'mysql-bin\.[0-9]+', position '[0-9]+', GTID of the last change '.*'$" ||
  fail "history binlog_pos: $(field binlog_pos "$uuid")"

step "streamed incremental with --incremental-history-name=nightly starts at the full's to_lsn"
sb_sql src "UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % 2 = 0; CREATE TABLE sbtest.later (id INT PRIMARY KEY) SELECT 1 AS id"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --history=nightly --incremental-history-name=nightly \
  2> "$W/inc.log" | "$XBAK" --extract -C "$W/inc" 2> "$W/inc-x.log" ||
  { tail "$W/inc.log" "$W/inc-x.log" >&2; fail "incremental from the history"; }
assert_eq "$(cp_field to_lsn "$W/full")" "$(cp_field from_lsn "$W/inc")" "the incremental's from_lsn"
uuid2=$(sed -n 's/^uuid = //p' "$W/inc/${META}info")
assert_eq "Y mbstream" "$(field "CONCAT_WS(' ', incremental, format)" "$uuid2")"
assert_eq "$(cp_field from_lsn "$W/inc")" "$(field innodb_from_lsn "$uuid2")" "history innodb_from_lsn"
# A backup cannot hold its own history row (written once it is complete, as mariabackup does): the
# history table is left out of the comparison.
sb_checksums src | grep -v "^$H " > "$W/src.sum"

step "--incremental-history-uuid and mariabackup --history share the table"
"$XBAK" --backup --defaults-file="$cnf" --incremental-history-uuid="$uuid" --target-dir="$W/inc-u" 2> "$W/inc-u.log" ||
  { tail "$W/inc-u.log" >&2; fail "incremental from a history uuid"; }
assert_eq "$(cp_field to_lsn "$W/full")" "$(cp_field from_lsn "$W/inc-u")" "from_lsn by uuid"
mariabackup --defaults-file="$cnf" --backup --history=nightly --target-dir="$W/mb" > "$W/mb.log" 2>&1 ||
  { tail "$W/mb.log" >&2; fail "mariabackup --history on xbak's table"; }
assert_eq "2 1" "$(sb_sql src "SELECT CONCAT_WS(' ', SUM(tool_name = 'xbak'), SUM(tool_name = 'mariabackup')) FROM $H")" \
  "rows by tool"

step "the chain prepares and restores to the source's data"
prepare_backup full-apply "$W/full"
"$XBAK" --prepare --target-dir="$W/full" --incremental-dir="$W/inc" 2> "$W/p2.log" ||
  { tail "$W/p2.log" >&2; fail "prepare of the incremental"; }
copy_back_start chain "$W/full"
sb_checksums dst | grep -v "^$H " > "$W/dst.sum"
sb_compare_checksums "$W/src.sum" "$W/dst.sum" || fail "the restored chain differs from the source"
sb_stop dst

step "an unknown series, and a user who may not create the table: refused before copying"
if "$XBAK" --backup --defaults-file="$cnf" --incremental-history-name=nosuch --target-dir="$W/bad1" 2> "$W/bad1.log"; then
  fail "an incremental from an unknown series was taken"
fi
tail -n 1 "$W/bad1.log"
assert_contains "$W/bad1.log" "has no backup series 'nosuch'"
[ ! -e "$W/bad1/${META}checkpoints" ] || fail "bad1 left ${META}checkpoints"
sb_sql src "DROP TABLE $H; CREATE USER 'bk'@'localhost'; GRANT RELOAD, PROCESS, BINLOG MONITOR, SELECT ON *.* TO 'bk'@'localhost'"
if "$XBAK" --backup --no-defaults --socket="$(sb_socket src)" --user=bk --history --target-dir="$W/bad2" 2> "$W/bad2.log"; then
  fail "--history without the right to create the table was accepted"
fi
tail -n 1 "$W/bad2.log"
assert_contains "$W/bad2.log" "--history: cannot create mysql.mariadb_backup_history"
[ -z "$(find "$W/bad2" -name '*.ibd' 2> /dev/null)" ] || fail "bad2 copied data before failing"
sb_stop src
