#!/usr/bin/env bash
# Issue "streaming backups": full backup -> xbstream -> extract -> mariabackup --prepare -> restore
# -> CHECKSUM TABLE equal, for stdout, for --fifo-streams=4 and for each compressor; interop with
# the real mbstream and mariabackup both ways; malicious, truncated and abandoned streams fail
# with the documented error and write nothing outside the target.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

src_port=$(alloc_port)
dst_port=$(alloc_port)
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
sb_load_many src 50
sb_checksums src > "$TEST_WORK/src.sum"
cnf=$(sb_cnf src)

step "stdout: xbak --backup --stream=xbstream | xbak --extract"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream 2> "$TEST_WORK/s1.log" |
  "$XBAK" --extract -C "$TEST_WORK/s1" 2> "$TEST_WORK/x1.log" ||
  { cat "$TEST_WORK/s1.log" "$TEST_WORK/x1.log" >&2; fail "stream to extract failed"; }
restore_and_verify "$TEST_WORK/s1" stdout

step "4 FIFOs: xbak --backup --fifo-streams=4 & xbak --extract --fifo-streams=4"
fifo="$TEST_WORK/fifos"
"$XBAK" --extract --fifo-streams=4 --fifo-dir="$fifo" --fifo-timeout=60 -C "$TEST_WORK/s4" 2> "$TEST_WORK/x4.log" &
xpid=$!
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --fifo-streams=4 --fifo-dir="$fifo" \
  2> "$TEST_WORK/s4.log" || { cat "$TEST_WORK/s4.log" >&2; fail "fifo backup failed"; }
wait "$xpid" || { cat "$TEST_WORK/x4.log" >&2; fail "fifo extract failed"; }
for i in 0 1 2 3; do [ -p "$fifo/thread_$i" ] || fail "fifo thread_$i missing"; done
restore_and_verify "$TEST_WORK/s4" fifo4

for algo in zstd lz4; do
  step "compressed with $algo, streamed, extracted, decompressed"
  "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --compress=$algo --compress-threads=2 2> "$TEST_WORK/c-$algo.log" |
    "$XBAK" --extract -C "$TEST_WORK/c-$algo" 2> "$TEST_WORK/xc-$algo.log" ||
    { cat "$TEST_WORK/c-$algo.log" "$TEST_WORK/xc-$algo.log" >&2; fail "$algo stream failed"; }
  ext=$([ $algo = zstd ] && echo zst || echo lz4)
  assert_file "$TEST_WORK/c-$algo/ibdata1.$ext"
  assert_file "$TEST_WORK/c-$algo/${META}checkpoints"   # metadata is never compressed
  "$XBAK" --decompress --target-dir="$TEST_WORK/c-$algo" --parallel=2 --remove-original 2> "$TEST_WORK/d-$algo.log" ||
    { cat "$TEST_WORK/d-$algo.log" >&2; fail "$algo decompress failed"; }
  [ -z "$(find "$TEST_WORK/c-$algo" -name "*.$ext")" ] || fail "$algo: originals not removed"
  restore_and_verify "$TEST_WORK/c-$algo" "$algo"
done

step "interop: xbak's stream extracted by mbstream has the tree of a directory backup"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream 2> /dev/null > "$TEST_WORK/xbak.xb"
mkdir -p "$TEST_WORK/mb"
mbstream -x -C "$TEST_WORK/mb" < "$TEST_WORK/xbak.xb" 2> "$TEST_WORK/mbx.log" || { cat "$TEST_WORK/mbx.log"; fail "mbstream -x failed"; }
"$XBAK" --backup --defaults-file="$cnf" --target-dir="$TEST_WORK/dirbk" 2> /dev/null
(cd "$TEST_WORK/mb" && find . -type f | sort) > "$TEST_WORK/tree-mb"
(cd "$TEST_WORK/dirbk" && find . -type f | sort) > "$TEST_WORK/tree-dir"
diff "$TEST_WORK/tree-mb" "$TEST_WORK/tree-dir" || fail "trees differ"
cmp "$TEST_WORK/mb/ib_logfile0" "$TEST_WORK/mb/ib_logfile0"
echo "mbstream tree = directory tree: $(wc -l < "$TEST_WORK/tree-mb") files"

step "interop: mariabackup's stream extracted by xbak equals mbstream's extraction, and prepares"
# A table created just before: its FILE_CREATE is in the log mariabackup copies, so mariabackup
# streams it as a .new file (often all zero: its pages are still only in the log), which xbak's
# prepare must install before it applies the log to it.
sb_sql src "CREATE TABLE xs_app.created_late (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;
  INSERT INTO xs_app.created_late VALUES (1, 'late'), (2, 'later')"
sb_checksums src > "$TEST_WORK/src.sum"
mariabackup --defaults-file="$cnf" --backup --stream=xbstream 2> "$TEST_WORK/mbs.log" > "$TEST_WORK/mb.xb" ||
  { tail "$TEST_WORK/mbs.log"; fail "mariabackup --stream failed"; }
mkdir -p "$TEST_WORK/mb2"
mbstream -x -C "$TEST_WORK/mb2" < "$TEST_WORK/mb.xb"
"$XBAK" --extract --input="$TEST_WORK/mb.xb" -C "$TEST_WORK/xb2" 2> "$TEST_WORK/xb2.log" || { cat "$TEST_WORK/xb2.log"; fail "xbak --extract of mariabackup's stream failed"; }
diff -r "$TEST_WORK/mb2" "$TEST_WORK/xb2" || fail "xbak and mbstream extracted different trees"
echo "mariabackup streamed $(find "$TEST_WORK/xb2" -name '*.new' | wc -l) tablespace(s) as .new"
restore_and_verify "$TEST_WORK/xb2" mariabackup-stream

