#!/usr/bin/env bash
# --slave-info: a backup of a replica records the replication position in ${META}slave_info
# (mariabackup's format), and a copy restored from it boots a new replica that catches up with
# the primary: its data then equals the primary's.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

p_port=$(alloc_port); r_port=$(alloc_port); n_port=$(alloc_port)
W=$TEST_WORK

step "primary and replica"
sb_init primary "$p_port"; sb_start primary
sb_sql primary "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'replpw'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'"
sb_init replica "$r_port"; sb_start replica
sb_sql replica "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$p_port, MASTER_USER='repl', MASTER_PASSWORD='replpw', MASTER_USE_GTID=slave_pos; START SLAVE"
sb_load_sample primary
sb_load_many primary 30
wait_synced() { # REPLICA : until it has applied everything the primary has
  local want i
  want=$(sb_sql primary "SELECT @@gtid_binlog_pos")
  for i in $(seq 1 300); do
    [ "$(sb_sql "$1" "SELECT @@gtid_slave_pos")" = "$want" ] && return 0
    sleep 0.1
  done
  sb_sql "$1" "SHOW SLAVE STATUS\G" >&2; fail "$1 did not catch up to $want"
}
wait_synced replica

step "xbak --backup --slave-info of the replica while the primary keeps writing"
sb_sql primary "CREATE TABLE xs_app.ticks (id INT AUTO_INCREMENT PRIMARY KEY, t VARCHAR(20)) ENGINE=InnoDB"
( for i in $(seq 1 200); do sb_sql primary "INSERT INTO xs_app.ticks (t) VALUES ('tick $i')"; sleep 0.02; done ) &
writer=$!
xbak --backup --defaults-file="$(sb_cnf replica)" --slave-info --target-dir="$W/bk" 2> "$W/bk.log" || { tail "$W/bk.log"; fail "backup"; }
wait "$writer"
cat "$W/bk/${META}slave_info"
assert_contains "$W/bk/${META}slave_info" "^SET GLOBAL gtid_slave_pos = '0-$p_port-[0-9]+';$"
assert_contains "$W/bk/${META}slave_info" "^CHANGE MASTER TO master_use_gtid = slave_pos;$"
# The position in the log too, in mariabackup's words (scripts grep for them).
assert_contains "$W/bk.log" "^\[00\] [0-9-]+ [0-9:]+ MySQL slave binlog position: gtid_slave_pos '0-$p_port-[0-9]+'; master '' master_use_gtid = slave_pos$"

# A session on the primary that holds a replicated temporary table for SECONDS.
hold_temp_table() { # NAME SECONDS
  mariadb --defaults-file="$(sb_cnf primary)" -e "SET SESSION binlog_format = STATEMENT;
    CREATE TEMPORARY TABLE xs_app.$1 (id INT); INSERT INTO xs_app.$1 VALUES (1); DO SLEEP($2);
    DROP TEMPORARY TABLE xs_app.$1"
}
wait_temp_open() { # until the replica's SQL thread holds a temporary table
  local i
  for i in $(seq 1 100); do
    [ "$(sb_sql replica "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'SLAVE_OPEN_TEMP_TABLES'")" -gt 0 ] && return 0
    sleep 0.1
  done
  fail "the replica never opened the primary's temporary table"
}
sql_running() { # ON while the replica's IO and SQL threads both run
  sb_sql replica "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'SLAVE_RUNNING'"
}

step "--safe-slave-backup: waits for the replica's temporary table to close, stops the SQL thread, starts it again"
hold_temp_table t1 4 &
holder=$!
wait_temp_open
xbak --backup --defaults-file="$(sb_cnf replica)" --safe-slave-backup --slave-info --target-dir="$W/safe" 2> "$W/safe.log" ||
  { tail "$W/safe.log"; fail "backup with --safe-slave-backup"; }
wait "$holder"
grep -- '--safe-slave-backup' "$W/safe.log"
assert_contains "$W/safe.log" "temporary table\(s\) open in the replica's SQL thread" "it waited for the temporary table"
assert_contains "$W/safe.log" "SQL thread stopped \(the default connection\), no temporary table open"
assert_contains "$W/safe.log" "SQL thread started again"
assert_eq ON "$(sql_running)" "the replica's SQL thread after the backup"
assert_file "$W/safe/${META}checkpoints"

step "--safe-slave-backup-timeout: a temporary table that stays open fails the backup, the SQL thread runs again"
hold_temp_table t2 15 &
holder=$!
wait_temp_open
if "$XBAK" --backup --defaults-file="$(sb_cnf replica)" --safe-slave-backup --safe-slave-backup-timeout=2 \
  --target-dir="$W/safe-to" 2> "$W/safe-to.log"; then
  fail "--safe-slave-backup went on with a temporary table open"
fi
tail -n 2 "$W/safe-to.log"
assert_contains "$W/safe-to.log" "still has 1 temporary table\(s\) open in its SQL thread after [0-9]+ s"
[ ! -e "$W/safe-to/${META}checkpoints" ] || fail "a failed backup left ${META}checkpoints"
assert_eq ON "$(sql_running)" "the replica's SQL thread after the failed backup"
wait "$holder"
wait_synced replica

step "restore as a new replica and let it catch up"
mariabackup --no-defaults --prepare --target-dir="$W/bk" > "$W/prep.log" 2>&1 || { tail "$W/prep.log"; fail "prepare"; }
sb_init_from_datadir newrep "$n_port" "$W/newrep/data" "skip-slave-start"
"$XBAK" --copy-back --defaults-file="$(sb_cnf newrep)" --target-dir="$W/bk" 2> "$W/cb.log" || { cat "$W/cb.log"; fail "copy-back"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/newrep/data"; fi
sb_start newrep
sb_sql newrep "RESET SLAVE ALL; $(cat "$W/bk/${META}slave_info" | sed 's/CHANGE MASTER TO master_use_gtid = slave_pos;//')
  CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$p_port, MASTER_USER='repl', MASTER_PASSWORD='replpw', MASTER_USE_GTID=slave_pos;
  START SLAVE"
sb_sql primary "INSERT INTO xs_app.ticks (t) VALUES ('after restore')"
wait_synced newrep
# User data must equal the primary's; the mysql schema is each server's own (install-db writes
# host-specific grants), so it must equal the replica the backup was taken from.
wait_synced replica
sb_checksums primary | grep -v '^mysql\.' > "$W/p.sum"
sb_checksums newrep | grep -v '^mysql\.' > "$W/n.sum"
sb_compare_checksums "$W/p.sum" "$W/n.sum" || fail "the new replica's data differs from the primary"
sb_checksums replica | grep '^mysql\.' > "$W/rm.sum"
sb_checksums newrep | grep '^mysql\.' > "$W/nm.sum"
sb_compare_checksums "$W/rm.sum" "$W/nm.sum" || fail "the new replica's mysql schema differs from the replica's"
assert_eq 201 "$(sb_sql newrep 'SELECT COUNT(*) FROM xs_app.ticks')" "ticks on the new replica"
sb_stop newrep; sb_stop replica; sb_stop primary
