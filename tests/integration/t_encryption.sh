#!/usr/bin/env bash
# Issue 19 (first part of data-at-rest encryption): a server with the file_key_management plugin,
# innodb_encrypt_tables=ON, key rotation threads encrypting the system and undo tablespaces, tables
# with their own keys (ENCRYPTED=YES ENCRYPTION_KEY_ID=2), ROW_FORMAT=COMPRESSED and PAGE_COMPRESSED
# encrypted tables and an ENCRYPTED=NO one, under writes:
#  - xbak --backup completes (encrypted pages are checked by their post-encryption checksums, no
#    key needed) and xbak --verify passes;
#  - backup-my.cnf names the plugin and its key file as mariabackup's does (not a literal filekey);
#  - xbak --prepare refuses the backup by name before writing anything (every file unchanged):
#    it cannot decrypt yet; before this test an earlier xbak looked for the wrong crypt-data magic
#    and would have applied the log to ciphertext;
#  - mariabackup --prepare of xbak's backup works from its backup-my.cnf alone, xbak --copy-back
#    restores it, the server (same key file) starts, CHECK TABLE EXTENDED passes and the load's
#    invariant holds;
#  - an incremental under writes verifies, is refused by xbak --prepare, and mariabackup --prepare
#    applies it onto the base; the restored chain passes CHECK TABLE and the invariant;
#  - with innodb_encrypt_log=ON (FORMAT_ENC_11), xbak --backup copies the encrypted log as it is
#    (framed and checksummed without the key) under writes, to a directory and as a stream;
#    --verify walks it; xbak --prepare refuses it by name (every file unchanged); mariabackup
#    --prepare of xbak's backup works and the restore passes CHECK TABLE and the invariant.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
require_mariabackup

W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)
mkdir -p "$W/keys"
printf '# test keys\n1;%s\n2;%s\n' "$(openssl rand -hex 32)" "$(openssl rand -hex 16)" > "$W/keys/keys.txt"
chmod 755 "$W" "$W/keys"
chmod 644 "$W/keys/keys.txt"
ENC=("plugin_load_add=file_key_management" "file_key_management_filename=$W/keys/keys.txt"
  "file_key_management_encryption_algorithm=aes_ctr" "innodb_encrypt_tables=ON" "innodb_encryption_threads=2"
  "innodb_encrypt_log=OFF")

