#!/usr/bin/env bash
# Makes, once, a Debian root holding another server than the host's (MariaDB 11.8 from Debian 13,
# MySQL 9.7 from Debian's unstable suite),
# caches it in $XBAK_CACHE/roots/SERVER (default ~/.cache/xbak), and prints on stdout the directory
# of wrappers that run that root's programs: put it first in PATH and `mariadbd`,
# `mariadb-install-db`, `mariadb-backup`, `mbstream`, `mariadb` ... are the root's.
#
#   scripts/server-root.sh mariadb-11.8      # prints e.g. /root/.cache/xbak/roots/mariadb-11.8/bin
#   scripts/server-root.sh mysql-9.7         # `mysqld`, `mysql`, `mysqladmin` ... of MySQL 9.7
#   scripts/server-root.sh --list            # the servers it knows
#
# The root is made with debootstrap from the machine's own Debian package source (the first
# archive its apt sources name; no host is written here), about 2 minutes the first time. The
# root's mysql user gets the host's uid and gid, so that a datadir chown'ed outside is the
# server's inside.
#
# A wrapper runs its program chrooted into the root, in a private mount namespace (unshare -m:
# nothing is left mounted when it exits) where /proc, /dev, /tmp, $XBAK_WORK, the caller's working
# directory and every directory in XBAK_ROOT_BINDS (colon-separated) are bound at the same path
# inside as outside: the server reports the datadir at the path the host's tools read, and sockets
# work from both sides. Needs root (chroot, mount).
set -euo pipefail

CACHE=${XBAK_CACHE:-$HOME/.cache/xbak}

# The servers: SUITE, the packages debootstrap installs, the ones installed afterwards (debootstrap
# does not resolve virtual packages, which galera-4 needs), and the programs wrapped.
server_spec() { # SERVER -> sets suite, pkgs, later_pkgs, progs
  case "$1" in
    mariadb-11.8)
      suite=trixie
      pkgs=mariadb-server,mariadb-client,mariadb-backup
      # galera-4 for t_galera; the page compression providers for t_layouts' pcomp_* cells.
      later_pkgs=(galera-4 mariadb-plugin-provider-lz4 mariadb-plugin-provider-lzma
        mariadb-plugin-provider-bzip2 mariadb-plugin-provider-lzo mariadb-plugin-provider-snappy)
      progs=(mariadbd mariadb-install-db mariadb-upgrade mariadb-backup mariabackup mbstream mariadb
        mariadb-admin mariadb-dump mariadb-binlog mariadb-check my_print_defaults) ;;
    mysql-9.7)
      # Debian's unstable suite carries MySQL 9.7 LTS (mysql-server 9.7.x); no later packages.
      suite=sid
      pkgs=mysql-server,mysql-client
      later_pkgs=()
      progs=(mysqld mysql mysqladmin mysqldump mysqlbinlog mysqlcheck my_print_defaults) ;;
    *) return 1 ;;
  esac
}

die() { echo "server-root: $*" >&2; exit 1; }

if [ "${1:-}" = --list ]; then printf '%s\n' mariadb-11.8 mysql-9.7; exit 0; fi
server=${1:-}
[ -n "$server" ] || die "usage: server-root.sh SERVER (one of: $("$0" --list | tr '\n' ' '))"
server_spec "$server" || die "unknown server '$server' (known: $("$0" --list | tr '\n' ' '))"
[ "$(id -u)" -eq 0 ] || die "a server root needs root (debootstrap, chroot, mount); run as root or with sudo"

top=$CACHE/roots/$server
root=$top/root
bin=$top/bin

# The machine's own Debian archive: the first URIs:/deb line of its apt sources that is not the
# security archive and not commented out.
debian_mirror() {
  local f u
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    u=$(awk '/^[[:space:]]*#/ { next } tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" |
      grep -v -- '-security' | head -n 1) || true
    [ -n "$u" ] && { echo "$u"; return 0; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" |
      grep -v -- '-security' | head -n 1) || true
    [ -n "$u" ] && { echo "$u"; return 0; }
  done
  return 1
}

in_root() { # DIR CMD... : run CMD chrooted in DIR with /proc mounted privately
  local dir=$1; shift
  unshare -m --propagation private chroot "$dir" /bin/sh -c \
    'mount -t proc proc /proc && exec env PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"' \
    sh "$@"
}

