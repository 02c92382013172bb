#!/usr/bin/env bash
# Issue 23 (encrypted backups), end to end with the real server, under sysbench writes (and then,
# without load, through xbcloud both ways with the restored checksums equal to the source's):
#  - --backup --encrypt to a directory, to stdout (zstd) and to 8 FIFOs (lz4) through xbcloud and
#    MinIO; every file is X.xbenc and none of the marker strings put into the tables (InnoDB,
#    MyISAM, Aria) is anywhere in the bytes, on disk or in the bucket;
#  - back: --decrypt, --extract --decrypt (from xbcloud get), --decompress, prepare, restore:
#    the server starts, CHECK TABLE passes, sysbench's invariant holds, the markers are there;
#  - tampering and mistakes through the command line: a flipped byte, a truncated file, a file of
#    another backup, a wrong key, a key file others may read, a key on the command line: each a
#    non-zero exit naming the file (and the byte), nothing written as if sound.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
: "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
[ -x "$XBCLOUD" ] || fail "xbcloud binary not found at $XBCLOUD"
. "$XBAK_SRC/scripts/lib/objstore.sh"
SB_ON_EXIT+=(os_cleanup)

TABLES=4
ROWS=10000
src_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-enc

step "source server, sysbench tables and marker rows in three engines"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src $TABLES $ROWS
M1="XBAKMARKER-innodb-$RANDOM$RANDOM"
M2="XBAKMARKER-myisam-$RANDOM$RANDOM"
M3="XBAKMARKER-aria-$RANDOM$RANDOM"
sb_sql src "CREATE DATABASE secret;
  CREATE TABLE secret.i (id INT PRIMARY KEY, s VARCHAR(100), KEY (s)) ENGINE=InnoDB;
  INSERT INTO secret.i SELECT seq, CONCAT('$M1', seq) FROM test.seq_1_to_2000;
  CREATE TABLE secret.m (id INT PRIMARY KEY, s VARCHAR(100)) ENGINE=MyISAM;
  INSERT INTO secret.m VALUES (1, '$M2');
  CREATE TABLE secret.a (id INT PRIMARY KEY, s VARCHAR(100)) ENGINE=Aria;
  INSERT INTO secret.a VALUES (1, '$M3');"
cnf=$(sb_cnf src)
key="$TEST_WORK/backup.key"
(umask 077 && openssl rand -base64 24 > "$key")

# no_markers DIR LABEL : none of the marker strings in any byte under DIR
no_markers() {
  if grep -r -l -a -F -e XBAKMARKER "$1" > "$TEST_WORK/found.txt" 2> /dev/null; then
    head "$TEST_WORK/found.txt" >&2
    fail "$2: clear text of the tables in the backup"
  fi
  echo "$2: no marker in $(find "$1" -type f | wc -l) files"
}

# only_encrypted DIR LABEL : every file is X.xbenc
only_encrypted() {
  local plain
  plain=$(find "$1" -type f ! -name '*.xbenc' | head -5)
  [ -z "$plain" ] || fail "$2: files not encrypted: $plain"
}

# refused LABEL REGEX CMD... : CMD exits non-zero and its stderr matches REGEX
refused() {
  local label=$1 re=$2
  shift 2
  if "$@" > "$TEST_WORK/$label.out" 2> "$TEST_WORK/$label.err"; then fail "$label: accepted"; fi
  assert_contains "$TEST_WORK/$label.err" "$re" "$label"
  echo "$label: refused: $(head -c 300 "$TEST_WORK/$label.err")"
}

# restore_check LABEL DIR : prepare, copy back, start, CHECK TABLE, sysbench rows, markers
restore_check() {
  prepare_backup "$1" "$2"
  copy_back_start "$1" "$2"
  check_rows dst "$1" $TABLES $ROWS
  assert_eq 2000 "$(sb_sql dst "SELECT COUNT(*) FROM secret.i WHERE s LIKE '$M1%'")" "$1: InnoDB markers"
  assert_eq "$M2" "$(sb_sql dst "SELECT s FROM secret.m")" "$1: MyISAM marker"
  assert_eq "$M3" "$(sb_sql dst "SELECT s FROM secret.a")" "$1: Aria marker"
  sb_stop dst
}

