#!/usr/bin/env bash
# Issue 20, one-pass restore: `xbak --restore --target-dir=FULL --incremental-dir=INC1 ... --datadir=D`.
#  - a chain (full + 3 incrementals) taken under writes and DDL of every kind (CREATE, DROP,
#    RENAME, TRUNCATE, ALTER with a rebuild, during and between the backups; a table of the base
#    dropped while the incremental copies it);
#  - restored in one pass, it gives the same files as the two-step path (--prepare of a copy,
#    each incremental applied, --copy-back), although it skips the redo records of pages the next
#    incremental replaces, and the same CHECKSUM TABLE for every table; the
#    server starts on it and CHECK TABLE EXTENDED passes; the chain's files are byte-identical
#    before and after (md5 of every file);
#  - a restore killed (SIGKILL) at random points (XBAK_RESTORE_KILLS times, default 5) leaves a datadir the server refuses to start on,
#    and the same command run again finishes it, with the same files as the uninterrupted one; so
#    does one killed by strace at chosen system calls (XBAK_RESTORE_SWEEP page writes, renames,
#    truncates, fsyncs); a restore from streams killed (XBAK_RESTORE_STREAM_KILLS times, default 2)
#    starts over and ends with the same files;
#  - broken chains (an incremental missing, two swapped, one given twice, an incremental as the
#    full) and a non-empty datadir are refused before anything is written;
#  - a restore with the log, ibdata and undo tablespaces in directories of their own.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak

W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)
sb_init src "$src_port" "innodb_undo_tablespaces=2"
sb_start src
cnf=$(sb_cnf src)

