#!/usr/bin/env bash
# Issue 19, done-when 1: every server layout MariaDB 10.11 accepts. For each cell of the matrix: a
# server with that layout, a table of every row format (and every KEY_BLOCK_SIZE) its page size
# allows, under a write load (a stored procedure updating, inserting and deleting rows, off-page
# BLOBs included) for the whole backup; then
#   xbak --backup, then an incremental on top (verified with xbak --verify); two copies
#   of the chain prepared, one by xbak --prepare, one by mariabackup --prepare: every page of every
#   data file identical (compare_pages.py); the xbak copy restored by --copy-back
#   into a server with the same layout, started, CHECK TABLE EXTENDED on every table, and its
#   CHECKSUM TABLE equal to the mariabackup copy's.
#
# Cells (XBAK_LAYOUTS picks them: "ci" (default, the normal CI pass: 10 cells, about 130 s on 2 cores:
# p4k p16k p64k crc32 dirs multi pcomp pcomp_crc32 pcomp_lz4 enc_p4k_crc32; t_encryption.sh runs
# aes_cbc at 16k), "all" (18 cells, about 200 s; run
# before resolving a change to page formats or prepare), "quick" (p4k multi pcomp: the ASan pass),
# or names):
#   p4k p8k p16k p32k p64k   innodb_page_size; REDUNDANT, COMPACT, DYNAMIC, and COMPRESSED with each
#                            KEY_BLOCK_SIZE up to the page size (none at 32k/64k: the server refuses)
#   crc32                    innodb_checksum_algorithm=crc32 (the pre-full_crc32 page format)
#   dirs                     innodb_undo_directory (3 undo tablespaces), innodb_log_group_home_dir
#                            and innodb_data_home_dir each outside the datadir
#   multi                    a system tablespace of two files (ibdata1:3M;ibdata2:4M:autoextend, undo
#                            in it): fails unless prepare wrote into ibdata2
#   pcomp pcomp_crc32        PAGE_COMPRESSED tables (zlib) in full_crc32 and in the older format;
#                            the backup and the restore must stay sparse (at most 70% allocated)
#   pcomp_lz4 _lzma _bzip2 _lzo _snappy
#                            the same with each provider algorithm (Debian's mariadb-plugin-provider-*;
#                            mariabackup --prepare loads it from the plugin_load line xbak writes in
#                            backup-my.cnf)
#   enc enc_p4k_crc32 enc_pcomp
#                            data-at-rest encryption (file_key_management, innodb_encrypt_tables=ON,
#                            innodb_encrypt_log=ON, rotation threads): aes_cbc at 16k; aes_ctr at 4k
#                            with the older page format (COMPRESSED pages encrypted too); encrypted
#                            PAGE_COMPRESSED tables (full_crc32). xbak --prepare decrypts with the key
#                            file backup-my.cnf names, applies the log and encrypts again
#                            (docs/encryption.md)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbak
command -v mariabackup > /dev/null || fail "mariabackup (Debian mariadb-backup) is needed"

CMP=(python3 "$XBAK_SRC/tests/integration/compare_pages.py")
ALL_CELLS="p4k p8k p16k p32k p64k crc32 dirs multi pcomp pcomp_crc32 pcomp_lz4 pcomp_lzma pcomp_bzip2 pcomp_lzo pcomp_snappy enc enc_p4k_crc32 enc_pcomp"
case "${XBAK_LAYOUTS:-ci}" in
  quick) CELLS="p4k multi pcomp" ;;
  ci) CELLS="p4k p16k p64k crc32 dirs multi pcomp pcomp_crc32 pcomp_lz4 enc_p4k_crc32" ;;
  all) CELLS=$ALL_CELLS ;;
  *) CELLS=$XBAK_LAYOUTS ;;
esac
ROWS=${XBAK_LAYOUT_ROWS:-3000}
W=$TEST_WORK
src_port=$(alloc_port)
dst_port=$(alloc_port)