step "MinIO and a bucket"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)

step "sysbench oltp_write_only in the background for every backup"
sb_sysbench src oltp_write_only --tables=$TABLES --table-size=$ROWS --threads=2 --time=600 \
  --report-interval=10 run > "$TEST_WORK/sysbench.log" 2>&1 &
sbpid=$!
sleep 2
kill -0 "$sbpid" || { cat "$TEST_WORK/sysbench.log"; fail "sysbench did not start"; }

step "directory: --encrypt=AES256 --encrypt-threads=2, then --decrypt --remove-original"
d1="$TEST_WORK/d1"
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$d1" --encrypt=AES256 \
  --encrypt-key-file="$key" --encrypt-threads=2 2> "$TEST_WORK/b1.log" ||
  { tail -n 20 "$TEST_WORK/b1.log" >&2; fail "encrypted directory backup failed"; }
assert_contains "$TEST_WORK/b1.log" "encrypting every file with AES256, key id [0-9a-f]{16}"
only_encrypted "$d1" dir
assert_file "$d1/${META}checkpoints.xbenc"
no_markers "$d1" dir
cp -a "$d1" "$TEST_WORK/d1.enc"
xbak --decrypt=AES256 --encrypt-key-file="$key" --target-dir="$d1" --parallel=2 --remove-original \
  2> "$TEST_WORK/dec1.log" || { cat "$TEST_WORK/dec1.log" >&2; fail "--decrypt failed"; }
[ -z "$(find "$d1" -name '*.xbenc')" ] || fail "--remove-original left .xbenc files"

step "stdout, zstd then encrypted, extracted with --decrypt on the fly (key from XBAK_ENCRYPT_KEY)"
d2="$TEST_WORK/d2"
XBAK_ENCRYPT_KEY=$(cat "$key") "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream \
  --compress=zstd --compress-threads=2 --encrypt=AES256 2> "$TEST_WORK/b2.log" > "$TEST_WORK/b2.xb" ||
  { tail -n 20 "$TEST_WORK/b2.log" >&2; fail "encrypted stream backup failed"; }
if grep -q -a -F XBAKMARKER "$TEST_WORK/b2.xb"; then fail "stdout: a marker in the stream"; fi
xbak --extract --decrypt=AES256 --encrypt-key-file="$key" --input="$TEST_WORK/b2.xb" -C "$d2" \
  2> "$TEST_WORK/x2.log" || { cat "$TEST_WORK/x2.log" >&2; fail "--extract --decrypt failed"; }
assert_file "$d2/ibdata1.zst"
[ -z "$(find "$d2" -name '*.xbenc')" ] || fail "--extract --decrypt left .xbenc files"
xbak --decompress --remove-original --target-dir="$d2" 2> "$TEST_WORK/dc2.log" ||
  { cat "$TEST_WORK/dc2.log" >&2; fail "--decompress failed"; }

step "--verify of encrypted backups with the key (decrypted as read, nothing on disk), and without it"
xbak --verify --parallel=2 --target-dir="$TEST_WORK/d1.enc" --encrypt-key-file="$key" > "$TEST_WORK/v1.txt" 2>&1 ||
  { cat "$TEST_WORK/v1.txt" >&2; fail "--verify of the encrypted directory backup failed"; }
tail -1 "$TEST_WORK/v1.txt"
xbak --extract --input="$TEST_WORK/b2.xb" -C "$TEST_WORK/d2.enc" 2> "$TEST_WORK/x2e.log" ||
  { cat "$TEST_WORK/x2e.log" >&2; fail "--extract of the encrypted stream failed"; }
only_encrypted "$TEST_WORK/d2.enc" stdout-extracted
XBAK_ENCRYPT_KEY=$(cat "$key") "$XBAK" --verify --target-dir="$TEST_WORK/d2.enc" > "$TEST_WORK/v2.txt" 2>&1 ||
  { cat "$TEST_WORK/v2.txt" >&2; fail "--verify of the compressed and encrypted backup failed"; }