step "data: sysbench tables, 200 small tables, a and b written together"
sb_load_sample src
sb_load_sysbench src 2 5000
sb_load_many src 200
sb_sql src "CREATE DATABASE r; USE r;
  CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200), KEY (n));
  CREATE TABLE b (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200));
  INSERT INTO a (n, v) SELECT seq, REPEAT(MD5(seq), 4) FROM seq_1_to_20000;
  INSERT INTO b (n, v) SELECT n, v FROM a;
  CREATE TABLE moved (id INT PRIMARY KEY, v VARCHAR(200)) SELECT seq id, REPEAT(MD5(seq), 4) v FROM seq_1_to_60000;
  CREATE TABLE to_drop (id INT PRIMARY KEY) SELECT seq id FROM seq_1_to_100;
  CREATE TABLE to_rename (id INT PRIMARY KEY, v INT) SELECT seq id, seq v FROM seq_1_to_100;
  CREATE TABLE to_truncate (id INT PRIMARY KEY) SELECT seq id FROM seq_1_to_100;
  CREATE TABLE to_alter (id INT PRIMARY KEY, v INT) SELECT seq id, seq v FROM seq_1_to_1000;
  CREATE TABLE doomed (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, REPEAT(MD5(seq), 3) v
    FROM seq_1_to_250000;
  FLUSH TABLES doomed FOR EXPORT; UNLOCK TABLES;
  CREATE TABLE logt (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, REPEAT(MD5(seq), 3) v
    FROM seq_1_to_150000;
  FLUSH TABLES logt FOR EXPORT; UNLOCK TABLES"

churn() { # a and b in one transaction; many small tables and sysbench updated
  local i=$1
  sb_sql src "USE r; START TRANSACTION; INSERT INTO a (n, v) VALUES ($i, MD5($i)); INSERT INTO b (n, v) VALUES ($i, MD5($i));
    COMMIT; UPDATE a SET n = n + 1 WHERE id % 97 = $i % 97; UPDATE many.t$(printf %05d $((i % 200))) SET v = MD5($i) WHERE id = 1;
    UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % 53 = $i % 53" || true
}
ddl() { # tables created, renamed and dropped while the backups run
  local i=$1
  sb_sql src "USE r; CREATE TABLE d_$i (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, MD5(seq) v FROM seq_1_to_300;
    RENAME TABLE d_$((i - 1)) TO e_$((i - 1)); DROP TABLE IF EXISTS e_$((i - 3)); TRUNCATE TABLE to_truncate;
    INSERT INTO to_truncate VALUES ($i)" 2> /dev/null || true
  sleep 0.3
}
backup() { # NAME [xbak options]
  local name=$1
  shift
  loop_start churn
  loop_start ddl
  sleep 1
  xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/$name" "$@" 2> "$W/$name.log" ||
    { tail -n 20 "$W/$name.log" >&2; fail "backup $name"; }
  loop_stop
}

# r.doomed's pages on disk before the full backup's checkpoint (its to_lsn), so that inc1's delta of
# it holds only the pages changed after the full, not page 0 (below).
checkpoint_past src "$(sb_sql src "SELECT variable_value FROM information_schema.global_status
  WHERE variable_name = 'INNODB_LSN_CURRENT'")"

step "a full backup and three incrementals, each under writes and DDL, DDL in between"
backup full
sb_sql src "UPDATE r.doomed SET v = 'changed' WHERE id <= 100; FLUSH TABLES r.doomed FOR EXPORT; UNLOCK TABLES"
sb_sql src "USE r; DROP TABLE to_drop; RENAME TABLE to_rename TO renamed; ALTER TABLE to_alter ADD COLUMN w INT DEFAULT 5, ALGORITHM=COPY"
# r.doomed (about 30 MiB, the largest table: copied first, and throttled over a second; its pages
# flushed by FOR EXPORT, so that inc1 copies it as a delta, not whole) is dropped
# once inc1 has begun its delta (written as doomed.ibd.delta.xbpartial until complete): inc1 holds
# a delta of it (the pages the UPDATE changed, not page 0) and doomed.del, and both restores must
# take the delta as void (before, both refused it: "neither in the base nor created by this
# delta"). CI once met it by chance in the DDL loop (a copied table dropped: "does not exist in
# the base").
once_copying() { # DELTA SQL : in the background, SQL once DELTA's copy has begun (30 s at most)
  (for _ in $(seq 1500); do
    [ -e "$1.xbpartial" ] || [ -e "$1" ] && break
    sleep 0.02
  done
    sb_sql src "$2") &
}
once_copying "$W/inc1/r/doomed.ibd.delta" "DROP TABLE r.doomed"
dropper=$!
backup inc1 --incremental-basedir="$W/full" --throttle=20
wait "$dropper"
assert_contains "$W/inc1.log" "table r/doomed was dropped during the backup"
assert_file "$W/inc1/r/doomed.ibd.delta"
# A few pages: those the UPDATE changed (not page 0, not the 30 MiB).
[ "$(stat -c %s "$W/inc1/r/doomed.ibd.delta")" -lt 1048576 ] || fail "inc1 copied r.doomed whole"
assert_file "$W/inc1/r/doomed.del"
sb_sql src "USE r; ALTER TABLE renamed ADD INDEX (v); CREATE TABLE late (id INT PRIMARY KEY) SELECT seq id FROM seq_1_to_500;
  DROP TABLE many.t00007"
# inc2 must end at a later checkpoint than inc1 for "full, inc1, inc3" to have a gap (see checkpoint_past).
checkpoint_past src "$(sed -n 's/^to_lsn = //p' "$W/inc1/${META}checkpoints")"
# Log rotation during inc2, once it has begun r.logt's delta (about 18 MiB, the largest table
# then, throttled): RENAME TABLE logt TO logt_old; CREATE TABLE logt. inc2 holds logt's delta (of
# the renamed table), logt.ren and logt.new; both restores must keep logt_old (before, the delta
# was skipped for the .new and logt_old removed as a file no delta named: the table was lost in
# both, so the checksums below are also compared with the server's).
once_copying "$W/inc2/r/logt.ibd.delta" "RENAME TABLE r.logt TO r.logt_old;
  CREATE TABLE r.logt (id INT PRIMARY KEY, v VARCHAR(100)) SELECT seq id, MD5(seq) v FROM r.seq_1_to_200"
rotator=$!
backup inc2 --incremental-basedir="$W/inc1" --throttle=20
wait "$rotator"
assert_contains "$W/inc2.log" "table r/logt was renamed to r/logt_old during the backup"
assert_contains "$W/inc2.log" "table r/logt was created during the backup"
assert_file "$W/inc2/r/logt.ibd.delta"
sb_sql src "CHECKSUM TABLE r.logt_old, r.logt" > "$W/logt.sum"
sb_sql src "USE r; RENAME TABLE late TO later; TRUNCATE TABLE renamed; OPTIMIZE TABLE to_alter" > /dev/null
# r.moved (about 10 MiB, no writes) renamed once inc3 has begun its delta, no table taking its name:
# inc3 holds moved.ibd.delta and moved.ren. Restored from streams, that delta goes in as it arrives
# (inc2's log does nothing to the table), and the table must still be there, renamed by inc3's log
# (the apply once left its file under the .ren name, where the sweep of files no delta names
# removed it).
once_copying "$W/inc3/r/moved.ibd.delta" "RENAME TABLE r.moved TO r.moved_away"
mover=$!
backup inc3 --incremental-basedir="$W/inc2" --throttle=20
wait "$mover"
assert_contains "$W/inc3.log" "table r/moved was renamed to r/moved_away during the backup"
assert_file "$W/inc3/r/moved.ren"
[ ! -e "$W/inc3/r/moved.new" ] || fail "inc3 holds a new r.moved"
CHAIN=(--target-dir="$W/full" --incremental-dir="$W/inc1" --incremental-dir="$W/inc2" --incremental-dir="$W/inc3")
md5tree() { (cd "$1" && find . -type f -exec md5sum {} + | LC_ALL=C sort); }
for d in full inc1 inc2 inc3; do md5tree "$W/$d"; done > "$W/chain-before.md5"

step "broken chains and a non-empty datadir are refused before anything is written"
refused() { # LABEL REGEX ARGS... : xbak --restore ARGS into $W/refused fails, saying REGEX, writing nothing
  local label=$1 re=$2
  shift 2
  if "$XBAK" --restore --datadir="$W/refused" "$@" 2> "$W/refused-$label.log"; then fail "$label: restored"; fi
  assert_contains "$W/refused-$label.log" "$re" "$label"
  [ ! -e "$W/refused" ] || [ -z "$(ls -A "$W/refused")" ] || fail "$label: wrote into the datadir"
  head -n 1 "$W/refused-$label.log" | sed "s/^/  $label: /"
}
refused missing "gap in the chain" --target-dir="$W/full" --incremental-dir="$W/inc1" --incremental-dir="$W/inc3"
refused swapped "wrong order" --target-dir="$W/full" --incremental-dir="$W/inc2" --incremental-dir="$W/inc1"
refused twice "given twice" --target-dir="$W/full" --incremental-dir="$W/inc1" --incremental-dir="$W/inc1"
refused inc-as-full "is an incremental backup" --target-dir="$W/inc1"
mkdir -p "$W/refused"
echo "precious" > "$W/refused/keep.txt"
if "$XBAK" --restore --datadir="$W/refused" "${CHAIN[@]}" 2> "$W/refused-nonempty.log"; then fail "restored into a non-empty datadir"; fi
assert_contains "$W/refused-nonempty.log" "is not empty"
[ "$(ls -A "$W/refused")" = keep.txt ] || fail "the refused restore wrote into the non-empty datadir"

step "one-pass restore of the chain"
t0=$(date +%s.%N)
xbak --restore --parallel=2 --datadir="$W/onepass" "${CHAIN[@]}" 2> "$W/onepass.log" ||
  { tail -n 30 "$W/onepass.log" >&2; fail "xbak --restore"; }
restore_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "one-pass restore took $restore_s s"
for d in full inc1 inc2 inc3; do md5tree "$W/$d"; done > "$W/chain-after.md5"
cmp -s "$W/chain-before.md5" "$W/chain-after.md5" ||
  { diff "$W/chain-before.md5" "$W/chain-after.md5" | head >&2; fail "xbak --restore changed the backups"; }
[ ! -e "$W/onepass/xbak_restore_in_progress" ] || fail "the finished restore left its journal"
assert_contains "$W/onepass.log" "binary log position of the restored data \\(${META}binlog_info\\): $(cat "$W/inc3/${META}binlog_info")"
ls "$W/onepass" | grep -qE '^xtrabackup_|^mariadb_backup_|^backup-my.cnf$' && fail "backup metadata left in the datadir"
# The redo a later delta makes redundant was skipped (and the files compared below are still the
# two-step path's, byte for byte).
assert_contains "$W/onepass.log" "records of pages the next incremental replaces were skipped"
md5tree "$W/onepass" > "$W/onepass.md5"

step "the two-step path on copies: the same files"
for d in full inc1 inc2 inc3; do cp -a "$W/$d" "$W/ts-$d"; done
"$XBAK" --prepare --parallel=2 --target-dir="$W/ts-full" 2> "$W/ts-prep.log" || { tail "$W/ts-prep.log" >&2; fail "prepare"; }
for d in inc1 inc2 inc3; do
  "$XBAK" --prepare --parallel=2 --target-dir="$W/ts-full" --incremental-dir="$W/ts-$d" 2> "$W/ts-$d.log" ||
    { tail "$W/ts-$d.log" >&2; fail "prepare $d"; }
done
"$XBAK" --copy-back --target-dir="$W/ts-full" --datadir="$W/twostep" 2> "$W/ts-cb.log" || { tail "$W/ts-cb.log" >&2; fail "copy-back"; }
md5tree "$W/twostep" > "$W/twostep.md5"
diff "$W/twostep.md5" "$W/onepass.md5" > "$W/files.diff" ||
  { head -n 20 "$W/files.diff" >&2; fail "one-pass and two-step restores differ"; }
echo "one-pass = two-step: $(wc -l < "$W/onepass.md5") identical files"

step "the chain from streams, deltas written into the datadir as they arrive: the same files"
# Each backup streamed by mbstream -c: inc1 and inc3 in name order (as xbcloud get sends them: the
# log first, a table's .del before and its .new and .ren after its delta, each .meta after its
# .delta), inc2 in reverse order (the markers and .meta first). A delta goes in as it arrives when
# the datadir's file of its table holds the same tablespace and the log before does no DDL on it;
# the rest (r.logt's, rotated during inc2; tables re-created between the backups) is staged.
# inc1's deltas are compressed with lz4, inc3's with zstd (as --compress writes them: decompressed
# as they arrive).
for d in full inc1 inc2 inc3; do
  order=(sort); [ "$d" = inc2 ] && order=(sort -r)
  src=$W/$d
  if [ "$d" = inc1 ] || [ "$d" = inc3 ]; then
    rm -rf "$W/z-$d" && cp -a "$W/$d" "$W/z-$d" && src=$W/z-$d
    if [ "$d" = inc1 ]; then find "$src" -name '*.delta' -exec lz4 -q -m --rm {} +; else find "$src" -name '*.delta' -exec zstd -q --rm {} +; fi
  fi
  (cd "$src" && find . -type f -printf '%P\n' | LC_ALL=C "${order[@]}" | xargs mbstream -c) > "$W/$d.xb" ||
    fail "mbstream -c of $d"
done
rm -rf "$W"/z-inc*
for d in full inc1 inc2 inc3; do md5tree "$W/$d"; done > "$W/chain-streamed.md5"
cmp -s "$W/chain-before.md5" "$W/chain-streamed.md5" || fail "streaming the chain changed it"
xbak --restore --parallel=2 --datadir="$W/streamed" --from-stream="$W/full.xb" --from-stream="$W/inc1.xb" \
  --from-stream="$W/inc2.xb" --from-stream="$W/inc3.xb" 2> "$W/streamed.log" ||
  { tail -n 30 "$W/streamed.log" >&2; fail "xbak --restore --from-stream"; }
grep -E "written into the datadir as they arrived" "$W/streamed.log" >&2
for d in inc1 inc2 inc3; do
  n=$(sed -n "s|.*$d.xb: \\([0-9]*\\) deltas .* written into the datadir as they arrived.*|\\1|p" "$W/streamed.log")
  [ "${n:-0}" -gt 100 ] || fail "$d: ${n:-no} deltas written as the stream arrived"
done
md5tree "$W/streamed" > "$W/streamed.md5"
diff "$W/onepass.md5" "$W/streamed.md5" > "$W/streamed.diff" ||
  { head -n 20 "$W/streamed.diff" >&2; fail "the restore from streams differs from the one from directories"; }
echo "from streams = from directories: $(wc -l < "$W/streamed.md5") identical files"
# Killed while deltas go in as they arrive (a stream cannot be resumed): the server refuses what
# is left (the placeholder log), and the same command starts over and ends with the same files.
for round in $(seq 1 "${XBAK_RESTORE_STREAM_KILLS:-2}"); do
  rm -rf "$W/streamed"
  "$XBAK" --restore --parallel=2 --datadir="$W/streamed" --from-stream="$W/full.xb" --from-stream="$W/inc1.xb" \
    --from-stream="$W/inc2.xb" --from-stream="$W/inc3.xb" 2> "$W/streamed-k$round.log" &
  pid=$!
  # Once the first incremental's deltas have begun to go in, or later.
  for _ in $(seq 500); do grep -q "written into the datadir as they arrived" "$W/streamed-k$round.log" && break; sleep 0.01; done
  sleep "0.$((RANDOM % 5))"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  [ -e "$W/streamed/xbak_restore_in_progress" ] || { echo "round $round: finished before the kill"; continue; }
  [ "$(stat -c %s "$W/streamed/ib_logfile0")" -eq 12288 ] || fail "a killed restore from streams left no placeholder log"
  xbak --restore --parallel=2 --datadir="$W/streamed" --from-stream="$W/full.xb" --from-stream="$W/inc1.xb" \
    --from-stream="$W/inc2.xb" --from-stream="$W/inc3.xb" 2> "$W/streamed-r$round.log" ||
    { tail -n 20 "$W/streamed-r$round.log" >&2; fail "round $round: the restore from streams run again"; }
  assert_contains "$W/streamed-r$round.log" "did not finish; removing what it wrote and starting over"
  md5tree "$W/streamed" > "$W/streamed.md5"
  diff "$W/onepass.md5" "$W/streamed.md5" > "$W/streamed.diff" ||
    { head -n 20 "$W/streamed.diff" >&2; fail "round $round: the restore from streams run again differs"; }
  echo "round $round: killed, run again: the same files"
done
rm -rf "$W/streamed" "$W"/*.xb

step "both start; CHECKSUM TABLE of every table equal; CHECK TABLE EXTENDED; a and b agree"
start_on() { # DATADIR
  sb_stop dst
  rm -rf "$W/dst"
  sb_init_from_datadir dst "$dst_port" "$1"
  if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$1"; fi
  sb_start dst
}
start_on "$W/twostep"
sb_checksums dst > "$W/twostep.sum"
start_on "$W/onepass"
sb_checksums dst > "$W/onepass.sum"
sb_compare_checksums "$W/twostep.sum" "$W/onepass.sum"
sb_check_all dst
assert_eq "$(sb_sql dst "SELECT COUNT(*) FROM r.a")" "$(sb_sql dst "SELECT COUNT(*) FROM r.b")" \
  "rows of r.a and r.b (inserted in one transaction)"
assert_eq 500 "$(sb_sql dst "SELECT COUNT(*) FROM r.later")" "r.later (created and renamed between backups)"
assert_eq 60000 "$(sb_sql dst "SELECT COUNT(*) FROM r.moved_away")" "r.moved_away (renamed during inc3)"
assert_eq "$(cat "$W/logt.sum")" "$(sb_sql dst "CHECKSUM TABLE r.logt_old, r.logt")" \
  "r.logt_old and r.logt (log rotation during inc2) as on the server"
sb_stop dst

# same_as_onepass DIR WHAT : DIR (a restore killed and run again) holds the same files as the
# uninterrupted restore; if not, where the kill landed and what the re-run did (the work dir
# does not outlive CI), and which page of the first differing file differs.
same_as_onepass() {
  local d=$1 what=$2 bad
  md5tree "$d" > "$d.md5"
  diff "$W/onepass.md5" "$d.md5" > "$d.diff" && return 0
  head "$d.diff" >&2
  echo "-- the killed run's log (end):" >&2
  tail -n 8 "$d.log" >&2 || true
  echo "-- the re-run's log:" >&2
  grep -E "resuming|applied|redo applied|interrupted|restored" "$d-rerun.log" >&2 || true
  bad=$(awk '/^[<>]/ { print $3 }' "$d.diff" | sed -n 's|^\./||p' | sort -u | head -n 1)
  if [ -n "$bad" ]; then
    cmp -l "$W/onepass/$bad" "$d/$bad" 2>&1 | awk '{ printf "page %d byte %d\n", ($1 - 1) / 16384, ($1 - 1) % 16384 }' |
      uniq -c -w 10 | head -n 5 >&2 || true
    ls -l "$W/onepass/$bad" "$d/$bad" >&2 || true
  fi
  fail "$what: the resumed restore differs"
}

step "restores killed at random points: refused by the server, finished by the same command"
for round in $(seq 1 "${XBAK_RESTORE_KILLS:-5}"); do
  d="$W/killed$round"
  # A point anywhere in the restore: from the start to past its measured length.
  delay=$(awk -v s="$restore_s" -v r="$RANDOM" 'BEGIN { printf "%.2f", (r / 32768) * s * 1.1 }')
  "$XBAK" --restore --parallel=2 --datadir="$d" "${CHAIN[@]}" 2> "$d.log" &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  if [ -e "$d/xbak_restore_in_progress" ]; then
    echo "round $round: killed after $delay s, unfinished"
    if [ "$round" -le 2 ] && [ -d "$d/mysql" ]; then
      # The server must refuse it (on a copy: a server that starts would write into it).
      rm -rf "$W/probe" && cp -a "$d" "$W/probe"
      sb_stop dst
      rm -rf "$W/dst"
      sb_init_from_datadir dst "$dst_port" "$W/probe"
      if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/probe"; fi
      if SB_START_TIMEOUT=20 sb_start dst 2> "$W/probe.log"; then
        sb_stop dst
        fail "round $round: the server started on an unfinished restore"
      fi
      grep -m1 -E "ib_logfile0|InnoDB" "$W/probe.log" | sed 's/^/  server: /' || true
    fi
    "$XBAK" --restore --parallel=2 --datadir="$d" "${CHAIN[@]}" 2> "$d-rerun.log" ||
      { tail -n 20 "$d-rerun.log" >&2; fail "round $round: the re-run restore failed"; }
    assert_contains "$d-rerun.log" "resuming the interrupted restore"
  elif [ -e "$d/ib_logfile0" ]; then
    echo "round $round: killed after $delay s, already finished"
    # A finished restore is a datadir like any other: never written into again.
    if "$XBAK" --restore --datadir="$d" "${CHAIN[@]}" 2> "$d-again.log"; then fail "restored over a finished restore"; fi
    assert_contains "$d-again.log" "is not empty"
  else
    echo "round $round: killed after $delay s, before it wrote anything"
    "$XBAK" --restore --parallel=2 --datadir="$d" "${CHAIN[@]}" 2> "$d-rerun.log" ||
      { tail -n 20 "$d-rerun.log" >&2; fail "round $round: the restore after an early kill failed"; }
  fi
  same_as_onepass "$d" "round $round"
  rm -rf "$d" "$W/probe"
done

# Kill points that a random delay rarely meets (a rename, a truncate, a sync, the Nth page
# write of the redo or the deltas), by strace: SIGKILL at the Nth call of a system call (counted
# per thread). XBAK_RESTORE_SWEEP=N spreads N points over the page writes (default 3; the opt-in
# long mode, scripts/run-tests.sh --kills, runs 100), plus the first and last rename and the middle
# truncate, fsync, fdatasync and syncfs (with N > 3, their first and last too).
step "restores killed by strace at chosen system calls, then run again"
if [ "${XBAK_RESTORE_SWEEP:-3}" = 0 ]; then
  echo "XBAK_RESTORE_SWEEP=0: no chosen kill points"
elif ! strace -f -o /dev/null true 2> /dev/null; then
  echo "SKIPPED: strace cannot trace here (ptrace refused); the chosen kill points did not run"
else
  strace -f -y -o "$W/syscalls.txt" -e trace=pwrite64,rename,ftruncate,fsync,fdatasync,syncfs \
    "$XBAK" --restore --parallel=2 --datadir="$W/counted" "${CHAIN[@]}" 2> "$W/counted.log" ||
    { tail -n 20 "$W/counted.log" >&2; fail "the restore under strace"; }
  rm -rf "$W/counted"
  # The calls of the thread that makes the most of them (strace counts per thread).
  calls() {
    awk -v c="$1" '{ n = $2; sub(/\(.*/, "", n); if (n == c) k[$1]++ } END { m = 0; for (p in k) if (k[p] > m) m = k[p]; print m }' \
      "$W/syscalls.txt"
  }
  points=()
  nw=$(calls pwrite64)
  n=${XBAK_RESTORE_SWEEP:-3}
  [ "$nw" -gt 0 ] || fail "the restore under strace made no pwrite64 call"
  for i in $(seq 1 "$n"); do points+=("pwrite64:$((1 + nw * 6 * i / (10 * n)))"); done
  t=$(calls rename)
  [ "$t" -gt 0 ] || fail "the restore under strace made no rename call"
  points+=("rename:1" "rename:$t")
  for c in ftruncate fsync fdatasync syncfs; do
    t=$(calls "$c")
    if [ "$t" -eq 0 ]; then
      echo "$c: no call to kill at"
      continue
    fi
    if [ "$n" -gt 3 ]; then points+=("$c:1" "$c:$t"); fi
    points+=("$c:$(((t + 1) / 2))")
  done
  # The page writes of the delta and redo steps come from worker threads, whose counts the copy's
  # thread outruns: a kill there is aimed at one small table, at a write past the copy's (strace
  # -P counts only the calls on that file). The tables whose later writes reach furthest come
  # first; CI takes one write of each of the first 2, the long mode up to 5 writes of 10.
  mapfile -t targets < <(awk -v d="$W/counted/" '
    $2 ~ /^pwrite64\(/ && index($2, "<" d) {
      f = substr($2, index($2, "<" d) + length(d) + 1); sub(/>.*/, "", f)
      if (f !~ /\.ibd$/) next
      if (!(f in first)) first[f] = $1
      k[f SUBSEP $1]++
    }
    END {
      for (fk in k) { split(fk, a, SUBSEP); if (a[2] != first[a[1]] && k[fk] > m[a[1]]) m[a[1]] = k[fk] }
      for (f in m) { c0 = k[f SUBSEP first[f]]; if (m[f] > c0) print m[f] - c0, f, c0 + 1, m[f] }
    }' "$W/syscalls.txt" | sort -k1,1nr -k2,2 | head -n "$([ "$n" -gt 3 ] && echo 10 || echo 2)")
  for t in "${targets[@]}"; do
    read -r _ f lo hi <<< "$t"
    if [ "$n" -gt 3 ]; then
      for at in $(seq "$lo" "$hi" | head -n 5); do points+=("pwrite64@$f:$at"); done
    else
      points+=("pwrite64@$f:$(((lo + hi) / 2))")
    fi
  done
  # (strace's when= takes 1 to 65535.)
  mapfile -t points < <(printf '%s\n' "${points[@]}" | awk -F: '$2 <= 65535 && !seen[$0]++')
  for p in "${points[@]}"; do
    # pwrite64@FILE:N is the Nth write to FILE only.
    sc=${p%%:*} at=${p##*:} d="$W/swept" only=""
    if [[ $sc == *@* ]]; then only="$d/${sc#*@}" sc=${sc%%@*}; fi
    rm -rf "$d" "$d.log" "$d-rerun.log"
    # (Through sh, which says nothing of a child killed by a signal.)
    rc=0
    sh -c 'sc=$1 at=$2 x=$3 d=$4 only=$5; shift 5
      strace -f -o /dev/null ${only:+-P "$only"} -e trace="$sc" -e inject="$sc:signal=KILL:when=$at" "$x" \
        --restore --parallel=2 --datadir="$d" "$@" 2> "$d.log"' - "$sc" "$at" "$XBAK" "$d" "$only" "${CHAIN[@]}" || rc=$?
    if [ "$rc" = 0 ]; then
      echo "$p: not reached on any thread"
      continue
    fi
    # Killed, or nothing proves the point: xbak or strace failing otherwise fails the test.
    [ "$rc" = 137 ] || { tail -n 20 "$d.log" >&2; fail "$p: the restore under strace ended with status $rc, not killed"; }
    if [ ! -e "$d/xbak_restore_in_progress" ] && [ -e "$d/ib_logfile0" ] && ! grep -q "is not finished" "$d/ib_logfile0"; then
      echo "$p: killed after it finished"
    else
      "$XBAK" --restore --parallel=2 --datadir="$d" "${CHAIN[@]}" 2> "$d-rerun.log" ||
        { tail -n 20 "$d-rerun.log" >&2; fail "$p: the re-run restore failed"; }
      echo "$p: killed after \"$({ grep -E '^\[00\] [0-9]{4}-' "$d.log" || true; } | tail -n 1 | cut -c26-105)\", run again"
    fi
    same_as_onepass "$d" "$p"
  done
  rm -rf "$W/swept"
fi
for d in full inc1 inc2 inc3; do md5tree "$W/$d"; done > "$W/chain-after2.md5"
cmp -s "$W/chain-before.md5" "$W/chain-after2.md5" || fail "the killed restores changed the backups"

step "a restore with the log, ibdata and undo tablespaces in directories of their own"
xbak --restore --parallel=2 --datadir="$W/split/data" --innodb-log-group-home-dir="$W/split/log" \
  --innodb-data-home-dir="$W/split/home" --innodb-undo-directory="$W/split/undo" "${CHAIN[@]}" 2> "$W/split.log" ||
  { tail -n 20 "$W/split.log" >&2; fail "restore into split directories"; }
assert_file "$W/split/log/ib_logfile0"
assert_file "$W/split/home/ibdata1"
assert_file "$W/split/undo/undo001"
[ ! -e "$W/split/data/ibdata1" ] && [ ! -e "$W/split/data/ib_logfile0" ] && [ ! -e "$W/split/data/undo001" ] ||
  fail "files left in the datadir that belong elsewhere"
sb_stop dst
rm -rf "$W/dst"
sb_init_from_datadir dst "$dst_port" "$W/split/data" "innodb_log_group_home_dir=$W/split/log" \
  "innodb_data_home_dir=$W/split/home" "innodb_undo_directory=$W/split/undo" "innodb_undo_tablespaces=2"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/split"; fi
sb_start dst
sb_checksums dst > "$W/split.sum"
sb_compare_checksums "$W/onepass.sum" "$W/split.sum"
sb_stop dst
echo "restore: ok"
