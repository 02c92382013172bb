#!/usr/bin/env bash
# Issue "MariaDB 11.8 as first class", done-when 3 and 4:
#  - the version policy on real servers: a server reporting a version nobody tested (MariaDB
#    12.3.1) is refused by name before anything is written, to a directory or a stream; with
#    --no-server-version-check it is backed up, and that backup's recorded version is refused in
#    turn by --prepare and --restore (nothing changed, nothing written) unless the option is given
#    again; a version whose redo log xbak does not read (10.6) is refused even with the option;
#  - across versions: a chain (full + incremental) of MariaDB 10.11 taken under writes and DDL,
#    restored by xbak --restore from directories and from xbcloud (MinIO) into datadirs that MariaDB 11.8
#    (from its Debian root, scripts/server-root.sh) starts on; after mariadb-upgrade every table
#    passes CHECK TABLE EXTENDED and its CHECKSUM equals the same chain restored onto 10.11.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_xbcloud
[ "$XBAK_SERVER" = mariadb-10.11 ] || fail "this test runs the host's 10.11 beside 11.8 (XBAK_SERVER=$XBAK_SERVER)"
W=$TEST_WORK
bin118=$("$XBAK_SRC/scripts/server-root.sh" mariadb-11.8) || fail "no MariaDB 11.8 root"
with118() { PATH="$bin118:$PATH" "$@"; }   # a sandbox function run with 11.8's programs

# refused LOG WHAT... : the last command failed with exit status 1 and LOG names WHAT
refused() {
  local rc=$1 log=$2; shift 2
  [ "$rc" -eq 1 ] || { cat "$log" >&2; fail "expected exit status 1, got $rc"; }
  local w; for w in "$@"; do grep -qF -- "$w" "$log" || { cat "$log" >&2; fail "the error does not say '$w'"; }; done
}

step "a server reporting MariaDB 12.3.1 is refused before anything is written"
odd_port=$(alloc_port)
sb_init odd "$odd_port" "version=12.3.1-MariaDB-log"
sb_start odd
sb_sql odd "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO d.t VALUES (1,1),(2,2)"
rc=0; "$XBAK" --backup --defaults-file="$(sb_cnf odd)" --target-dir="$W/odd-bk" 2> "$W/odd.log" || rc=$?
refused "$rc" "$W/odd.log" "MariaDB 12.3.1 (the server at" "is refused: xbak has not been tested against it" \
  "tested: MariaDB 10.11, MariaDB 11.8" "--no-server-version-check"
[ ! -e "$W/odd-bk" ] || fail "the refused backup created its target directory"
rc=0; "$XBAK" --backup --defaults-file="$(sb_cnf odd)" --stream=xbstream > "$W/odd.xb" 2> "$W/odd-stream.log" || rc=$?
refused "$rc" "$W/odd-stream.log" "MariaDB 12.3.1"
[ ! -s "$W/odd.xb" ] || fail "the refused backup wrote $(stat -c %s "$W/odd.xb") bytes to its stream"

step "--no-server-version-check backs it up; its recorded version is refused by --prepare and --restore"
xbak --backup --defaults-file="$(sb_cnf odd)" --no-server-version-check --target-dir="$W/odd-bk" 2> "$W/odd.log" ||
  { cat "$W/odd.log"; fail "backup with --no-server-version-check"; }
assert_contains "$W/odd.log" "WARNING: MariaDB 12.3.1 .*going on as --no-server-version-check says"
# 12.x is past 11.1: the names mariadb-backup of that version writes.
assert_contains "$W/odd-bk/mariadb_backup_info" '^server_version = 12\.3\.1-MariaDB-log$'
sum_before=$(cd "$W/odd-bk" && find . -type f -print0 | sort -z | xargs -0 md5sum | md5sum)
rc=0; "$XBAK" --prepare --target-dir="$W/odd-bk" 2> "$W/odd-prep.log" || rc=$?
refused "$rc" "$W/odd-prep.log" "MariaDB 12.3.1 (the backup in $W/odd-bk) is refused"
assert_eq "$sum_before" "$(cd "$W/odd-bk" && find . -type f -print0 | sort -z | xargs -0 md5sum | md5sum)" \
  "the refused prepare changed the backup"