tail -1 "$TEST_WORK/v2.txt"
[ -z "$(find "$TEST_WORK/d2.enc" -type f ! -name '*.xbenc')" ] || fail "--verify left decrypted files"
if "$XBAK" --verify --target-dir="$TEST_WORK/d1.enc" > "$TEST_WORK/v3.txt" 2>&1; then fail "--verify without the key passed"; fi
assert_contains "$TEST_WORK/v3.txt" "needs the backup's key"

step "8 FIFOs, lz4 then encrypted (CHACHA20), through xbcloud put to MinIO; no marker in the bucket"
xbcloud_put_pid=""
"$XBCLOUD" put "${S3[@]}" --parallel=8 --fifo-streams=8 --fifo-dir="$TEST_WORK/pf" enc8 2> "$TEST_WORK/put8.log" &
xbcloud_put_pid=$!
xbak --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --compress=lz4 --encrypt=CHACHA20 \
  --encrypt-key-file="$key" --encrypt-threads=2 --fifo-streams=8 --fifo-dir="$TEST_WORK/pf" \
  2> "$TEST_WORK/b8.log" || { tail -n 20 "$TEST_WORK/b8.log" >&2; fail "encrypted FIFO backup failed"; }
wait "$xbcloud_put_pid" || { cat "$TEST_WORK/put8.log" >&2; fail "xbcloud put failed"; }

step "an incremental of the encrypted directory backup: its base LSN read from the .xbenc with the key"
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$TEST_WORK/d1.enc" \
  --target-dir="$TEST_WORK/inc1" --encrypt=AES256 --encrypt-key-file="$key" 2> "$TEST_WORK/binc.log" ||
  { tail -n 20 "$TEST_WORK/binc.log" >&2; fail "encrypted incremental backup failed"; }
only_encrypted "$TEST_WORK/inc1" incremental
refused_early=0
"$XBAK" --backup --defaults-file="$cnf" --incremental-basedir="$TEST_WORK/d1.enc" --target-dir="$TEST_WORK/inc-nokey" \
  > /dev/null 2> "$TEST_WORK/inc-nokey.err" || refused_early=1
[ $refused_early = 1 ] || fail "an incremental of an encrypted base without its key was accepted"
assert_contains "$TEST_WORK/inc-nokey.err" "needs the backup's key"
# sb_sysbench runs in a background subshell: its sysbench is that subshell's child, which
# killing the subshell alone would leave running.
pkill -TERM -P "$sbpid" 2> /dev/null || true
kill "$sbpid" 2> /dev/null || true
wait "$sbpid" 2> /dev/null || true
os_py "
import sys
n = 0
for page in s3.get_paginator('list_objects_v2').paginate(Bucket='$bucket', Prefix='enc8/'):
    for o in page.get('Contents', []):
        body = s3.get_object(Bucket='$bucket', Key=o['Key'])['Body'].read()
        n += 1
        if b'XBAKMARKER' in body:
            sys.exit('marker in ' + o['Key'])