step "bad streams: traversal, absolute path, truncation, bad checksum"
python3 - "$TEST_WORK" <<'PY'
import struct, zlib, sys, os
w = sys.argv[1]
def chunk(path, data, off=0, crc=None):
    p = path.encode()
    c = zlib.crc32(data) if crc is None else crc
    return b"XBSTCK01" + b"\0" + b"P" + struct.pack("<I", len(p)) + p + struct.pack("<QQI", len(data), off, c) + data
def eof(path):
    p = path.encode()
    return b"XBSTCK01" + b"\0" + b"E" + struct.pack("<I", len(p)) + p
open(f"{w}/evil-dotdot.xb", "wb").write(chunk("../escaped", b"pwned") + eof("../escaped"))
open(f"{w}/evil-abs.xb", "wb").write(chunk(f"{w}/abs-escaped", b"pwned") + eof(f"{w}/abs-escaped"))
good = chunk("db/t.frm", b"A" * 5000) + eof("db/t.frm")
open(f"{w}/cut-header.xb", "wb").write(good[:12])
open(f"{w}/cut-payload.xb", "wb").write(good[:200])
open(f"{w}/badcrc.xb", "wb").write(chunk("db/t.frm", b"A" * 5000, crc=1234) + eof("db/t.frm"))
PY
check_bad() { # FILE REGEX
  rm -rf "$TEST_WORK/bad"
  if "$XBAK" --extract --input="$TEST_WORK/$1" -C "$TEST_WORK/bad" 2> "$TEST_WORK/$1.log"; then fail "$1: extract succeeded"; fi
  grep -Eq -- "$2" "$TEST_WORK/$1.log" || { cat "$TEST_WORK/$1.log"; fail "$1: message does not match '$2'"; }
  echo "ok: $1 -> $(tail -n 1 "$TEST_WORK/$1.log")"
}
check_bad evil-dotdot.xb "\.\."
check_bad evil-abs.xb "absolute"
check_bad cut-header.xb "byte 0.*truncated"
check_bad cut-payload.xb "truncated payload"
check_bad badcrc.xb "checksum"
[ ! -e "$TEST_WORK/escaped" ] && [ ! -e "$TEST_WORK/abs-escaped" ] || fail "a malicious stream wrote outside the target"
[ ! -e "$TEST_WORK/bad/db/t.frm" ] || fail "a corrupt file was left looking complete"

step "a reader that goes away: the backup fails cleanly, no hang"
set +o pipefail
timeout 120 "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream 2> "$TEST_WORK/epipe.log" | head -c 100000 > /dev/null
st=${PIPESTATUS[0]}
set -o pipefail
[ "$st" -ne 0 ] && [ "$st" -ne 124 ] || { cat "$TEST_WORK/epipe.log"; fail "backup exit status $st after its reader went away"; }
assert_contains "$TEST_WORK/epipe.log" "went away"

step "--extra-lsndir: a streamed full, then a streamed incremental based on the local copy"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --extra-lsndir="$TEST_WORK/lsn/full" \
  2> "$TEST_WORK/el-full.log" | "$XBAK" --extract -C "$TEST_WORK/el-full" 2> /dev/null ||
  { tail "$TEST_WORK/el-full.log" >&2; fail "streamed full with --extra-lsndir"; }
cmp "$TEST_WORK/lsn/full/${META}checkpoints" "$TEST_WORK/el-full/${META}checkpoints" ||
  fail "--extra-lsndir's ${META}checkpoints differs from the stream's"
assert_file "$TEST_WORK/lsn/full/${META}info"
sb_sql src "UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % 3 = 0; CREATE TABLE sbtest.after_full (id INT PRIMARY KEY)"
sb_checksums src > "$TEST_WORK/src.sum"
"$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --incremental-basedir="$TEST_WORK/lsn/full" \
  --extra-lsndir="$TEST_WORK/lsn/inc" 2> "$TEST_WORK/el-inc.log" | "$XBAK" --extract -C "$TEST_WORK/el-inc" 2> /dev/null ||
  { tail "$TEST_WORK/el-inc.log" >&2; fail "streamed incremental from --extra-lsndir"; }
assert_contains "$TEST_WORK/lsn/inc/${META}checkpoints" '^backup_type = incremental$'
"$XBAK" --prepare --apply-log-only --target-dir="$TEST_WORK/el-full" 2> "$TEST_WORK/el-p1.log" ||
  { tail "$TEST_WORK/el-p1.log" >&2; fail "prepare of the full"; }
"$XBAK" --prepare --target-dir="$TEST_WORK/el-full" --incremental-dir="$TEST_WORK/el-inc" 2> "$TEST_WORK/el-p2.log" ||
  { tail "$TEST_WORK/el-p2.log" >&2; fail "prepare of the incremental"; }
sb_stop dst
rm -rf "$TEST_WORK/dst"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/dst/data"
"$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$TEST_WORK/el-full" 2> "$TEST_WORK/el-cb.log" ||
  { tail "$TEST_WORK/el-cb.log" >&2; fail "copy-back of the chain"; }
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$TEST_WORK/dst/data"; fi
sb_start dst
sb_checksums dst > "$TEST_WORK/el.sum"
sb_compare_checksums "$TEST_WORK/src.sum" "$TEST_WORK/el.sum" || fail "the chain from --extra-lsndir restored other data"
sb_stop dst
if "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --extra-lsndir=/proc/xbak-no > /dev/null 2> "$TEST_WORK/el-bad.log"; then
  fail "--extra-lsndir in an unwritable place was accepted"
fi
assert_contains "$TEST_WORK/el-bad.log" "extra-lsndir"
sb_stop src
