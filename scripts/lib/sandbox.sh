# shellcheck shell=bash
# sandbox.sh - private MariaDB instances for xbak's integration tests, demo and benchmarks.
#
# Source it (it is `set -euo pipefail` friendly and changes no shell options):
#   . scripts/lib/sandbox.sh
#   sb_cleanup_on_exit                 # stop whatever this shell starts, even on error / Ctrl-C
#   sb_init src 23301 && sb_start src
#   sb_load_sample src; sb_flush src
#   sb_checksums src > src.sum
#
# Layout: every instance NAME lives in $XBAK_WORK/NAME/ (default work root: <repo>/.work):
#   my.cnf  data/  run/{mysqld.sock,mysqld.pid,error.log,...}  binlog/
# An instance made by sb_init_from_datadir has its datadir elsewhere (the restored DIR).
#
# Runs as root (mariadbd runs as user `mysql`, files are chowned to it) or as any other user
# (mariadbd runs as that user; no user= and no chown).
#
# Tunables (environment): XBAK_WORK, SB_START_TIMEOUT (s, 60), SB_STOP_TIMEOUT (s, 60),
# SB_FLUSH_TIMEOUT (s, 120), SB_LOG_FILE_SIZE (64M), SB_BUFFER_POOL_SIZE (128M),
# SB_VOLATILE_TABLES (mysql.* tables left out of sb_checksums / sb_check_all), SB_QUIET=1.

if [ -n "${_SB_SANDBOX_LOADED:-}" ]; then return 0; fi
_SB_SANDBOX_LOADED=1

SB_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${XBAK_WORK:=$SB_REPO_ROOT/.work}"
export XBAK_WORK
# XBAK_SERVER: the server every instance runs, and whose tools (mariadb-backup, mbstream, the
# client) the tests use: mariadb-10.11, the host's (Debian 12), by default; another is run from a
# Debian root that scripts/server-root.sh makes once (mariadb-11.8: Debian 13's; mysql-9.7:
# Debian unstable's), its wrappers first in PATH. The datadir has the same path inside the root
# and out.
: "${XBAK_SERVER:=mariadb-10.11}"
export XBAK_SERVER
# The server's family: how an instance is initialised and started (mysql-*: mysqld
# --initialize-insecure, its redo capacity, GTIDs on, no X Protocol port), the rest is shared.
case "$XBAK_SERVER" in mysql-*) SB_FLAVOR=mysql ;; *) SB_FLAVOR=mariadb ;; esac
if [ "$XBAK_SERVER" != mariadb-10.11 ]; then
  mkdir -p "$XBAK_WORK"
  _sb_root_bin=$("$SB_REPO_ROOT/scripts/server-root.sh" "$XBAK_SERVER") ||
    { echo "sandbox: ERROR: cannot make the $XBAK_SERVER root (XBAK_SERVER)" >&2; return 1; }
  case ":$PATH:" in *":$_sb_root_bin:"*) ;; *) PATH="$_sb_root_bin:$PATH"; export PATH ;; esac
fi
: "${SB_START_TIMEOUT:=60}"
: "${SB_STOP_TIMEOUT:=60}"
: "${SB_FLUSH_TIMEOUT:=120}"
: "${SB_LOG_FILE_SIZE:=64M}"
: "${SB_BUFFER_POOL_SIZE:=128M}"
# mysql.* tables whose content changes by itself (statistics, logs, replication state).
: "${SB_VOLATILE_TABLES:=mysql.innodb_table_stats mysql.innodb_index_stats mysql.general_log mysql.slow_log mysql.gtid_slave_pos mysql.table_stats mysql.column_stats mysql.index_stats mysql.transaction_registry}"
# Every instance that this shell (or a subshell of it: $$ is inherited) started is listed here.
SB_REGISTRY="${TMPDIR:-/tmp}/xbak-sb-started.$$"
# Extra commands (eval'ed) run by the exit trap: SB_ON_EXIT before the servers are stopped,
# SB_ON_EXIT_LATE after. Callers may append; $SB_EXIT_RC holds the exit status.
SB_ON_EXIT=()
SB_ON_EXIT_LATE=()

_sb_log() { [ "${SB_QUIET:-0}" = 1 ] || echo "sandbox: $*" >&2; }
_sb_err() { echo "sandbox: ERROR: $*" >&2; }
_sb_now() { date +%s.%N; }
_sb_since() { awk -v a="$1" -v b="$(_sb_now)" 'BEGIN{printf "%.2f", b-a}'; }
_sb_is_root() { [ "$(id -u)" -eq 0 ]; }