install_later() { # DIR : the packages debootstrap could not install, those missing in DIR
  local dir=$1 p missing=()
  for p in "${later_pkgs[@]}"; do
    chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "server-root: installing ${missing[*]} in the $server root" >&2
  { in_root "$dir" apt-get update -q && in_root "$dir" apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
    > "$top/apt.log" 2>&1 || { tail -n 20 "$top/apt.log" >&2; die "apt-get install ${missing[*]} in the root failed"; }
  in_root "$dir" apt-get clean
  chroot "$dir" dpkg-query -W -f='${Package} ${Version}\n' > "$top/packages.txt"
}

make_root() {
  local mirror t0=$SECONDS host_uid host_gid old_uid old_gid
  command -v debootstrap > /dev/null || die "debootstrap is missing (apt-get install debootstrap)"
  mirror=$(debian_mirror) || die "no Debian archive found in /etc/apt/sources.list{,.d/}"
  echo "server-root: making the $server root ($suite: $pkgs ${later_pkgs[*]}) in $root, once" >&2
  rm -rf "$root.tmp"
  mkdir -p "$top"
  debootstrap --variant=minbase --include="$pkgs" "$suite" "$root.tmp" "$mirror" > "$top/debootstrap.log" 2>&1 ||
    { tail -n 20 "$top/debootstrap.log" >&2; die "debootstrap $suite failed (log: $top/debootstrap.log)"; }
  # No service is ever started by a package's maintainer scripts inside the root.
  printf '#!/bin/sh\nexit 101\n' > "$root.tmp/usr/sbin/policy-rc.d"
  chmod 755 "$root.tmp/usr/sbin/policy-rc.d"
  # mariadb-install-db looks up the host name.
  cp /etc/hosts "$root.tmp/etc/hosts"
  install_later "$root.tmp"
  # The root's mysql user with the host's ids (renumbering what it owns).
  if host_uid=$(id -u mysql 2> /dev/null) && host_gid=$(id -g mysql 2> /dev/null); then
    old_uid=$(chroot "$root.tmp" id -u mysql)
    old_gid=$(chroot "$root.tmp" id -g mysql)
    if [ "$old_uid:$old_gid" != "$host_uid:$host_gid" ]; then
      chroot "$root.tmp" groupmod -o -g "$host_gid" mysql
      chroot "$root.tmp" usermod -o -u "$host_uid" -g "$host_gid" mysql
      find "$root.tmp" -xdev \( -uid "$old_uid" -o -gid "$old_gid" \) -exec chown -h mysql:mysql {} + 2> /dev/null ||
        find "$root.tmp" -xdev \( -uid "$old_uid" -o -gid "$old_gid" \) -print0 |
        xargs -0 -r chown -h "$host_uid:$host_gid"
    fi
  fi
  chroot "$root.tmp" dpkg-query -W -f='${Package} ${Version}\n' > "$top/packages.txt"
  rm -rf "$root"
  mv "$root.tmp" "$root"
  echo "server-root: $server root ready in $((SECONDS - t0)) s ($(grep -E '^mariadb-server |^mysql-server ' "$top/packages.txt"))" >&2
}

# In place, each file renamed over the old one: tests running meanwhile may be calling them.
make_wrappers() {
  local p
  mkdir -p "$bin"
  cat > "$bin/run-in-root.tmp" << EOF
#!/usr/bin/env bash
# Written by scripts/server-root.sh: runs the program of this name from $root, chrooted in a
# private mount namespace where the host's /proc, /dev, /tmp, \$XBAK_WORK, the working directory
# and \$XBAK_ROOT_BINDS are bound at the same paths.
root=$root
EOF
  cat >> "$bin/run-in-root.tmp" << 'EOF'
prog=$(basename "$0")
binds=/proc:/dev:/tmp
for d in "${XBAK_WORK:-}" "$PWD" ${XBAK_ROOT_BINDS//:/ }; do
  [ -n "$d" ] && [ -d "$d" ] && [ "$d" != / ] && binds+=":$(cd "$d" && pwd -P)"
done
exec unshare -m --propagation private /bin/bash -c '
  root=$1 prog=$2 binds=$3; shift 3
  IFS=: read -r -a dirs <<< "$binds"
  for d in "${dirs[@]}"; do
    case "$root/" in "$d/"*) continue ;; esac # never bind a directory that holds the root
    mkdir -p "$root$d" && mount --bind "$d" "$root$d" || { echo "run-in-root: cannot bind $d" >&2; exit 1; }
  done
  exec chroot "$root" /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "cd \"\$0\" 2> /dev/null; exec \"\$@\"" "$PWD" "$prog" "$@"
' run-in-root "$root" "$prog" "$binds" "$@"
EOF
  chmod 755 "$bin/run-in-root.tmp"
  mv -f "$bin/run-in-root.tmp" "$bin/run-in-root"
  for p in "${progs[@]}"; do
    if [ -x "$root/usr/bin/$p" ] || [ -x "$root/usr/sbin/$p" ]; then ln -sfn run-in-root "$bin/$p"; fi
  done
}

# One maker at a time (tests started together all ask for the root); the others wait for it.
mkdir -p "$top"
exec 9> "$top/.lock"
flock 9
if [ ! -x "$root/usr/sbin/mariadbd" ] && [ ! -x "$root/usr/sbin/mysqld" ]; then make_root; else install_later "$root"; fi
# The wrappers are cheap: written anew when this script is newer than them.
if [ ! -x "$bin/run-in-root" ] || [ "$0" -nt "$bin/run-in-root" ]; then make_wrappers; fi
echo "$bin"
