#!/usr/bin/env bash
# --galera-info on a one-node Galera cluster (Debian's galera-4 provider, every address on
# 127.0.0.1), under a write load:
#  - the backup completes and writes ${META}galera_info as "UUID:SEQNO DOMAIN", with the
#    cluster's state UUID and a seqno read under BLOCK_COMMIT: between the node's last committed
#    seqno before and after the backup, and equal to the number of write transactions the restored
#    copy holds (each load transaction inserts one row, after the first few seqnos of setup);
#  - the backup prepares, restores (wsrep off) and passes CHECK TABLE;
#  - on a server that is not a Galera node, --galera-info warns and writes no file.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
PROVIDER=/usr/lib/galera/libgalera_smm.so
[ -f "$PROVIDER" ] || fail "the Galera provider $PROVIDER is missing (Debian package galera-4)"

W=$TEST_WORK
port=$(alloc_port)
gport=$(alloc_port)
dst_port=$(alloc_port)

step "one-node Galera cluster on loopback"
sb_init g "$port" "wsrep_on=ON" "wsrep_provider=$PROVIDER" "wsrep_cluster_address=gcomm://" \
  "wsrep_provider_options=gmcast.listen_addr=tcp://127.0.0.1:$gport;base_host=127.0.0.1;ist.recv_addr=127.0.0.1" \
  "wsrep_node_address=127.0.0.1" "binlog_format=ROW" "innodb_autoinc_lock_mode=2"
sb_start g
assert_eq 1 "$(sb_sql g "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'")" "cluster size"
state_uuid=$(sb_sql g "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_UUID'")
last_committed() { sb_sql g "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_LAST_COMMITTED'"; }
sb_sql g "CREATE DATABASE gal; CREATE TABLE gal.ticks (id INT AUTO_INCREMENT PRIMARY KEY, seq BIGINT NOT NULL)"
base=$(last_committed) # every later write transaction is one insert

step "xbak --backup --galera-info under writes"
( while [ ! -e "$W/stop" ]; do sb_sql g "INSERT INTO gal.ticks (seq) VALUES (0)" || true; done ) &
writer=$!
sleep 1
before=$(last_committed)
xbak --backup --defaults-file="$(sb_cnf g)" --galera-info --target-dir="$W/bk" 2> "$W/bk.log" ||
  { touch "$W/stop"; tail -n 20 "$W/bk.log" >&2; fail "backup of a Galera node"; }
after=$(last_committed)
touch "$W/stop"
wait "$writer"
cat "$W/bk/${META}galera_info"
grep -Eq "^$state_uuid:[0-9]+ 0$" "$W/bk/${META}galera_info" ||
  fail "${META}galera_info is not '$state_uuid:SEQNO 0'"
seqno=$(sed -E 's/^[^:]*:([0-9]+) .*/\1/' "$W/bk/${META}galera_info")
[ "$seqno" -ge "$before" ] && [ "$seqno" -le "$after" ] ||
  fail "seqno $seqno is not between the node's $before before and $after after the backup"
echo "seqno $seqno (node at $before before the backup, $after after)"

step "prepare, restore without wsrep: CHECK TABLE, and the rows match the recorded seqno"
prepare_backup galera "$W/bk"
copy_back_start galera "$W/bk"
rows=$(sb_sql dst "SELECT COUNT(*) FROM gal.ticks")
assert_eq "$((seqno - base))" "$rows" "rows in the restored copy (seqno $seqno - $base at the table's creation)"
sb_stop dst
sb_stop g

step "not a Galera node: a warning, no file"
sb_init plain "$port"
sb_start plain
xbak --backup --defaults-file="$(sb_cnf plain)" --galera-info --target-dir="$W/plainbk" 2> "$W/plain.log" ||
  { tail "$W/plain.log" >&2; fail "--galera-info on a plain server"; }
assert_contains "$W/plain.log" "--galera-info: this server is not a Galera node"
[ ! -e "$W/plainbk/${META}galera_info" ] || fail "${META}galera_info written for a plain server"
sb_stop plain
