#!/usr/bin/env bash
# Issue "hot full backup", done-when 3 and the error cases: a page corrupted on disk is reported
# with its file and page number and the backup fails; an unreachable server, wrong credentials,
# missing privileges, a non-empty target, an unreadable datadir and a full disk each give one
# clear message and a non-zero exit, and never leave an ${META}checkpoints behind.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

port=$(alloc_port)
sb_init src "$port"
sb_start src
cnf=$(sb_cnf src)

expect_fail() { # NAME REGEX CMD... : CMD must exit non-zero, print REGEX, leave no checkpoints file
  local name=$1 re=$2; shift 2
  local log="$TEST_WORK/$name.log"
  if "$@" > "$TEST_WORK/$name.out" 2> "$log"; then cat "$log" >&2; fail "$name: succeeded but must fail"; fi
  grep -Eq -- "$re" "$log" || { cat "$log" >&2; fail "$name: message does not match '$re'"; }
  if find "$TEST_WORK" -path "*$name*" -name ${META}checkpoints | grep -q .; then
    fail "$name: a failed backup left an ${META}checkpoints"
  fi
  echo "ok: $name -> $(grep -E -- "$re" "$log" | head -1)"
}

step "--export of a directory that is no backup"
expect_fail export-nobackup "is not a complete backup" "$XBAK" --prepare --export --target-dir="$TEST_WORK/none"

step "unreachable server"
dead=$(alloc_port)
expect_fail unreachable "cannot reach the MariaDB server at 127.0.0.1:$dead" \
  "$XBAK" --backup --no-defaults --host=127.0.0.1 --port="$dead" --user=x --target-dir="$TEST_WORK/unreachable"

step "wrong password"
sb_sql src "CREATE USER 'bk'@'127.0.0.1' IDENTIFIED BY 'right'; GRANT SELECT ON *.* TO 'bk'@'127.0.0.1'"
MYSQL_PWD=Zq7-not-it expect_fail wrongpw "access denied for user 'bk'" \
  "$XBAK" --backup --no-defaults --host=127.0.0.1 --port="$port" --user=bk --target-dir="$TEST_WORK/wrongpw"
if grep -q Zq7-not-it "$TEST_WORK/wrongpw.log"; then fail "the password was printed"; fi

step "missing privileges are named"
MYSQL_PWD=right expect_fail noprivs "missing required privilege RELOAD" \
  "$XBAK" --backup --no-defaults --host=127.0.0.1 --port="$port" --user=bk --target-dir="$TEST_WORK/noprivs"

step "target directory not empty"
mkdir -p "$TEST_WORK/notempty" && echo keep > "$TEST_WORK/notempty/precious"
expect_fail notempty "is not empty" "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/notempty"
assert_eq keep "$(cat "$TEST_WORK/notempty/precious")" "existing file untouched"

step "unreadable datadir"
expect_fail baddatadir "cannot read the server's datadir.*/nonexistent" \
  "$XBAK" --backup --defaults-file="$cnf" --datadir=/nonexistent/dir --target-dir="$TEST_WORK/baddatadir"

step "bad options"
expect_fail badparallel "--parallel must be between" "$XBAK" --backup --parallel=0 --target-dir=/tmp/x
expect_fail nomode "exactly one of" "$XBAK" --target-dir=/tmp/x
# --backup's options that do not fit together, refused before the server is reached.
expect_fail badstream "--stream supports only xbstream, got 'tar'" "$XBAK" --backup --stream=tar --target-dir=/tmp/x
expect_fail fifonostream "--fifo-streams needs --stream=xbstream" "$XBAK" --backup --fifo-streams=4 --fifo-dir=/tmp --target-dir=/tmp/x
expect_fail badcompress "--compress supports zstd and lz4, got 'gzip'" "$XBAK" --backup --compress=gzip --target-dir=/tmp/x
expect_fail twobases "give one of --incremental-basedir, --incremental-lsn" \
  "$XBAK" --backup --incremental-lsn=100 --incremental-basedir=/tmp/nonexistent --target-dir=/tmp/x
expect_fail spool "--redo-spool-memory must be a size of at least 1M" "$XBAK" --backup --redo-spool-memory=10K --target-dir=/tmp/x
expect_fail prepare "is not a complete backup" "$XBAK" --prepare --target-dir="$TEST_WORK/no-such-backup"
expect_fail prepare-mem "use-memory must be" "$XBAK" --prepare --use-memory=1K --target-dir="$TEST_WORK/no-such-backup"

step "disk full on the target"
mnt="$TEST_WORK/smallfs"
mkdir -p "$mnt"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=4m tmpfs "$mnt" 2> /dev/null; then
  expect_fail diskfull "No space left on device" "$XBAK" --backup --defaults-file="$cnf" --target-dir="$mnt/bk"
  [ ! -e "$mnt/bk/${META}checkpoints" ] || fail "checkpoints written on a full disk"
  umount "$mnt"
else
  echo "skip: cannot mount a small tmpfs here (not root or no permission)"
fi

step "a page corrupted on disk fails the backup, naming file and page"
sb_sql src "CREATE DATABASE c; CREATE DATABASE IF NOT EXISTS test; CREATE TABLE c.t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB;
  INSERT INTO c.t SELECT seq, REPEAT('x', 150) FROM test.seq_1_to_3000;"
sb_flush src
ibd="$(sb_datadir src)/c/t.ibd"
# Flip one byte in the middle of page 3 (the clustered index root), behind the server's back.
printf '\xff' | dd of="$ibd" bs=1 seek=$((3 * 16384 + 8000)) conv=notrunc status=none
expect_fail corrupt "Database page corruption detected in .*c/t.ibd: page 3 .*stored 0x[0-9a-f]+,? computed 0x[0-9a-f]+" \
  "$XBAK" --backup --defaults-file="$cnf" --page-retries=2 --target-dir="$TEST_WORK/corrupt"
[ ! -e "$TEST_WORK/corrupt/${META}checkpoints" ] || fail "corrupt backup has checkpoints"
sb_stop src