rc=0; "$XBAK" --restore --target-dir="$W/odd-bk" --datadir="$W/odd-restored" 2> "$W/odd-rst.log" || rc=$?
refused "$rc" "$W/odd-rst.log" "MariaDB 12.3.1 (the backup in $W/odd-bk) is refused"
[ -z "$(ls -A "$W/odd-restored" 2> /dev/null)" ] || fail "the refused restore wrote into the datadir"
xbak --prepare --no-server-version-check --target-dir="$W/odd-bk" 2> "$W/odd-prep.log" ||
  { cat "$W/odd-prep.log"; fail "prepare with --no-server-version-check"; }
assert_contains "$W/odd-bk/mariadb_backup_checkpoints" '^backup_type = log-applied$'
# As a stream too, for xbcloud restore's check below.
"$XBAK" --backup --defaults-file="$(sb_cnf odd)" --no-server-version-check --stream=xbstream > "$W/odd.xb" \
  2> "$W/odd-stream.log" || { cat "$W/odd-stream.log"; fail "stream backup with --no-server-version-check"; }
sb_stop odd

step "a server whose redo log xbak does not read (10.6) is refused even with the option"
old_port=$(alloc_port)
sb_init old "$old_port" "version=10.6.21-MariaDB-log"
sb_start old
rc=0; "$XBAK" --backup --defaults-file="$(sb_cnf old)" --no-server-version-check --target-dir="$W/old-bk" 2> "$W/old.log" || rc=$?
refused "$rc" "$W/old.log" "MariaDB 10.6.21 (the server at" "is not supported: its redo log format (before MariaDB 10.8)"
[ ! -e "$W/old-bk" ] || fail "the refused backup created its target directory"
sb_stop old

step "MariaDB 10.11: a full backup and an incremental under writes and DDL"
src_port=$(alloc_port)
sb_init src "$src_port"
sb_start src
cnf=$(sb_cnf src)
sb_load_sample src
sb_load_sysbench src 4 10000
sb_sql src "CREATE DATABASE ddl; CREATE TABLE ddl.keep (id INT PRIMARY KEY, v TEXT) ENGINE=InnoDB;
  INSERT INTO ddl.keep SELECT seq, REPEAT('k', 200) FROM ddl.seq_1_to_2000"
ddl_loop() {
  local i=0
  while [ ! -e "$W/stop_ddl" ]; do
    i=$((i + 1))
    sb_sql src "CREATE TABLE ddl.c$i (id INT PRIMARY KEY, v TEXT) ENGINE=InnoDB AS SELECT seq AS id, REPEAT('c', 99) AS v FROM ddl.seq_1_to_300;
      CREATE TABLE ddl.a$i (id INT PRIMARY KEY) ENGINE=Aria AS SELECT seq AS id FROM ddl.seq_1_to_50;
      ALTER TABLE ddl.c$i ADD COLUMN w INT NOT NULL DEFAULT 3, FORCE, ALGORITHM=COPY;
      RENAME TABLE ddl.c$i TO ddl.r$i; DROP TABLE IF EXISTS ddl.r$((i - 2)), ddl.a$((i - 2))" 2> /dev/null || true
  done
}
sb_sysbench src oltp_write_only --tables=4 --table-size=10000 --threads=2 --time=300 run > "$W/sysbench.log" 2>&1 &
sbpid=$!
ddl_loop &
ddlpid=$!
stop_load() { touch "$W/stop_ddl"; kill "$sbpid" 2> /dev/null || true; wait "$sbpid" "$ddlpid" 2> /dev/null || true; }
SB_ON_EXIT=(stop_load "${SB_ON_EXIT[@]}")
sleep 2
# Both as streams (their --extra-lsndir the base of the next), extracted for the directory restore.
xbak --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --extra-lsndir="$W/full-lsn" > "$W/full.xb" \
  2> "$W/full.log" || { tail "$W/full.log"; fail "full"; }
assert_file "$W/full-lsn/${META}checkpoints"   # 10.11: xtrabackup_*, as mariabackup 10.11 names them
xbak --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --incremental-basedir="$W/full-lsn" \
  > "$W/inc1.xb" 2> "$W/inc1.log" || { tail "$W/inc1.log"; fail "inc1"; }
stop_load
for b in full inc1; do
  mkdir -p "$W/$b"
  "$XBAK" --extract -C "$W/$b" < "$W/$b.xb" 2> "$W/x-$b.log" || { cat "$W/x-$b.log"; fail "extract $b"; }
done
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
os_minio_start "$s3_port" "$W/minio"
os_bucket_create "$s3_port" versions
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket=versions --progress-interval=0)
for b in full inc1; do
  "$XBCLOUD" put "${S3[@]}" "v1011/$b" < "$W/$b.xb" 2> "$W/put-$b.log" || { cat "$W/put-$b.log"; fail "xbcloud put $b"; }
