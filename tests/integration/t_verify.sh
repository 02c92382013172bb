#!/usr/bin/env bash
# Issue "trustworthy", verify: `xbak --verify` on real backups of a sandbox server and
# `xbcloud verify` on a backup in MinIO.
#   1. sound backups verify with exit 0: a full backup (with ROW_FORMAT=COMPRESSED tables), a
#      full+incremental chain, a zstd-compressed backup, the full after mariabackup --prepare
#      (the chain can be prepared).
#   2. each kind of damage is found, named (file and page or offset) on one line, exit 1:
#      a flipped byte in a page, a truncated .ibd, a promised file deleted, no
#      ${META}checkpoints, a damaged and a truncated redo log, a damaged .delta page, a
#      truncated .delta, a bad .meta, a damaged .zst, a broken LSN chain, a swapped chain.
#   3. xbcloud verify: a sound backup passes; an object changed behind xbcloud's back (boto3), an
#      object deleted, a sidecar changed and the completion marker deleted are each named, exit 1.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
: "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
[ -x "$XBCLOUD" ] || fail "xbcloud binary not found at $XBCLOUD"

src_port=$(alloc_port)
W=$TEST_WORK

step "source server with data (incl. ROW_FORMAT=COMPRESSED), full, incremental and compressed backups"
sb_init src "$src_port"
sb_start src
cnf=$(sb_cnf src)
sb_load_sample src
sb_load_sysbench src 2 5000
# No flush: the full backup's redo log holds the load's mini-transactions (the log checks need some).
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/full" 2> "$W/full.log" ||
  { tail "$W/full.log" >&2; fail "full backup"; }
sb_sql src "UPDATE sbtest.sbtest1 SET k=k+1 WHERE id <= 3000; DELETE FROM sbtest.sbtest2 WHERE id % 5 = 0;
  UPDATE xs_rowfmt.t_compressed SET a = CONCAT(a, 'x') WHERE id % 3 = 0"
sb_flush src
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/full" --target-dir="$W/inc1" \
  2> "$W/inc1.log" || { tail "$W/inc1.log" >&2; fail "incremental backup"; }
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --compress=zstd --target-dir="$W/zfull" 2> "$W/zfull.log" ||
  { tail "$W/zfull.log" >&2; fail "compressed backup"; }

# verify_ok LABEL ARGS... : xbak --verify passes
verify_ok() {
  local label=$1 rc=0
  shift
  "$XBAK" --verify --parallel=2 "$@" > "$W/v-$label.out" 2> "$W/v-$label.err" || rc=$?
  cat "$W/v-$label.out"
  [ "$rc" -eq 0 ] || { cat "$W/v-$label.err" >&2; fail "$label: verify failed (exit $rc) on a sound backup"; }
  assert_contains "$W/v-$label.out" '^verify: [0-9]+ files, [0-9]+ pages, 0 problems$' "$label summary"
}
# verify_bad LABEL REGEX ARGS... : xbak --verify exits 1 and a problem line matches REGEX
verify_bad() {
  local label=$1 regex=$2 rc=0
  shift 2
  "$XBAK" --verify --parallel=2 "$@" > "$W/v-$label.out" 2> "$W/v-$label.err" || rc=$?
  [ "$rc" -eq 1 ] || { cat "$W/v-$label.out" "$W/v-$label.err" >&2; fail "$label: exit $rc, expected 1"; }
  grep -Eq -- "$regex" "$W/v-$label.out" ||
    { cat "$W/v-$label.out" >&2; fail "$label: no problem line matches '$regex'"; }
  grep -Eq '^verify: [0-9]+ files, [0-9]+ pages, [1-9][0-9]* problems?$' "$W/v-$label.out" ||
    fail "$label: no summary line"
  echo "$label: $(grep -E -- "$regex" "$W/v-$label.out" | head -1)"
}
# damaged COPY FROM : a fresh copy of backup FROM to damage
damaged() { rm -rf "${W:?}/$1"; cp -a "$W/$2" "$W/$1"; }
# flip FILE OFFSET : invert one byte
flip() {
  python3 - "$1" "$2" << 'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xFF]))
PY
}