_sb_dir() { # NAME -> instance dir
  [ -n "${1:-}" ] || { _sb_err "instance name missing"; return 2; }
  case "$1" in */* | .*) _sb_err "bad instance name '$1'"; return 2 ;; esac
  printf '%s/%s\n' "$XBAK_WORK" "$1"
}

sb_cnf() { # sb_cnf NAME : path of the instance's my.cnf
  local d; d=$(_sb_dir "${1:-}") || return
  printf '%s/my.cnf\n' "$d"
}

_sb_cnf_get() { # NAME KEY : value of KEY from the [mysqld] section of the instance's my.cnf
  local c; c=$(sb_cnf "$1") || return
  [ -f "$c" ] || { _sb_err "instance '$1' has no my.cnf ($c); run sb_init first"; return 1; }
  awk -F= -v k="$2" '
    /^\[/ { sec = $0; next }
    sec == "[mysqld]" && $1 == k { v = substr($0, index($0, "=") + 1) }
    END { if (v == "") exit 1; print v }' "$c"
}

sb_datadir() { _sb_cnf_get "${1:-}" datadir; }  # sb_datadir NAME : the datadir
sb_socket() { _sb_cnf_get "${1:-}" socket; }    # sb_socket NAME : the unix socket path
sb_port() { _sb_cnf_get "${1:-}" port; }        # sb_port NAME : the TCP port (127.0.0.1)
sb_pidfile() { _sb_cnf_get "${1:-}" pid-file; } # sb_pidfile NAME
sb_errlog() { _sb_cnf_get "${1:-}" log-error; } # sb_errlog NAME : the server's error log

_sb_open_files_limit() {
  local h; h=$(ulimit -Hn)
  if [ "$h" = unlimited ] || [ "$h" -gt 20000 ]; then echo 20000; else echo "$h"; fi
}

_sb_socket_path() { # DIR : <DIR>/run/mysqld.sock, or a short /tmp path when that is too long for sun_path
  local s="$1/run/mysqld.sock"
  if [ "${#s}" -gt 100 ]; then
    s="${TMPDIR:-/tmp}/xbak-sb-$(printf '%s' "$1" | md5sum | cut -c1-12).sock"
  fi
  printf '%s\n' "$s"
}

# _sb_write_cnf NAME PORT DATADIR [extra lines...]
_sb_write_cnf() {
  local name=$1 port=$2 datadir=$3; shift 3
  local d sock user_line="" client_user
  d=$(_sb_dir "$name") || return
  case "$port" in '' | *[!0-9]*) _sb_err "bad port '$port'"; return 2 ;; esac
  sock=$(_sb_socket_path "$d")
  if _sb_is_root; then user_line="user=mysql"; client_user=root; else client_user=$(id -un); fi
  # A tmpdir per instance (sticky, open to all, as /tmp): instances started at
  # once in a shared /tmp can trip over each other's temporary tables
  # (mariadb-install-db failing with "Unknown table 'mysql.tmp_user_sys'").
  mkdir -p "$d/run" "$d/binlog" "$datadir" "$d/run/tmp"
  chmod 1777 "$d/run/tmp"
  {
    cat <<CNF
# Written by scripts/lib/sandbox.sh for instance '$name'.
[client]
socket=$sock
port=$port
user=$client_user

[mysqld]
$user_line
datadir=$datadir
socket=$sock
pid-file=$d/run/mysqld.pid
log-error=$d/run/error.log
tmpdir=$d/run/tmp
port=$port
bind-address=127.0.0.1
skip-name-resolve
innodb_file_per_table=1
innodb_buffer_pool_size=$SB_BUFFER_POOL_SIZE
$(_sb_flavor_cnf)
innodb_flush_log_at_trx_commit=2
log-bin=$d/binlog/mysql-bin
server-id=$port
sync_binlog=0
table_open_cache=4000
table_definition_cache=4000
open_files_limit=$(_sb_open_files_limit)
max_connections=200
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
CNF
    # Extra lines come last, so they override the defaults above (e.g. innodb_log_file_size=256M).
    local l
    for l in "$@"; do printf '%s\n' "$l"; done
  } > "$d/my.cnf"
}

_sb_flavor_cnf() { # the [mysqld] lines that differ between the families
  if [ "$SB_FLAVOR" = mysql ]; then
    # One redo capacity for the whole #innodb_redo set; GTIDs, as MariaDB always has them; no
    # X Protocol listener (every instance would want port 33060).
    printf '%s\n' "innodb_redo_log_capacity=$SB_LOG_FILE_SIZE" gtid_mode=ON enforce_gtid_consistency=ON mysqlx=OFF
  else
    printf '%s\n' "innodb_log_file_size=$SB_LOG_FILE_SIZE"
  fi
}

_sb_server_prog() { if [ "$SB_FLAVOR" = mysql ]; then echo mysqld; else echo mariadbd; fi; }

_sb_chown() { # DIR... : hand the instance's files to mysql when running as root
  if _sb_is_root; then chown -R mysql:mysql "$@"; fi
}

_sb_check_access() { # DIR : as root, the mysql user must be able to reach the instance dir
  if _sb_is_root && command -v runuser >/dev/null 2>&1; then
    if ! runuser -u mysql -- test -x "$1"; then
      _sb_err "user mysql cannot enter $1 (a parent directory is not world-searchable);" \
        "set XBAK_WORK to a directory under e.g. /tmp or /var/tmp"
      return 1
    fi
  fi
}

sb_running() { # sb_running NAME : true if the instance's mariadbd is alive
  local pid; pid=$(_sb_pid "${1:-}") && [ -n "$pid" ]
}

_sb_pid_is_ours() { # PID CNF : PID is a live mariadbd started with --defaults-file=CNF
  local pid=$1 cnf=$2 cmd
  [ -r "/proc/$pid/cmdline" ] || return 1
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  case "$cmd" in *"--defaults-file=$cnf"*) return 0 ;; esac
  return 1
}

_sb_pid() { # NAME : pid of the instance's live mariadbd (pid file, else the launcher pid), or fail
  local d cnf pf pid
  d=$(_sb_dir "${1:-}") || return
  cnf="$d/my.cnf"
  [ -f "$cnf" ] || return 1
  pf=$(sb_pidfile "$1" 2>/dev/null) || pf="$d/run/mysqld.pid"
  for f in "$pf" "$d/run/launcher.pid"; do
    [ -s "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    if _sb_pid_is_ours "$pid" "$cnf"; then echo "$pid"; return 0; fi
  done
  return 1
}

# sb_init NAME PORT [extra my.cnf lines...] : fresh instance (wipes $XBAK_WORK/NAME), runs mariadb-install-db
sb_init() {
  local name=${1:-} port=${2:-}; [ $# -ge 2 ] && shift 2 || { _sb_err "usage: sb_init NAME PORT [cnf lines...]"; return 2; }
  local d t0; d=$(_sb_dir "$name") || return
  if sb_running "$name"; then _sb_err "instance '$name' is running; sb_stop it first"; return 1; fi
  rm -rf "$d"
  mkdir -p "$d"
  _sb_check_access "$d" || return
  _sb_write_cnf "$name" "$port" "$d/data" "$@" || return
  _sb_chown "$d/data" "$d/run" "$d/binlog"
  t0=$(_sb_now)
  local args=(--defaults-file="$d/my.cnf") init=(mariadb-install-db)
  if [ "$SB_FLAVOR" = mysql ]; then
    # root@localhost without a password, as mariadb-install-db's unix_socket root is for root.
    init=(mysqld) args+=(--initialize-insecure)
    if _sb_is_root; then args+=(--user=mysql); fi
  else
    args+=(--skip-test-db)
    if _sb_is_root; then args+=(--user=mysql); else args+=(--auth-root-socket-user="$(id -un)"); fi
  fi
  if ! "${init[@]}" "${args[@]}" > "$d/run/install-db.log" 2>&1; then
    _sb_err "${init[*]} ${args[*]:1} for '$name' failed (full output: $d/run/install-db.log); server log:"
    tail -n 15 "$d/run/error.log" >&2 2> /dev/null || head -n 5 "$d/run/install-db.log" >&2
    return 1
  fi
  _sb_log "initialised $name (port $port) in $(_sb_since "$t0") s"
}

# sb_init_from_datadir NAME PORT DIR [extra my.cnf lines...] : my.cnf for an instance on an existing
# (restored) datadir DIR; no install-db. DIR may still be empty, e.g. for `mariabackup --copy-back`.
sb_init_from_datadir() {
  local name=${1:-} port=${2:-} dir=${3:-}; [ $# -ge 3 ] && shift 3 || { _sb_err "usage: sb_init_from_datadir NAME PORT DIR [cnf lines...]"; return 2; }
  local d; d=$(_sb_dir "$name") || return
  if sb_running "$name"; then _sb_err "instance '$name' is running; sb_stop it first"; return 1; fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # keep DIR if it lives inside the instance dir, wipe everything else there
  if [ -d "$d" ]; then
    local e
    for e in "$d"/* "$d"/.[!.]*; do
      [ -e "$e" ] || continue
      case "$dir/" in "$e/"*) continue ;; esac
      rm -rf "$e"
    done
  fi
  mkdir -p "$d"
  _sb_check_access "$d" || return
  _sb_write_cnf "$name" "$port" "$dir" "$@" || return
  _sb_chown "$d/run" "$d/binlog"
  _sb_log "configured $name (port $port) on datadir $dir"
}

# sb_start NAME : start mariadbd detached (own session), wait until it answers a ping
sb_start() {
  local name=${1:-} d cnf t0 lpid errlog i
  d=$(_sb_dir "$name") || return
  cnf="$d/my.cnf"
  [ -f "$cnf" ] || { _sb_err "no $cnf; run sb_init or sb_init_from_datadir first"; return 1; }
  if sb_running "$name"; then _sb_log "$name already running"; return 0; fi
  errlog=$(sb_errlog "$name")
  [ -d "$(sb_datadir "$name")/mysql" ] || { _sb_err "datadir $(sb_datadir "$name") of '$name' has no mysql/ schema"; return 1; }
  _sb_chown "$(sb_datadir "$name")" "$d/run" "$d/binlog"
  rm -f "$d/run/mysqld.pid" "$d/run/launcher.pid"
  local mark=0; [ -f "$errlog" ] && mark=$(wc -l < "$errlog")
  printf '%s\n' "$d" >> "$SB_REGISTRY"
  t0=$(_sb_now)
  # setsid: the server gets its own session, so a Ctrl-C on the terminal reaches only us and the
  # trap shuts it down cleanly. -w keeps the launcher's pid alive for as long as the server runs.
  (
    ulimit -n "$(_sb_open_files_limit)" 2>/dev/null || true
    exec setsid -w "$(_sb_server_prog)" --defaults-file="$cnf" < /dev/null >> "$d/run/stdout.log" 2>&1
  ) &
  lpid=$!
  echo "$lpid" > "$d/run/launcher.pid"
  local tries=$((SB_START_TIMEOUT * 10))
  for ((i = 0; i < tries; i++)); do
    if mariadb-admin --defaults-file="$cnf" --connect-timeout=2 ping > /dev/null 2>&1 && [ -s "$d/run/mysqld.pid" ]; then
      _sb_log "started $name (pid $(cat "$d/run/mysqld.pid"), port $(sb_port "$name")) in $(_sb_since "$t0") s"
      return 0
    fi
    if ! kill -0 "$lpid" 2> /dev/null; then break; fi
    sleep 0.1
  done
  if kill -0 "$lpid" 2> /dev/null; then
    _sb_err "$name did not answer within ${SB_START_TIMEOUT}s; stopping it"
    sb_stop "$name" >&2 || true
  else
    _sb_err "$(_sb_server_prog) for $name exited during startup"
  fi
  echo "----- $errlog (new lines, last 30) -----" >&2
  tail -n +"$((mark + 1))" "$errlog" 2> /dev/null | tail -n 30 >&2 || true
  echo "-----" >&2
  return 1
}

# sb_stop NAME : clean shutdown by pid (SIGTERM), bounded wait, then SIGKILL
sb_stop() {
  local name=${1:-} d pid t0 i
  d=$(_sb_dir "$name") || return
  if ! pid=$(_sb_pid "$name"); then
    rm -f "$d/run/launcher.pid"
    return 0
  fi
  t0=$(_sb_now)
  kill -TERM "$pid" 2> /dev/null || true
  for ((i = 1; i <= SB_STOP_TIMEOUT * 10; i++)); do
    kill -0 "$pid" 2> /dev/null || break
    if ((i % 100 == 0)); then # still there after 10 s, 20 s, ...: say so and ask again
      _sb_log "$name (pid $pid) still shutting down after $((i / 10)) s; last error-log line:" \
        "$(tail -n 1 "$(sb_errlog "$name" 2> /dev/null)" 2> /dev/null || true)"
      kill -TERM "$pid" 2> /dev/null || true
    fi
    sleep 0.1
  done
  if kill -0 "$pid" 2> /dev/null; then
    _sb_err "$name (pid $pid) did not stop within ${SB_STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2> /dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  fi
  # the launcher (setsid -w) exits with the server
  if [ -s "$d/run/launcher.pid" ]; then
    local l; l=$(cat "$d/run/launcher.pid")
    for ((i = 0; i < 50; i++)); do kill -0 "$l" 2> /dev/null || break; sleep 0.1; done
  fi
  rm -f "$d/run/mysqld.pid" "$d/run/launcher.pid"
  _sb_log "stopped $name (pid $pid) in $(_sb_since "$t0") s"
}

_sb_stop_dir() { # DIR : stop the instance living in DIR (any XBAK_WORK)
  local dir=$1
  [ -f "$dir/my.cnf" ] || return 0
  XBAK_WORK=$(dirname "$dir") sb_stop "$(basename "$dir")"
}

# sb_kill_all : stop every instance under $XBAK_WORK (at any depth), cleanly if possible
sb_kill_all() {
  local f
  for f in "${TMPDIR:-/tmp}"/xbak-sb-started.*; do # registries of shells that died without cleanup
    [ -f "$f" ] && ! kill -0 "${f##*.}" 2> /dev/null && rm -f "$f" 2> /dev/null || true
  done
  [ -d "$XBAK_WORK" ] || return 0
  local cnf
  while IFS= read -r cnf; do
    _sb_stop_dir "$(dirname "$cnf")" || true
  done < <(find "$XBAK_WORK" -name my.cnf -type f 2> /dev/null)
}

# sb_cleanup : stop every instance this shell started (idempotent)
sb_cleanup() {
  [ -f "$SB_REGISTRY" ] || return 0
  local dir
  while IFS= read -r dir; do
    [ -n "$dir" ] && { _sb_stop_dir "$dir" || true; }
  done < <(sort -u "$SB_REGISTRY")
  rm -f "$SB_REGISTRY"
}

_sb_exit_handler() {
  local rc=$? c
  trap - EXIT
  set +e
  SB_EXIT_RC=$rc
  for c in "${SB_ON_EXIT[@]}"; do eval "$c"; done
  sb_cleanup
  for c in "${SB_ON_EXIT_LATE[@]}"; do eval "$c"; done
  exit "$rc"
}

# sb_cleanup_on_exit : install EXIT/INT/TERM/HUP traps that run SB_ON_EXIT hooks and then stop
# every instance this shell started; the exit status is preserved (130 after Ctrl-C).
sb_cleanup_on_exit() {
  trap _sb_exit_handler EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}

# sb_sql NAME "stmt..." : run SQL as the admin user over the socket, batch output without headers.
# Without a statement, reads SQL from stdin.
sb_sql() {
  local name=${1:-} cnf; shift || true
  cnf=$(sb_cnf "$name") || return
  if [ $# -gt 0 ]; then
    mariadb --defaults-file="$cnf" -N -B -e "$*"
  else
    mariadb --defaults-file="$cnf" -N -B
  fi
}

# sb_flush NAME : make InnoDB write out every dirty page (so no .ibd has an all-zero page 0 on disk),
# then restore the flushing settings. Also flushes MyISAM/Aria tables.
sb_flush() {
  local name=${1:-} t0 pct lwm cap capmax dirty=-1 dirty0 i
  t0=$(_sb_now)
  read -r pct lwm cap capmax < <(sb_sql "$name" "SELECT @@innodb_max_dirty_pages_pct,
    @@innodb_max_dirty_pages_pct_lwm, @@innodb_io_capacity, @@innodb_io_capacity_max") || return
  # The page cleaner flushes at innodb_io_capacity pages/s (default 200): raise it meanwhile.
  sb_sql "$name" "FLUSH TABLES; SET GLOBAL innodb_io_capacity_max = GREATEST($capmax, 100000);
    SET GLOBAL innodb_io_capacity = GREATEST($cap, 50000);
    SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0.001; SET GLOBAL innodb_max_dirty_pages_pct = 0" || return
  for ((i = 0; i < SB_FLUSH_TIMEOUT * 10; i++)); do
    dirty=$(sb_sql "$name" "SELECT variable_value FROM information_schema.global_status WHERE variable_name='INNODB_BUFFER_POOL_PAGES_DIRTY'") || break
    [ "$i" -eq 0 ] && dirty0=$dirty
    [ "$dirty" -eq 0 ] && break
    sleep 0.1
  done
  sb_sql "$name" "SET GLOBAL innodb_max_dirty_pages_pct = $pct; SET GLOBAL innodb_max_dirty_pages_pct_lwm = $lwm;
    SET GLOBAL innodb_io_capacity = $cap; SET GLOBAL innodb_io_capacity_max = $capmax" || return
  if [ "$dirty" != 0 ]; then
    _sb_err "$name still has $dirty dirty pages after ${SB_FLUSH_TIMEOUT}s"
    return 1
  fi
  _sb_log "flushed $name (${dirty0:-0} dirty pages) in $(_sb_since "$t0") s"
}

# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

# sb_load_sample NAME : a small, deterministic data set covering the storage variants a backup
# tool must handle. Schemas: xs_rowfmt (InnoDB DYNAMIC/COMPACT/REDUNDANT/COMPRESSED), xs_app
# (secondary indexes, BLOB/TEXT incl. off-page, FULLTEXT, partitioned table, view, trigger,
# stored procedure; on MariaDB 11.7+ a VECTOR index), xs_engines (Aria, MyISAM, CSV). About
# 5,000 rows.
sb_load_sample() {
  local name=${1:-} t0; t0=$(_sb_now)
  sb_sql "$name" <<'SQL' || { _sb_err "sb_load_sample failed on $name"; return 1; }
SET SESSION max_recursive_iterations = 100000;
DROP DATABASE IF EXISTS xs_rowfmt;
DROP DATABASE IF EXISTS xs_app;
DROP DATABASE IF EXISTS xs_engines;
CREATE DATABASE xs_rowfmt;
CREATE DATABASE xs_app;
CREATE DATABASE xs_engines;

-- 1. InnoDB row formats -------------------------------------------------------------------------
CREATE TABLE xs_rowfmt.t_dynamic (id INT PRIMARY KEY, a VARCHAR(100), b INT, c TEXT) ENGINE=InnoDB ROW_FORMAT=DYNAMIC;
CREATE TABLE xs_rowfmt.t_compact (id INT PRIMARY KEY, a VARCHAR(100), b INT, c TEXT) ENGINE=InnoDB ROW_FORMAT=COMPACT;
CREATE TABLE xs_rowfmt.t_redundant (id INT PRIMARY KEY, a VARCHAR(100), b INT, c TEXT) ENGINE=InnoDB ROW_FORMAT=REDUNDANT;
CREATE TABLE xs_rowfmt.t_compressed (id INT PRIMARY KEY, a VARCHAR(100), b INT, c TEXT, KEY (b)) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8;
CREATE TABLE xs_rowfmt.t_compressed4 (id INT PRIMARY KEY, a VARCHAR(100), c MEDIUMTEXT) ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=4;
INSERT INTO xs_rowfmt.t_dynamic
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600)
  SELECT n, CONCAT('dyn-', MD5(n)), n * 7 % 1000, REPEAT(SHA1(n), 1 + n % 40) FROM s;
INSERT INTO xs_rowfmt.t_compact
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600)
  SELECT n, CONCAT('cmp-', MD5(n)), n * 11 % 1000, REPEAT(SHA1(n), 1 + n % 40) FROM s;
INSERT INTO xs_rowfmt.t_redundant
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600)
  SELECT n, CONCAT('red-', MD5(n)), n * 13 % 1000, REPEAT(SHA1(n), 1 + n % 40) FROM s;
INSERT INTO xs_rowfmt.t_compressed
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600)
  SELECT n, CONCAT('zip-', MD5(n)), n * 17 % 1000, REPEAT(SHA1(n), 1 + n % 40) FROM s;
INSERT INTO xs_rowfmt.t_compressed4
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 200)
  SELECT n, CONCAT('zip4-', MD5(n)), REPEAT(CONCAT(MD5(n), MD5(n + 1)), 1 + n % 300) FROM s;

-- 2. Application-like schema ------------------------------------------------------------------------
CREATE TABLE xs_app.customers (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  email VARCHAR(120) NOT NULL,
  name VARCHAR(80) CHARACTER SET utf8mb4 NOT NULL,
  country CHAR(2) NOT NULL,
  created DATE NOT NULL,
  balance DECIMAL(12,2) NOT NULL,
  note TEXT NULL,
  avatar MEDIUMBLOB NULL,
  UNIQUE KEY uk_email (email),
  KEY k_country_created (country, created),
  KEY k_name (name(20))
) ENGINE=InnoDB;
INSERT INTO xs_app.customers
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000)
  SELECT n, CONCAT('user', n, '@example.org'), CONCAT('Ünïcødé ', n, ' ', LEFT(MD5(n), 6)),
         ELT(1 + n % 5, 'DE', 'FR', 'US', 'JP', 'BR'), DATE_ADD('2020-01-01', INTERVAL n DAY),
         (n * 37 % 100000) / 100, IF(n % 3 = 0, NULL, REPEAT(CONCAT('note ', n, ' '), 1 + n % 50)),
         -- every 50th row carries a ~80 KB blob (off-page, several BLOB pages)
         IF(n % 50 = 0, REPEAT(UNHEX(SHA2(n, 256)), 2500), UNHEX(MD5(n)))
  FROM s;

CREATE TABLE xs_app.orders (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  status ENUM('new', 'paid', 'shipped', 'cancelled') NOT NULL,
  KEY k_customer (customer_id),
  CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES xs_app.customers (id)
) ENGINE=InnoDB;
CREATE TABLE xs_app.orders_audit (
  order_id INT UNSIGNED NOT NULL PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  amount DECIMAL(10,2) NOT NULL
) ENGINE=InnoDB;
CREATE TRIGGER xs_app.trg_orders_ai AFTER INSERT ON xs_app.orders FOR EACH ROW
  INSERT INTO xs_app.orders_audit VALUES (NEW.id, NEW.customer_id, NEW.amount);
DELIMITER //
CREATE PROCEDURE xs_app.add_orders(IN cnt INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < cnt DO
    INSERT INTO xs_app.orders (customer_id, amount, status)
      VALUES (1 + i * 7 % 1000, (i * 131 % 50000) / 100, ELT(1 + i % 4, 'new', 'paid', 'shipped', 'cancelled'));
    SET i = i + 1;
  END WHILE;
END//
DELIMITER ;
CALL xs_app.add_orders(800);
CREATE VIEW xs_app.v_customer_totals AS
  SELECT c.id, c.email, COUNT(o.id) AS orders, COALESCE(SUM(o.amount), 0) AS total
  FROM xs_app.customers c LEFT JOIN xs_app.orders o ON o.customer_id = c.id GROUP BY c.id, c.email;

CREATE TABLE xs_app.events (
  id INT NOT NULL,
  day DATE NOT NULL,
  payload VARCHAR(200) NOT NULL,
  PRIMARY KEY (id, day),
  KEY k_day (day)
) ENGINE=InnoDB
  PARTITION BY RANGE (YEAR(day)) (
    PARTITION p2021 VALUES LESS THAN (2022),
    PARTITION p2022 VALUES LESS THAN (2023),
    PARTITION p2023 VALUES LESS THAN (2024),
    PARTITION pmax VALUES LESS THAN MAXVALUE);
INSERT INTO xs_app.events
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000)
  SELECT n, DATE_ADD('2021-01-01', INTERVAL n * 2 DAY), CONCAT('event ', n, ' ', SHA1(n)) FROM s;

CREATE TABLE xs_app.articles (
  id INT PRIMARY KEY,
  title VARCHAR(200) NOT NULL,
  body TEXT NOT NULL,
  FULLTEXT KEY ft_body (title, body)
) ENGINE=InnoDB;
INSERT INTO xs_app.articles
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 200)
  SELECT n, CONCAT('Article ', n, ' about ', ELT(1 + n % 4, 'backups', 'redo logs', 'tablespaces', 'recovery')),
         REPEAT(CONCAT('word', n % 17, ' lorem', n % 5, ' ipsum '), 10) FROM s;

-- 3. Other engines --------------------------------------------------------------------------------
CREATE TABLE xs_engines.t_aria (id INT PRIMARY KEY, a VARCHAR(64), b INT, KEY (b)) ENGINE=Aria TRANSACTIONAL=1;
INSERT INTO xs_engines.t_aria
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 300)
  SELECT n, MD5(n), n % 97 FROM s;
CREATE TABLE xs_engines.t_myisam (id INT PRIMARY KEY, a VARCHAR(64), b TEXT, KEY (a)) ENGINE=MyISAM;
INSERT INTO xs_engines.t_myisam
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 300)
  SELECT n, SHA1(n), REPEAT(MD5(n), 1 + n % 10) FROM s;
CREATE TABLE xs_engines.t_csv (id INT NOT NULL, a VARCHAR(64) NOT NULL, d DATE NOT NULL) ENGINE=CSV;
INSERT INTO xs_engines.t_csv
  WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100)
  SELECT n, MD5(n), DATE_ADD('2022-06-01', INTERVAL n DAY) FROM s;
SQL
  # MariaDB 11.7+: a VECTOR index, which InnoDB keeps as a hidden table of its own
  # (xs_app/embeddings#i#01.ibd).
  local v major minor
  v=$(sb_sql "$name" "SELECT SUBSTRING_INDEX(VERSION(), '-', 1)") || return
  IFS=. read -r major minor _ <<< "$v"
  if [ "$major" -gt 11 ] || { [ "$major" -eq 11 ] && [ "$minor" -ge 7 ]; }; then
    sb_sql "$name" "CREATE TABLE xs_app.embeddings (id INT PRIMARY KEY, label VARCHAR(20) NOT NULL,
        v VECTOR(8) NOT NULL, VECTOR INDEX (v)) ENGINE=InnoDB;
      SET SESSION max_recursive_iterations = 100000;
      INSERT INTO xs_app.embeddings
        WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600)
        SELECT n, CONCAT('e', n), VEC_FromText(CONCAT('[', n % 7, ',', n % 11, ',', n % 13, ',', n % 17, ',',
          n % 19, ',', n % 23, ',', n % 29, ',', n % 31, ']')) FROM s" ||
      { _sb_err "sb_load_sample: the VECTOR table failed on $name"; return 1; }
  fi
  _sb_log "loaded sample data into $name in $(_sb_since "$t0") s"
}

# sb_sysbench_args NAME : the sysbench connection options for the instance (TCP user sbtest)
sb_sysbench_args() {
  local port; port=$(sb_port "${1:-}") || return
  printf '%s\n' --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest
}

_sb_sysbench_user() { # NAME : create db sbtest and the TCP user sbtest@127.0.0.1
  sb_sql "$1" "CREATE DATABASE IF NOT EXISTS sbtest;
    CREATE USER IF NOT EXISTS 'sbtest'@'127.0.0.1' IDENTIFIED BY 'sbtest';
    GRANT ALL PRIVILEGES ON sbtest.* TO 'sbtest'@'127.0.0.1';"
}

# sb_sysbench NAME TEST [sysbench options...] COMMAND : run sysbench against the instance, e.g.
#   sb_sysbench src oltp_write_only --tables=4 --table-size=10000 --threads=2 --time=20 run
sb_sysbench() {
  local name=${1:-} test=${2:-}; shift 2 || { _sb_err "usage: sb_sysbench NAME TEST [opts...] COMMAND"; return 2; }
  local -a conn; mapfile -t conn < <(sb_sysbench_args "$name") || return
  _sb_sysbench_user "$name" || return
  sysbench "$test" "${conn[@]}" "$@"
}

# sb_load_sysbench NAME TABLES ROWS : sysbench oltp prepare (db sbtest, tables sbtest1..TABLES)
sb_load_sysbench() {
  local name=${1:-} tables=${2:-} rows=${3:-} t0 log threads
  [ -n "$rows" ] || { _sb_err "usage: sb_load_sysbench NAME TABLES ROWS"; return 2; }
  t0=$(_sb_now)
  log="$(_sb_dir "$name")/run/sysbench-prepare.log"
  threads=$(nproc); [ "$threads" -gt "$tables" ] && threads=$tables
  if ! sb_sysbench "$name" oltp_read_write --tables="$tables" --table-size="$rows" --threads="$threads" prepare > "$log" 2>&1; then
    _sb_err "sysbench prepare failed on $name:"; tail -n 20 "$log" >&2; return 1
  fi
  _sb_log "sysbench prepare ${tables}x${rows} on $name in $(_sb_since "$t0") s"
}

# sb_load_many NAME COUNT : COUNT small InnoDB tables many.t00000.. (5 rows each), one SQL file
sb_load_many() {
  local name=${1:-} count=${2:-} t0 f
  [ -n "$count" ] || { _sb_err "usage: sb_load_many NAME COUNT"; return 2; }
  t0=$(_sb_now)
  f="$(_sb_dir "$name")/run/many.sql"
  awk -v n="$count" 'BEGIN {
    print "DROP DATABASE IF EXISTS many; CREATE DATABASE many; USE many; SET autocommit=0;"
    for (i = 0; i < n; i++) {
      t = sprintf("t%05d", i)
      printf "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL, k INT NOT NULL, KEY (k)) ENGINE=InnoDB;\n", t
      printf "INSERT INTO %s VALUES", t
      for (r = 1; r <= 5; r++) printf "%s(%d,\"%s-%d\",%d)", (r > 1 ? "," : " "), r, t, r, (i * 5 + r) % 13
      print ";"
    }
    print "COMMIT;"
  }' > "$f"
  sb_sql "$name" < "$f" || { _sb_err "sb_load_many failed on $name"; return 1; }
  _sb_log "created $count tables in many on $name in $(_sb_since "$t0") s"
}

# ---------------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------------

# sb_tables NAME : `db<TAB>table` of every base table of every user schema (+ the non-volatile mysql.*)
sb_tables() {
  local name=${1:-} excl="" t
  for t in $SB_VOLATILE_TABLES; do excl+="${excl:+,}'${t#*.}'"; done
  sb_sql "$name" "SELECT table_schema, table_name FROM information_schema.tables
    WHERE table_type = 'BASE TABLE'
      AND table_schema NOT IN ('information_schema', 'performance_schema', 'sys')
      AND NOT (table_schema = 'mysql' AND table_name IN (${excl:-''}))
    ORDER BY table_schema, table_name"
}

_sb_batched() { # NAME SQLPREFIX SQLSUFFIX : run "PREFIX t1,t2,... SUFFIX" over all tables in batches of 200
  local name=$1 pre=$2 suf=$3 list="" n=0 db tb
  local tf; tf=$(mktemp)
  sb_tables "$name" > "$tf" || { rm -f "$tf"; return 1; }
  if [ ! -s "$tf" ]; then rm -f "$tf"; _sb_err "no tables found on $name"; return 1; fi
  while IFS=$'\t' read -r db tb; do
    list+="${list:+,}\`${db//\`/\`\`}\`.\`${tb//\`/\`\`}\`"
    n=$((n + 1))
    if [ "$n" -ge 200 ]; then
      sb_sql "$name" "$pre $list $suf" || { rm -f "$tf"; return 1; }
      list=""; n=0
    fi
  done < "$tf"
  rm -f "$tf"
  if [ -n "$list" ]; then sb_sql "$name" "$pre $list $suf" || return 1; fi
}

# sb_checksums NAME : sorted "db.table checksum" lines (CHECKSUM TABLE ... EXTENDED) for every table
sb_checksums() {
  local name=${1:-} out
  out=$(_sb_batched "$name" "CHECKSUM TABLE" "EXTENDED") || { _sb_err "CHECKSUM TABLE failed on $name"; return 1; }
  printf '%s\n' "$out" | awk -F'\t' 'NF >= 2 { print $1 " " $2 }' | LC_ALL=C sort
}

# sb_wait_rollback NAME : until the server has rolled back, in the background, the transactions
# it recovered at start (a restored backup holds those in flight at its consistent point). CHECK
# TABLE EXTENDED run meanwhile can report a secondary index record whose clustered record "is not
# found": the state half-way through the server's own rollback, not the data's.
sb_wait_rollback() {
  local name=${1:-} log i started done_
  log=$(sb_errlog "$name")
  for i in $(seq 1200); do
    started=$(grep -c "Starting in background the rollback of recovered transactions" "$log" 2> /dev/null || true)
    done_=$(grep -c "Rollback of non-prepared transactions completed" "$log" 2> /dev/null || true)
    [ "${done_:-0}" -ge "${started:-0}" ] && return 0
    sleep 0.05
  done
  _sb_err "$name: the rollback of recovered transactions did not complete within 60 s (see $log)"
  return 1
}

# sb_check_all NAME [MODE] : CHECK TABLE (MODE: EXTENDED (default), MEDIUM, QUICK...) on every table;
# fails, listing them, on any result row other than "status OK".
sb_check_all() {
  local name=${1:-} mode=${2:-EXTENDED} out bad n t0
  t0=$(_sb_now)
  sb_wait_rollback "$name" || return 1
  out=$(_sb_batched "$name" "CHECK TABLE" "$mode") || { _sb_err "CHECK TABLE failed on $name"; return 1; }
  n=$(printf '%s\n' "$out" | awk -F'\t' '$3 == "status" && $4 == "OK"' | wc -l)
  bad=$(printf '%s\n' "$out" | awk -F'\t' 'NF && !($3 == "status" && $4 == "OK")')
  if [ -n "$bad" ]; then
    _sb_err "CHECK TABLE $mode on $name reported problems:"
    printf '%s\n' "$bad" | head -n 40 >&2
    return 1
  fi
  _sb_log "CHECK TABLE $mode on $name: $n tables OK in $(_sb_since "$t0") s"
}

# sb_compare_checksums FILE_A FILE_B : equal checksum lists, else a clear message and the diff
sb_compare_checksums() {
  local a=${1:-} b=${2:-} na nb
  [ -f "$a" ] && [ -f "$b" ] || { _sb_err "sb_compare_checksums: missing file(s): $a $b"; return 2; }
  na=$(wc -l < "$a"); nb=$(wc -l < "$b")
  if [ "$na" -eq 0 ] || [ "$nb" -eq 0 ]; then
    _sb_err "checksum list empty ($a: $na lines, $b: $nb lines)"; return 1
  fi
  if cmp -s "$a" "$b"; then
    echo "checksums: all $na tables identical ($(basename "$a") = $(basename "$b"))"
    return 0
  fi
  echo "CHECKSUM MISMATCH between $a ($na tables) and $b ($nb tables):" >&2
  diff -U0 "$a" "$b" | grep -E '^[-+][^-+]' | head -n 40 >&2 || true
  echo "(lines with '-' only in $(basename "$a"), '+' only in $(basename "$b"))" >&2
  return 1
}