# cell_options CELL : the my.cnf lines of a cell's server (for src; "DIR" stands for its own dir)
cell_options() {
  case "$1" in
    p4k) echo "innodb_page_size=4k" ;;
    p8k) echo "innodb_page_size=8k" ;;
    p16k) echo "innodb_page_size=16k" ;;
    p32k) echo "innodb_page_size=32k" ;;
    p64k) echo "innodb_page_size=64k" ;;
    crc32) echo "innodb_checksum_algorithm=crc32" ;;
    pcomp) echo "innodb_compression_algorithm=zlib" ;;
    pcomp_crc32) printf '%s\n' "innodb_checksum_algorithm=crc32" "innodb_compression_algorithm=zlib" ;;
    pcomp_lz4 | pcomp_lzma | pcomp_bzip2 | pcomp_lzo | pcomp_snappy)
      printf '%s\n' "plugin_load_add=provider_${1#pcomp_}" "innodb_compression_algorithm=${1#pcomp_}" ;;
    dirs) printf '%s\n' "innodb_undo_directory=DIR/undo" "innodb_undo_tablespaces=3" \
      "innodb_log_group_home_dir=DIR/redo" "innodb_data_home_dir=DIR/sys" ;;
    # Dirty pages written out at once: MariaDB 11.8's page cleaner writes nothing and moves no
    # checkpoint while its log has room, and the incremental's ibdata2.delta would hold no page
    # (the changes only in its redo log), which the cell checks it does.
    multi) printf "%s\n" "innodb_data_file_path=ibdata1:3M;ibdata2:4M:autoextend" "innodb_undo_tablespaces=0" \
      "innodb_max_dirty_pages_pct=0" ;;
    enc | enc_p4k_crc32 | enc_pcomp)
      printf '%s\n' "plugin_load_add=file_key_management" "file_key_management_filename=$W/keys.txt" \
        "innodb_encrypt_tables=ON" "innodb_encrypt_log=ON" "innodb_encryption_threads=2" "innodb_undo_tablespaces=2"
      case "$1" in
        enc) echo "file_key_management_encryption_algorithm=aes_cbc" ;;
        enc_p4k_crc32) printf '%s\n' "file_key_management_encryption_algorithm=aes_ctr" "innodb_page_size=4k" \
          "innodb_checksum_algorithm=crc32" ;;
        enc_pcomp) printf '%s\n' "file_key_management_encryption_algorithm=aes_ctr" "innodb_compression_algorithm=zlib" ;;
      esac ;;
    *) fail "unknown layout cell '$1' (cells: $ALL_CELLS)" ;;
  esac
}

# page_kb CELL : the cell's innodb_page_size in KiB
page_kb() {
  case "$1" in p4k | enc_p4k*) echo 4 ;; p8k) echo 8 ;; p32k) echo 32 ;; p64k) echo 64 ;; *) echo 16 ;; esac
}

# table_kinds CELL : "name|table options" for every row format the page size allows
table_kinds() {
  local kb k
  kb=$(page_kb "$1")
  case "$1" in pcomp* | enc_pcomp)
    # PAGE_COMPRESSED (the server refuses it with REDUNDANT and COMPRESSED); a table's own level too (recovery writes
    # every page back with innodb_compression_level, mariabackup's and xbak's alike)
    echo "pc_compact|ROW_FORMAT=COMPACT PAGE_COMPRESSED=1"
    echo "pc_dynamic|ROW_FORMAT=DYNAMIC PAGE_COMPRESSED=1"
    echo "pc_level1|PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=1"
    echo "plain|ROW_FORMAT=DYNAMIC"
    return 0 ;;
  esac
  echo "redundant|ROW_FORMAT=REDUNDANT"
  echo "compact|ROW_FORMAT=COMPACT"
  echo "dynamic|ROW_FORMAT=DYNAMIC"
  if [ "$kb" -le 16 ]; then
    for k in 1 2 4 8 16; do
      [ "$k" -le "$kb" ] && echo "zip$k|ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=$k"
    done
  fi
  return 0
}

# instance_options NAME CELL : the cell's options, DIR resolved to $W/dirs-NAME (outside the instance
# dir, which sb_init wipes)
instance_options() {
  cell_options "$2" | sed "s#DIR#$W/dirs-$1#g"
}

make_dirs() { # NAME CELL : the directories the cell's options name, owned by the server's user
  local l dir
  while IFS= read -r l; do
    case "$l" in innodb_undo_directory=* | innodb_log_group_home_dir=* | innodb_data_home_dir=*)
      dir=${l#*=}
      mkdir -p "$dir"
      if [ "$(id -u)" -eq 0 ]; then chown mysql:mysql "$dir"; fi ;;
    esac
  done < <(instance_options "$1" "$2")
}

load_tables() { # CELL : one table per kind in db lay, $ROWS rows each, and the churn procedure
  local kind name opts body=""
  sb_sql src "CREATE DATABASE lay; CREATE TABLE lay.ctl (stop INT NOT NULL) ENGINE=InnoDB; INSERT INTO lay.ctl VALUES (0)"
  while IFS='|' read -r name opts; do
    sb_sql src "CREATE TABLE lay.$name (id INT AUTO_INCREMENT PRIMARY KEY, n INT NOT NULL, v VARCHAR(100) NOT NULL,
        b BLOB, KEY (n)) ENGINE=InnoDB DEFAULT CHARSET=latin1 $opts;
      SET SESSION max_recursive_iterations = 1000000;
      INSERT INTO lay.$name (n, v, b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $ROWS)
        SELECT i, REPEAT(CHAR(65 + i % 26), 20 + i % 80), IF(i % 10 = 0, REPEAT(MD5(i), 1 + i % 100), MD5(i)) FROM s"
    body+="
      UPDATE lay.$name SET n = n + 1, v = REPEAT(CHAR(65 + i % 26), 10 + i % 90) WHERE id % 61 = i % 61;
      UPDATE lay.$name SET b = REPEAT(MD5(i), 1 + i % 120) WHERE id % 97 = i % 97;
      INSERT INTO lay.$name (n, v, b) VALUES (i, 'new', IF(i % 5 = 0, REPEAT('z', 3000), NULL));
      DELETE FROM lay.$name WHERE id % 89 = i % 89 ORDER BY id LIMIT 2;"
  done < <(table_kinds "$1")
  mariadb --defaults-file="$(sb_cnf src)" << SQL