step "sound backups verify: full, full+incremental chain, compressed"
verify_ok full --target-dir="$W/full"
verify_ok chain --target-dir="$W/full" --incremental-dir="$W/inc1"
verify_ok zfull --target-dir="$W/zfull"
pages=$(sed -En 's/^verify: [0-9]+ files, ([0-9]+) pages.*/\1/p' "$W/v-full.out")
[ "$pages" -gt 1000 ] || fail "verify checked only $pages pages of the full backup"

step "damage: one byte of a page, truncated .ibd, deleted promised files, no ${META}checkpoints"
damaged b1 full
flip "$W/b1/sbtest/sbtest1.ibd" $((3 * 16384 + 200))
verify_bad flipped-page 'b1/sbtest/sbtest1.ibd: page 3 \(byte offset 49152\)' --target-dir="$W/b1"
damaged b2 full
truncate -s -100 "$W/b2/sbtest/sbtest2.ibd"
verify_bad truncated-ibd 'b2/sbtest/sbtest2.ibd: size is not a whole number' --target-dir="$W/b2"
damaged b3 full
rm "$W/b3/ibdata1" "$W/b3/backup-my.cnf"
verify_bad missing-ibdata1 'b3/ibdata1: missing \(promised by innodb_data_file_path' --target-dir="$W/b3"
assert_contains "$W/v-missing-ibdata1.out" 'b3/backup-my.cnf: missing'
damaged b4 full
rm "$W/b4/${META}checkpoints"
verify_bad no-checkpoints "b4/${META}checkpoints: missing.*incomplete" --target-dir="$W/b4"
damaged b4b full
rm "$W/b4b/ib_logfile0"
verify_bad no-log 'b4b/ib_logfile0: missing' --target-dir="$W/b4b"

step "damage: redo log (a flipped byte in an mtr, truncation), a page in ibdata1's doublewrite area is not checked"
log_size=$(stat -c %s "$W/full/ib_logfile0")
[ "$log_size" -gt 13000 ] || fail "the backup's redo log holds no mtr ($log_size bytes)"
damaged b5 full
flip "$W/b5/ib_logfile0" $((12288 + (log_size - 12288) / 2))
verify_bad log-flip 'b5/ib_logfile0: (mtr chain broken|corrupt mini-transaction) at byte offset [0-9]+ \(LSN [0-9]+\)' --target-dir="$W/b5"
damaged b6 full
truncate -s $((log_size - 3)) "$W/b6/ib_logfile0"
verify_bad log-truncated 'b6/ib_logfile0: ends inside a mini-transaction|b6/ib_logfile0: the mini-transactions end at LSN' \
  --target-dir="$W/b6"
damaged b7 full
flip "$W/b7/ibdata1" $((64 * 16384 + 100))   # page 64: the doublewrite area (pages 64..191 at 16k)
verify_ok doublewrite --target-dir="$W/b7"

step "damage: incremental (.delta page, truncated .delta, bad .meta), compressed file"
delta=$(cd "$W/inc1" && find sbtest -name '*.ibd.delta' -size +100k | head -1)
[ -n "$delta" ] || fail "no sbtest delta with pages in inc1"
damaged i1 inc1
flip "$W/i1/$delta" $((16384 + 16384 + 300))   # the second page image of the first block
verify_bad delta-page "i1/$delta: page [0-9]+ \(byte offset 32768\)" --target-dir="$W/full" --incremental-dir="$W/i1"
damaged i2 inc1
truncate -s -16384 "$W/i2/$delta"
verify_bad delta-truncated "i2/$delta: truncated at byte offset" --target-dir="$W/full" --incremental-dir="$W/i2"
damaged i3 inc1
echo "page_size = 12345" > "$W/i3/${delta%.delta}.meta"
verify_bad delta-meta "i3/$delta: bad .meta" --target-dir="$W/full" --incremental-dir="$W/i3"
damaged z1 zfull
zsize=$(stat -c %s "$W/z1/sbtest/sbtest1.ibd.zst")
flip "$W/z1/sbtest/sbtest1.ibd.zst" $((zsize / 2))
verify_bad zst-flip 'z1/sbtest/sbtest1.ibd.zst: .*(corrupt|checksum)' --target-dir="$W/z1"