step "source: encrypted tables of every kind, rotation threads on"
sb_init src "$src_port" "${ENC[@]}"
sb_start src
sb_sql src "CREATE DATABASE e; USE e;
  CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200), KEY (n));
  CREATE TABLE b (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(200));
  CREATE TABLE k2 (id INT PRIMARY KEY, v TEXT) ENCRYPTED=YES ENCRYPTION_KEY_ID=2;
  CREATE TABLE z (id INT PRIMARY KEY, v VARCHAR(200)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8;
  CREATE TABLE pc (id INT PRIMARY KEY, v VARCHAR(200)) PAGE_COMPRESSED=1;
  CREATE TABLE plain (id INT PRIMARY KEY, v VARCHAR(200)) ENCRYPTED=NO;
  INSERT INTO a (n, v) SELECT seq, REPEAT(MD5(seq), 4) FROM seq_1_to_20000;
  INSERT INTO b (n, v) SELECT n, v FROM a;
  INSERT INTO k2 SELECT seq, REPEAT(MD5(seq), 10) FROM seq_1_to_3000;
  INSERT INTO z SELECT seq, REPEAT(MD5(seq), 3) FROM seq_1_to_5000;
  INSERT INTO pc SELECT seq, REPEAT(MD5(seq), 3) FROM seq_1_to_5000;
  INSERT INTO plain SELECT seq, MD5(seq) FROM seq_1_to_2000"
cnf=$(sb_cnf src)
# Wait for the rotation threads to encrypt the system and undo tablespaces.
for _ in $(seq 100); do
  n=$(sb_sql src "SELECT COUNT(*) FROM information_schema.INNODB_TABLESPACES_ENCRYPTION
    WHERE NAME = 'innodb_system' AND MIN_KEY_VERSION > 0 AND ROTATING_OR_FLUSHING = 0")
  [ "$n" = 1 ] && break
  sleep 0.2
done
sb_sql src "SELECT NAME, ENCRYPTION_SCHEME, MIN_KEY_VERSION, CURRENT_KEY_ID FROM information_schema.INNODB_TABLESPACES_ENCRYPTION
  WHERE NAME LIKE 'e/%' OR NAME = 'innodb_system' ORDER BY NAME"
assert_eq 1 "$(sb_sql src "SELECT ENCRYPTION_SCHEME FROM information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME = 'e/k2'")" \
  "e/k2 is encrypted"

churn() { # a and b written together in one transaction; the others churn
  local i=$1
  sb_sql src "USE e; START TRANSACTION; INSERT INTO a (n, v) VALUES ($i, MD5($i)); INSERT INTO b (n, v) VALUES ($i, MD5($i));
    COMMIT; UPDATE a SET n = n + 1 WHERE id % 97 = $i % 97; UPDATE k2 SET v = REPEAT(MD5($i), 9) WHERE id % 31 = $i % 31;
    UPDATE z SET v = MD5($i) WHERE id % 41 = $i % 41; UPDATE pc SET v = MD5($i) WHERE id % 43 = $i % 43;
    UPDATE plain SET v = MD5($i) WHERE id % 17 = $i % 17" || true
}

step "xbak --backup under writes, then --verify"
loop_start churn
sleep 1
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/bk" 2> "$W/bk.log" ||
  { tail -n 20 "$W/bk.log" >&2; fail "xbak --backup of an encrypted server"; }
loop_stop
"$XBAK" --verify --target-dir="$W/bk" 2> "$W/verify.log" || { tail -n 20 "$W/verify.log" >&2; fail "xbak --verify"; }
assert_contains "$W/bk/backup-my.cnf" "^plugin_load=file_key_management=file_key_management$"
assert_contains "$W/bk/backup-my.cnf" "^file_key_management_filename=$W/keys/keys.txt$"
assert_contains "$W/bk/backup-my.cnf" "^file_key_management_encryption_algorithm=aes_ctr$"
assert_contains "$W/bk/backup-my.cnf" "^innodb_encrypt_tables=ON$"

step "xbak --prepare refuses by name, writes nothing"
(cd "$W/bk" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/before.md5"
if "$XBAK" --prepare --target-dir="$W/bk" 2> "$W/prep.log"; then fail "xbak --prepare of an encrypted backup ran"; fi
cat "$W/prep.log" >&2
assert_contains "$W/prep.log" "encrypted tablespaces are not supported by xbak --prepare yet"
(cd "$W/bk" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/after.md5"
cmp -s "$W/before.md5" "$W/after.md5" || { diff "$W/before.md5" "$W/after.md5" >&2; fail "the refused prepare changed files"; }

step "mariabackup --prepare of xbak's backup, restored by xbak, started with the same keys"
mariabackup --prepare --target-dir="$W/bk" > "$W/mb.log" 2>&1 || { tail -n 20 "$W/mb.log" >&2; fail "mariabackup --prepare"; }
copy_back_start full "$W/bk" "${ENC[@]}"
assert_eq "$(sb_sql dst "SELECT COUNT(*) FROM e.a")" "$(sb_sql dst "SELECT COUNT(*) FROM e.b")" \
  "rows of e.a and e.b (inserted in one transaction)"
assert_eq 3000 "$(sb_sql dst "SELECT COUNT(*) FROM e.k2")" "rows of e.k2"
sb_stop dst

step "an incremental of the encrypted server under writes, prepared by mariabackup onto the base"
loop_start churn
sleep 1
xbak --backup --defaults-file="$cnf" --parallel=2 --incremental-basedir="$W/bk" --target-dir="$W/inc" 2> "$W/inc.log" ||
  { tail -n 20 "$W/inc.log" >&2; fail "incremental backup of an encrypted server"; }
loop_stop
"$XBAK" --verify --target-dir="$W/inc" > "$W/inc-verify.log" 2>&1 || { tail "$W/inc-verify.log" >&2; fail "verify inc"; }
(cd "$W/bk" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/before-inc.md5"
if "$XBAK" --prepare --target-dir="$W/bk" --incremental-dir="$W/inc" 2> "$W/inc-prep.log"; then
  fail "xbak applied an incremental of an encrypted server"
fi
assert_contains "$W/inc-prep.log" "not supported by xbak --prepare yet"
# (It once wrote the deltas into the base and removed its xtrabackup_checkpoints before the redo
# step refused: the base then took no incremental from mariabackup either.)
(cd "$W/bk" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/after-inc.md5"
cmp -s "$W/before-inc.md5" "$W/after-inc.md5" || fail "the refused incremental apply changed the base"
mariabackup --prepare --target-dir="$W/bk" --incremental-dir="$W/inc" > "$W/mb-inc.log" 2>&1 ||
  { tail -n 20 "$W/mb-inc.log" >&2; fail "mariabackup --prepare --incremental-dir of xbak's incremental"; }
copy_back_start chain "$W/bk" "${ENC[@]}"
assert_eq "$(sb_sql dst "SELECT COUNT(*) FROM e.a")" "$(sb_sql dst "SELECT COUNT(*) FROM e.b")" \
  "rows of e.a and e.b after the incremental"
sb_stop dst

step "after a restart (the encryption no longer in the log): page 0's crypt data is found, nothing written"
sb_stop src
sb_start src
xbak --backup --defaults-file="$cnf" --target-dir="$W/bk2" 2> "$W/bk2.log" || { tail "$W/bk2.log" >&2; fail "backup 2"; }
(cd "$W/bk2" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/before2.md5"
if "$XBAK" --prepare --target-dir="$W/bk2" 2> "$W/prep2.log"; then fail "xbak --prepare of an encrypted backup ran"; fi
cat "$W/prep2.log" >&2
assert_contains "$W/prep2.log" "encrypted tablespace \(key id [0-9]+\): encrypted tablespaces are not supported"
(cd "$W/bk2" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/after2.md5"
cmp -s "$W/before2.md5" "$W/after2.md5" || fail "the refused prepare changed files"

step "innodb_encrypt_log=ON: the encrypted log is copied as it is, without the key, under writes"
sb_stop src
sed -i 's/^innodb_encrypt_log=OFF/innodb_encrypt_log=ON/' "$cnf"
sb_start src
head -c 4 "$(sb_datadir src)/ib_logfile0" | od -An -tx1 | grep -q "f0 9f 97 9d" || fail "the server's log is not FORMAT_ENC_11"
loop_start churn
sleep 1
xbak --backup --defaults-file="$cnf" --parallel=2 --target-dir="$W/enclog" 2> "$W/enclog.log" ||
  { tail -n 20 "$W/enclog.log" >&2; fail "xbak --backup of a server with an encrypted redo log"; }
xbak --backup --defaults-file="$cnf" --stream=xbstream 2> "$W/enclog-stream.log" > "$W/enclog.xb" ||
  { tail -n 20 "$W/enclog-stream.log" >&2; fail "streamed backup of an encrypted redo log"; }
loop_stop
assert_contains "$W/enclog.log" "the redo log is encrypted \\(innodb_encrypt_log=ON\\): copied as it is"
head -c 4 "$W/enclog/ib_logfile0" | od -An -tx1 | grep -q "f0 9f 97 9d" || fail "the backup's log lost its format"
"$XBAK" --verify --target-dir="$W/enclog" > "$W/enclog-verify.log" 2>&1 ||
  { tail -n 20 "$W/enclog-verify.log" >&2; fail "xbak --verify of a backup with an encrypted log"; }
assert_contains "$W/enclog-verify.log" " 0 problems"
mkdir -p "$W/enclog-x"
"$XBAK" --extract -C "$W/enclog-x" < "$W/enclog.xb" 2> "$W/enclog-x.log" || { cat "$W/enclog-x.log" >&2; fail "extract"; }
"$XBAK" --verify --target-dir="$W/enclog-x" > "$W/enclog-xverify.log" 2>&1 ||
  { tail -n 20 "$W/enclog-xverify.log" >&2; fail "xbak --verify of the streamed backup of an encrypted log"; }
(cd "$W/enclog" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/before3.md5"
if "$XBAK" --prepare --target-dir="$W/enclog" 2> "$W/prep3.log"; then fail "xbak --prepare of an encrypted log ran"; fi
assert_contains "$W/prep3.log" "the redo log is encrypted .*use mariabackup --prepare"
(cd "$W/enclog" && find . -type f -exec md5sum {} + | LC_ALL=C sort) > "$W/after3.md5"
cmp -s "$W/before3.md5" "$W/after3.md5" || fail "the refused prepare changed files"

step "mariabackup --prepare of xbak's backup of an encrypted log, restored and checked"
mariabackup --prepare --target-dir="$W/enclog" > "$W/mb3.log" 2>&1 || { tail -n 20 "$W/mb3.log" >&2; fail "mariabackup --prepare"; }
copy_back_start enclog "$W/enclog" "${ENC[@]}"
assert_eq "$(sb_sql dst "SELECT COUNT(*) FROM e.a")" "$(sb_sql dst "SELECT COUNT(*) FROM e.b")" \
  "rows of e.a and e.b after the encrypted-log backup"
sb_stop dst
echo "encryption: ok"