DELIMITER //
CREATE PROCEDURE lay.churn() BEGIN DECLARE i INT DEFAULT 0;
  WHILE (SELECT stop FROM lay.ctl) = 0 DO SET i = i + 1; $body END WHILE; END //
DELIMITER ;
SQL
}

allocated_pct() { # FILE : the share of its size the file occupies on disk, in percent
  stat -c '%b %B %s' "$1" | awk '{ printf "%d", ($3 > 0 ? 100 * $1 * $2 / $3 : 100) }'
}

run_cell() { # CELL
  local cell=$1 opts c
  step "[$cell] server: $(cell_options "$cell" | tr '\n' ' ')"
  rm -rf "$W/dirs-src"
  make_dirs src "$cell"
  mapfile -t opts < <(instance_options src "$cell")
  sb_init src "$src_port" "${opts[@]}"
  sb_start src
  load_tables "$cell"
  echo "[$cell] tables: $(table_kinds "$cell" | cut -d'|' -f1 | tr '\n' ' ')"
  case "$cell" in enc*)
    # The rotation threads encrypt the system and undo tablespaces after the start: let them finish,
    # so that the two preparers see no tablespace half-encrypted (t_encryption.sh covers that case).
    for _ in $(seq 150); do
      [ "$(sb_sql src "SELECT COUNT(*) FROM information_schema.INNODB_TABLESPACES_ENCRYPTION
        WHERE MIN_KEY_VERSION = 0 OR ROTATING_OR_FLUSHING <> 0")" = 0 ] && break
      sleep 0.2
    done
    echo "[$cell] encrypted tablespaces: $(sb_sql src "SELECT COUNT(*) FROM information_schema.INNODB_TABLESPACES_ENCRYPTION
      WHERE ENCRYPTION_SCHEME = 1")" ;;
  esac

  step "[$cell] xbak --backup under the churn load"
  sb_sql src "CALL lay.churn()" 2> "$W/$cell-churn.err" &
  local churn=$!
  sleep 2
  rm -rf "$W/$cell"
  xbak --backup --defaults-file="$(sb_cnf src)" --parallel=2 --target-dir="$W/$cell/bk" 2> "$W/$cell-backup.log" ||
    { sb_sql src "UPDATE lay.ctl SET stop = 1"; tail -n 20 "$W/$cell-backup.log" >&2; fail "[$cell] xbak --backup"; }
  # An incremental on top, still under the load.
  local inc=1
  sleep 1
  xbak --backup --defaults-file="$(sb_cnf src)" --parallel=2 --incremental-basedir="$W/$cell/bk" \
    --target-dir="$W/$cell/inc" 2> "$W/$cell-inc.log" ||
    { sb_sql src "UPDATE lay.ctl SET stop = 1"; tail -n 20 "$W/$cell-inc.log" >&2; fail "[$cell] xbak --backup --incremental"; }
  "$XBAK" --verify --target-dir="$W/$cell/bk" --incremental-dir="$W/$cell/inc" 2> "$W/$cell-verify.log" ||
    { tail -n 20 "$W/$cell-verify.log" >&2; fail "[$cell] xbak --verify of the chain"; }
  if [ "$cell" = multi ]; then
    # The second file's delta numbers its pages from 0 within the file (as mariabackup's does):
    # it must hold some, or the cell would not test that.
    # (a delta without pages is one 16 KiB header block).
    [ "$(stat -c %s "$W/$cell/inc/ibdata2.delta")" -gt 16384 ] ||
      fail "[multi] the incremental changed no page of ibdata2"
  fi
  sb_sql src "UPDATE lay.ctl SET stop = 1"
  wait "$churn" || { cat "$W/$cell-churn.err" >&2; fail "[$cell] the churn load failed"; }
  grep -o 'redo log copied from LSN [0-9]* to [0-9]*' "$W/$cell-backup.log" || true
  sb_stop src
  case "$cell" in pcomp*)
    # The server keeps PAGE_COMPRESSED tables sparse; so must the backup (and the restore, below).
    echo "[$cell] lay/pc_compact.ibd: $(allocated_pct "$(sb_datadir src)/lay/pc_compact.ibd")% allocated on the server," \
      "$(allocated_pct "$W/$cell/bk/lay/pc_compact.ibd")% in the backup"
    [ "$(allocated_pct "$W/$cell/bk/lay/pc_compact.ibd")" -le 70 ] || fail "[$cell] the backup of a PAGE_COMPRESSED table is not sparse"
    ;;
  esac
  cp -a "$W/$cell/bk" "$W/$cell/mb"
  mv "$W/$cell/bk" "$W/$cell/x"
  if [ "$inc" = 1 ]; then cp -a "$W/$cell/inc" "$W/$cell/mb-inc"; fi

  step "[$cell] mariabackup --prepare and xbak --prepare of the same backup$([ "$inc" = 1 ] && echo " and incremental"): identical pages"
  mariabackup --defaults-file="$W/$cell/mb/backup-my.cnf" --prepare --target-dir="$W/$cell/mb" > "$W/$cell-mb.log" 2>&1 ||
    { tail -n 20 "$W/$cell-mb.log" >&2; fail "[$cell] mariabackup --prepare"; }
  if [ "$inc" = 1 ]; then
    mariabackup --defaults-file="$W/$cell/mb/backup-my.cnf" --prepare --target-dir="$W/$cell/mb" \
      --incremental-dir="$W/$cell/mb-inc" >> "$W/$cell-mb.log" 2>&1 ||
      { tail -n 20 "$W/$cell-mb.log" >&2; fail "[$cell] mariabackup --prepare --incremental-dir"; }
  fi
  local before=""
  if [ -f "$W/$cell/x/ibdata2" ]; then before=$(md5sum < "$W/$cell/x/ibdata2"); fi
  prepare_backup "$cell" "$W/$cell/x"
  if [ -n "$before" ]; then
    # Else the cell proves nothing about a tablespace that runs on into a second file.
    [ "$(md5sum < "$W/$cell/x/ibdata2")" != "$before" ] ||
      fail "[$cell] the redo log changed nothing in ibdata2: the load did not reach the second file"
    echo "[$cell] prepare wrote into ibdata2 ($(stat -c %s "$W/$cell/x/ibdata2") bytes)"
  fi
  if [ "$inc" = 1 ]; then
    "$XBAK" --prepare --parallel=2 --target-dir="$W/$cell/x" --incremental-dir="$W/$cell/inc" 2> "$W/$cell-xinc.log" ||
      { tail -n 20 "$W/$cell-xinc.log" >&2; fail "[$cell] xbak --prepare --incremental-dir"; }
  fi
  "${CMP[@]}" "$W/$cell/mb" "$W/$cell/x" || fail "[$cell] xbak and mariabackup prepared different pages"

  step "[$cell] restore: starts, CHECK TABLE EXTENDED, checksums equal to mariabackup's"
  for c in x mb; do
    sb_stop dst
    rm -rf "$W/dst" "$W/dirs-dst"
    make_dirs dst "$cell"
    mapfile -t opts < <(instance_options dst "$cell")
    sb_init_from_datadir dst "$dst_port" "$W/dst/data" "${opts[@]}"
    "$XBAK" --copy-back --defaults-file="$(sb_cnf dst)" --target-dir="$W/$cell/$c" 2> "$W/$cell-$c-copyback.log" ||
      { tail -n 20 "$W/$cell-$c-copyback.log" >&2; fail "[$cell] xbak --copy-back of the $c copy"; }
    if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$W/dst/data" "$W/dirs-dst" 2> /dev/null || true; fi
    case "$cell$c" in pcomp*x)
      echo "[$cell] restored lay/pc_compact.ibd: $(allocated_pct "$W/dst/data/lay/pc_compact.ibd")% allocated"
      [ "$(allocated_pct "$W/dst/data/lay/pc_compact.ibd")" -le 70 ] || fail "[$cell] the restored PAGE_COMPRESSED table is not sparse"
      ;;
    esac
    sb_start dst
    if [ "$c" = x ]; then sb_check_all dst EXTENDED; fi
    sb_checksums dst > "$W/$cell-$c.sum"
    sb_stop dst
  done
  sb_compare_checksums "$W/$cell-mb.sum" "$W/$cell-x.sum" || fail "[$cell] restored data differs from mariabackup's"
  echo "[$cell] $(wc -l < "$W/$cell-x.sum") tables identical to mariabackup's restore"
  rm -rf "$W/$cell"
}

case " $CELLS " in *" enc"*)
  printf '1;%s\n2;%s\n' "$(openssl rand -hex 32)" "$(openssl rand -hex 16)" > "$W/keys.txt"
  chmod 755 "$W"
  chmod 644 "$W/keys.txt" ;;
esac
for cell in $CELLS; do run_cell "$cell"; done
echo "layouts passed: $CELLS"