done

step "xbcloud restore refuses a backup of MariaDB 12.3.1 before it downloads anything"
"$XBCLOUD" put "${S3[@]}" odd/full < "$W/odd.xb" 2> "$W/put-odd.log" || { cat "$W/put-odd.log"; fail "xbcloud put odd"; }
rc=0; "$XBCLOUD" restore "${S3[@]}" --latest --datadir="$W/odd-pitr" odd 2> "$W/odd-pitr.log" || rc=$?
refused "$rc" "$W/odd-pitr.log" "MariaDB 12.3.1 (the backup odd/full) is refused" "--no-server-version-check"
[ ! -e "$W/odd-pitr" ] || fail "the refused xbcloud restore created the datadir"
rc=0; "$XBCLOUD" restore "${S3[@]}" --latest --restore-dry-run --no-server-version-check odd 2> "$W/odd-pitr.log" || rc=$?
grep -q "is refused" "$W/odd-pitr.log" && { cat "$W/odd-pitr.log" >&2; fail "--no-server-version-check did not override"; }
assert_contains "$W/odd-pitr.log" "WARNING: MariaDB 12.3.1 \(the backup odd/full\)"

step "xbcloud restore refuses to replay 10.11's binary logs with an 11.8 server"
rc=0; "$XBCLOUD" restore "${S3[@]}" --latest --mariadbd="$bin118/mariadbd" --datadir="$W/cross-pitr" v1011 \
  2> "$W/cross-pitr.log" || rc=$?
refused "$rc" "$W/cross-pitr.log" "is MariaDB 11.8 but v1011/inc1 is of 10.11" "--mariadbd=PATH of a MariaDB 10.11 server"
[ ! -e "$W/cross-pitr" ] || fail "the refused xbcloud restore created the datadir"
sb_stop src

# restore_chain NAME HOW : the chain restored by xbak --restore (from directories, or from xbcloud
# get into named pipes) into
# the datadir of a new sandbox instance NAME (made first: the instance's directory must stay open
# to the server's user, the datadir xbak makes is not)
restore_chain() {
  local name=$1 how=$2 port; port=$(alloc_port)
  sb_init_from_datadir "$name" "$port" "$W/$name/data"
  local src=(--target-dir="$W/full" --incremental-dir="$W/inc1") gets=() b g
  if [ "$how" = xbcloud ]; then
    src=()
    for b in full inc1; do
      mkfifo "$W/$name-$b.pipe"
      "$XBCLOUD" get "${S3[@]}" "v1011/$b" > "$W/$name-$b.pipe" 2> "$W/$name-get-$b.log" &
      gets+=($!)
      src+=(--from-stream="$W/$name-$b.pipe")
    done
  fi
  xbak --restore --parallel=2 "${src[@]}" --datadir="$W/$name/data" 2> "$W/$name-restore.log" ||
    { tail "$W/$name-restore.log"; fail "restore from $how for $name"; }
  for g in "${gets[@]}"; do wait "$g" || fail "an xbcloud get for $name failed"; done
}
user_sums() { sb_checksums "$1" | grep -v '^mysql\.'; }

step "the chain restored onto 10.11 (the reference)"
restore_chain d10 dirs
sb_start d10
sb_check_all d10
user_sums d10 > "$W/d10.sum"
sb_stop d10

for how in dirs xbcloud; do
  step "the chain restored from $how onto MariaDB 11.8, mariadb-upgrade, CHECK TABLE, checksums"
  restore_chain "d11$how" "$how"
  with118 sb_start "d11$how"
  assert_contains "$(sb_errlog "d11$how")" "Version: '11\.8\." "the restored datadir runs MariaDB 11.8"
  with118 mariadb-upgrade --defaults-file="$(sb_cnf "d11$how")" > "$W/upgrade-$how.log" 2>&1 ||
    { tail -n 20 "$W/upgrade-$how.log"; fail "mariadb-upgrade on the restored datadir"; }
  sb_check_all "d11$how"
  user_sums "d11$how" > "$W/d11$how.sum"
  sb_compare_checksums "$W/d10.sum" "$W/d11$how.sum" || fail "11.8 holds other data than 10.11 ($how)"
  sb_stop "d11$how"
done
echo "version policy enforced; a 10.11 chain restored onto 11.8 from directories and from xbcloud"
