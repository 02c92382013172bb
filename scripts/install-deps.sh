#!/usr/bin/env bash
# Installs everything xbak needs to build, test and benchmark on a fresh Debian 12 machine.
# Idempotent: when every package is already present it does nothing and prints one line.
# Never starts a MariaDB service: the tests start their own private mariadbd.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PKGS=(
  # build
  build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev
  # libraries
  libcurl4-openssl-dev libssl-dev libev-dev libzstd-dev liblz4-dev zlib1g-dev libisal-dev
  libboost-program-options-dev libgtest-dev libgmock-dev libbenchmark-dev libmariadb-dev
  liblzma-dev libbz2-dev liblzo2-dev libsnappy-dev nlohmann-json3-dev
  # real parts for tests and benchmarks
  mariadb-server mariadb-client mariadb-backup sysbench galera-4
  mariadb-plugin-provider-lz4 mariadb-plugin-provider-lzma mariadb-plugin-provider-bzip2
  mariadb-plugin-provider-lzo mariadb-plugin-provider-snappy
  # MariaDB's own test suite (mtr, suite/mariabackup): tests/peer runs it with xbak in
  # mariabackup's place (a part in every CI run, the whole with scripts/run-tests.sh --peer)
  mariadb-test
  # test tooling (zstd, lz4: the command-line tools, for the --compress interop tests;
  # python3-cryptography: compare_pages.py --keys decrypts pages; strace: t_restore kills a
  # restore at chosen system calls)
  python3 python3-matplotlib python3-cryptography procps psmisc bc time zstd lz4 strace
  # scripts/server-root.sh: the Debian roots of the other servers the tests run (MariaDB 11.8)
  debootstrap
  # object-storage tests and benchmarks: an independent S3 client and the rivals of xbcloud
  python3-boto3 awscli rclone
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
# Keep the package's maintainer scripts from starting a system-wide mariadb service:
# our tests run their own private servers.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT

$SUDO apt-get update -qq
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