step "damage: the LSN chain"
damaged i4 inc1
sed -i 's/^from_lsn = .*/from_lsn = 12345/' "$W/i4/${META}checkpoints"
verify_bad chain-gap "i4/${META}checkpoints: from_lsn 12345 does not continue" --target-dir="$W/full" --incremental-dir="$W/i4"
verify_bad chain-swapped "full/${META}checkpoints: backup_type full-backuped where the chain needs an incremental" \
  --target-dir="$W/inc1" --incremental-dir="$W/full"
rc=0
"$XBAK" --prepare --target-dir="$W/full" --incremental-dir="$W/inc1" --incremental-dir="$W/i4" > /dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "--incremental-dir twice is only for --verify"

step "the verified full backup prepares (mariabackup), and the prepared backup still verifies"
mariabackup --no-defaults --prepare --target-dir="$W/full" > "$W/prepare.log" 2>&1 ||
  { tail -n 20 "$W/prepare.log" >&2; fail "mariabackup --prepare of a verified backup failed"; }
verify_ok prepared --target-dir="$W/full"
sb_stop src

# ---------------------------------------------------------------------------------------------
step "xbcloud verify: MinIO, a backup put by xbcloud"
. "$XBAK_SRC/scripts/lib/objstore.sh"
SB_ON_EXIT+=(os_cleanup)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-verify
os_minio_start "$s3_port" "$W/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)
sb_start src
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream 2> "$W/bs.log" |
  "$XBCLOUD" put "${S3[@]}" --parallel=4 --read-buffer-size=256K cloud1 2> "$W/put.log" ||
  { cat "$W/bs.log" "$W/put.log" >&2; fail "backup | xbcloud put"; }
sb_stop src

# cloud_verify LABEL EXPECTED_RC [REGEX]
cloud_verify() {
  local label=$1 want=$2 regex=${3:-} rc=0
  "$XBCLOUD" verify "${S3[@]}" --parallel=4 cloud1 > "$W/cv-$label.out" 2> "$W/cv-$label.err" || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$W/cv-$label.out" "$W/cv-$label.err" >&2; fail "xbcloud verify $label: exit $rc, expected $want"; }
  if [ -n "$regex" ]; then
    grep -Eq -- "$regex" "$W/cv-$label.out" || { cat "$W/cv-$label.out" >&2; fail "xbcloud verify $label: no line matches '$regex'"; }
    echo "$label: $(grep -E -- "$regex" "$W/cv-$label.out" | head -1)"
  fi
  grep -Eq '^verify: [0-9]+ objects, [0-9]+ bytes, [0-9]+ problems?$' "$W/cv-$label.out" ||
    { cat "$W/cv-$label.out" >&2; fail "xbcloud verify $label: no summary line"; }
  tail -n 1 "$W/cv-$label.out"
}
cloud_verify sound 0
key=$(os_py 'r = s3.list_objects_v2(Bucket=sys.argv[1], Prefix="cloud1/sbtest/sbtest1.ibd.")
print(sorted(o["Key"] for o in r["Contents"] if not o["Key"].endswith(".md5"))[1])' "$bucket")
os_py 'b = s3.get_object(Bucket=sys.argv[1], Key=sys.argv[2])["Body"].read()
b = bytearray(b); b[len(b) // 2] ^= 0xFF
s3.put_object(Bucket=sys.argv[1], Key=sys.argv[2], Body=bytes(b))
open(sys.argv[3], "wb").write(b)' "$bucket" "$key" "$W/orig-object"
cloud_verify changed-object 1 "^$key: MD5 [0-9a-f]{32} does not match"
os_py 's3.delete_object(Bucket=sys.argv[1], Key=sys.argv[2])' "$bucket" "$key"
cloud_verify deleted-object 1 "^$key: missing \\(listed in the manifest\\)"
os_py 's3.delete_object(Bucket=sys.argv[1], Key=sys.argv[2] + ".md5")' "$bucket" "$key"
os_py 's3.delete_object(Bucket=sys.argv[1], Key="cloud1/xbcloud.manifest")' "$bucket"
cloud_verify no-manifest 1 '^cloud1/xbcloud.manifest: missing'