print('bucket: no marker in', n, 'objects')
"
"$XBCLOUD" verify "${S3[@]}" enc8 > "$TEST_WORK/verify8.txt" 2>&1 ||
  { cat "$TEST_WORK/verify8.txt" >&2; fail "xbcloud verify of an encrypted backup (no key) failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=4 enc8 2> "$TEST_WORK/get8.log" |
  "$XBAK" --extract --decrypt=CHACHA20 --encrypt-key-file="$key" -C "$TEST_WORK/d8" 2> "$TEST_WORK/x8.log" ||
  { cat "$TEST_WORK/get8.log" "$TEST_WORK/x8.log" >&2; fail "xbcloud get | xbak --extract --decrypt failed"; }
xbak --decompress --remove-original --target-dir="$TEST_WORK/d8" 2> "$TEST_WORK/dc8.log" ||
  { cat "$TEST_WORK/dc8.log" >&2; fail "--decompress after get failed"; }

step "each copy restores: prepare, copy-back, start, CHECK TABLE, rows, markers"
restore_check dir "$d1"
# The chain: --prepare given the key decrypts each backup in place first.
cp -a "$TEST_WORK/d1.enc" "$TEST_WORK/chain"
xbak --prepare --parallel=2 --target-dir="$TEST_WORK/chain" --encrypt-key-file="$key" 2> "$TEST_WORK/pchain.log" ||
  { tail -n 20 "$TEST_WORK/pchain.log" >&2; fail "--prepare of an encrypted full backup failed"; }
assert_contains "$TEST_WORK/pchain.log" "decrypting the backup in .* in place before the prepare"
xbak --prepare --parallel=2 --target-dir="$TEST_WORK/chain" --incremental-dir="$TEST_WORK/inc1" \
  --encrypt-key-file="$key" 2> "$TEST_WORK/pinc.log" ||
  { tail -n 20 "$TEST_WORK/pinc.log" >&2; fail "--prepare of an encrypted incremental failed"; }
copy_back_start chain "$TEST_WORK/chain"
check_rows dst chain $TABLES $ROWS
assert_eq 2000 "$(sb_sql dst "SELECT COUNT(*) FROM secret.i WHERE s LIKE '$M1%'")" "chain: InnoDB markers"
sb_stop dst
restore_check stdout-zstd "$d2"
restore_check fifo8-lz4-s3 "$TEST_WORK/d8"

step "without load, through xbcloud both ways: the restored data's checksums equal the source's"
sb_checksums src > "$TEST_WORK/src.sum"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --encrypt=AES256 --encrypt-key-file="$key" \
  2> "$TEST_WORK/q1.log" | "$XBCLOUD" put "${S3[@]}" --parallel=4 quiet1 2> "$TEST_WORK/qput1.log" ||
  { cat "$TEST_WORK/q1.log" "$TEST_WORK/qput1.log" >&2; fail "encrypted stdout | xbcloud put failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=4 quiet1 2> "$TEST_WORK/qget1.log" |
  "$XBAK" --extract --decrypt=AES256 --encrypt-key-file="$key" -C "$TEST_WORK/q1" 2> "$TEST_WORK/qx1.log" ||
  { cat "$TEST_WORK/qget1.log" "$TEST_WORK/qx1.log" >&2; fail "xbcloud get | xbak --extract --decrypt failed"; }
restore_and_verify "$TEST_WORK/q1" quiet-stdout-plain
"$XBCLOUD" put "${S3[@]}" --parallel=8 --fifo-streams=8 --fifo-dir="$TEST_WORK/qpf" quiet8 2> "$TEST_WORK/qput8.log" &
xbcloud_put_pid=$!
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --compress=zstd --encrypt=AES256 \
  --encrypt-key-file="$key" --fifo-streams=8 --fifo-dir="$TEST_WORK/qpf" 2> "$TEST_WORK/q8.log" ||
  { tail -n 20 "$TEST_WORK/q8.log" >&2; fail "encrypted zstd FIFO backup failed"; }
wait "$xbcloud_put_pid" || { cat "$TEST_WORK/qput8.log" >&2; fail "xbcloud put --fifo-streams=8 failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=8 quiet8 2> "$TEST_WORK/qget8.log" |
  "$XBAK" --extract --decrypt=AES256 --encrypt-key-file="$key" -C "$TEST_WORK/q8" 2> "$TEST_WORK/qx8.log" ||
  { cat "$TEST_WORK/qget8.log" "$TEST_WORK/qx8.log" >&2; fail "get | extract --decrypt of the FIFO backup failed"; }
xbak --decompress --remove-original --target-dir="$TEST_WORK/q8" 2> "$TEST_WORK/qdc8.log" ||
  { cat "$TEST_WORK/qdc8.log" >&2; fail "--decompress failed"; }
restore_and_verify "$TEST_WORK/q8" quiet-fifo8-zstd

step "--restore --from-stream of the encrypted, compressed stream (decrypted as it is unpacked)"
"$XBAK" --restore --parallel=2 --from-stream="$TEST_WORK/b2.xb" --datadir="$TEST_WORK/rs" --encrypt-key-file="$key" \
  2> "$TEST_WORK/rs.log" || { tail -n 20 "$TEST_WORK/rs.log" >&2; fail "--restore of an encrypted stream failed"; }
sb_stop dst
rm -rf "$TEST_WORK/dst"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/rs"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$TEST_WORK/rs"; fi
sb_start dst
sb_check_all dst
check_rows dst restore-stream $TABLES $ROWS
sb_stop dst
refused restore-nokey "is of an encrypted backup: give its key" \
  env -u XBAK_ENCRYPT_KEY "$XBAK" --restore --from-stream="$TEST_WORK/b2.xb" --datadir="$TEST_WORK/rs-nokey"
refused restore-dir "is an encrypted backup: --restore reads backups in directories as they are" \
  "$XBAK" --restore --target-dir="$TEST_WORK/d1.enc" --datadir="$TEST_WORK/rs-dir"
[ ! -e "$TEST_WORK/rs-dir" ] || [ -z "$(ls -A "$TEST_WORK/rs-dir")" ] || fail "restore-dir: files written"

step "tampering and mistakes through the command line"
# fresh_copy NAME : a copy of the encrypted directory backup to damage
fresh_copy() { rm -rf "$TEST_WORK/$1"; cp -a "$TEST_WORK/d1.enc" "$TEST_WORK/$1"; echo "$TEST_WORK/$1"; }
t=$(fresh_copy flip)
python3 - "$t/ibdata1.xbenc" << 'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) // 2] ^= 0x20
open(p, 'wb').write(b)
PY
refused flip "ibdata1.xbenc: chunk [0-9]+ at byte [0-9]+ fails authentication" \
  "$XBAK" --decrypt=AES256 --encrypt-key-file="$key" --target-dir="$t"
[ ! -e "$t/ibdata1" ] || fail "flip: a damaged file was written out as ibdata1"
t=$(fresh_copy trunc)
truncate -s -100 "$t/ibdata1.xbenc"
refused trunc "ibdata1.xbenc: ends at byte [0-9]+ .*truncated" \
  "$XBAK" --decrypt=AES256 --encrypt-key-file="$key" --target-dir="$t"
[ ! -e "$t/ibdata1" ] || fail "trunc: a truncated file was written out as ibdata1"
t=$(fresh_copy foreign)
cp "$TEST_WORK/d1.enc/backup-my.cnf.xbenc" "$TEST_WORK/keep.xbenc"
xbak --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/other" --encrypt=AES256 --encrypt-key-file="$key" \
  2> "$TEST_WORK/other.log" || { tail "$TEST_WORK/other.log" >&2; fail "second encrypted backup failed"; }
cp "$TEST_WORK/other/backup-my.cnf.xbenc" "$t/backup-my.cnf.xbenc"
refused foreign "foreign/backup-my.cnf.xbenc belongs to another backup" \
  "$XBAK" --decrypt=AES256 --encrypt-key-file="$key" --target-dir="$t"
[ -z "$(find "$t" -type f ! -name '*.xbenc')" ] || fail "foreign: files written before the refusal"
t=$(fresh_copy wrongkey)
(umask 077 && openssl rand -base64 24 > "$TEST_WORK/wrong.key")
refused wrongkey "was encrypted with key id [0-9a-f]{16}; the key given has id [0-9a-f]{16}" \
  "$XBAK" --decrypt=AES256 --encrypt-key-file="$TEST_WORK/wrong.key" --target-dir="$t"
[ -z "$(find "$t" -type f ! -name '*.xbenc')" ] || fail "wrongkey: files written before the refusal"
cp "$key" "$TEST_WORK/open.key"
chmod 644 "$TEST_WORK/open.key"
refused openkey "may be read or written by others than its owner" \
  "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/never" --encrypt=AES256 \
  --encrypt-key-file="$TEST_WORK/open.key"
[ ! -e "$TEST_WORK/never" ] || fail "openkey: the target was created"
refused cmdline "--encrypt-key is not accepted" \
  "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/never" --encrypt=AES256 \
  --encrypt-key=0123456789abcdefghijklmnopqrstuv
refused nokey "--encrypt needs the key" \
  env -u XBAK_ENCRYPT_KEY "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/never" --encrypt=AES256
refused aes128 "AES128 is not supported" \
  "$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/never" --encrypt=AES128 --encrypt-key-file="$key"
if grep -r -q -F "$(cat "$key")" "$TEST_WORK"/*.log "$TEST_WORK"/*.err 2> /dev/null; then
  fail "the key appears in a log"
fi
sb_stop src
