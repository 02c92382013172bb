#!/usr/bin/env bash
# AArch64 cross build and its unit tests under qemu-user, on a Debian 12 x86-64 machine (CI's
# "arm64" pass of scripts/run-tests.sh; also by hand):
#   scripts/cross-aarch64.sh [--clean] [-- CTEST_ARGS...]
#
# 1. Installs, only what is missing: the cross compiler (g++-aarch64-linux-gnu), qemu-user-static,
#    and the arm64 multiarch -dev packages of the libraries the unit-tested layers link
#    (dpkg --add-architecture arm64). Boost is not installed: the xbak/xbcloud binaries are not
#    built (XBAK_UNIT_ONLY=ON), only every layer's library and its unit test binary:
#      unit_util unit_innodb unit_stream unit_sink   zlib, zstd, lz4, gtest/gmock (+ libstdc++6 to run)
#      unit_storage unit_cloud                       + openssl, libcurl, libev
#    Not unit_backup (nor the mysql layer): libmariadb-dev is not "Multi-Arch: same", so its arm64
#    package cannot be installed next to the amd64 one the native build needs (apt would remove
#    that). A layer whose -dev package is absent for arm64 is left out by CMake (XBAK_UNIT_ONLY);
#    XBAK_CROSS_MINIMAL=1 installs only the first row's packages and builds only those binaries.
#    The install is simulated first and refused if apt would remove any package.
# 2. Configures build-aarch64/ with cmake/aarch64-linux-gnu.cmake (RelWithDebInfo, the normal
#    pass's build type; -Werror) and builds.
# 3. Checks that the binaries are AArch64 and that the CRC-32C hardware path (ARMv8 CRC32
#    instructions, chosen at run time through getauxval(AT_HWCAP) & HWCAP_CRC32) is compiled in
#    and taken: qemu's default CPU ("max") has the CRC32 extension.
# 4. Runs the unit tests with ctest under qemu-aarch64-static, on the arm64 multiarch runtime
#    (libc6:arm64, libstdc++6:arm64: /lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu). Not with
#    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu: the cross toolchain's glibc there (libc6-arm64-cross
#    2.36-8cross1) hangs in the first pthread_create under Debian 12's qemu 7.2. The tests that need a running MariaDB server
#    (LogCopierRealServer.*) stay on the native architecture: they are excluded here. Tests that
#    call a host tool (zstd, lz4, mbstream) run it natively, through qemu's execve.
#    qemu timings mean nothing: no benchmark runs here.
#
# Environment: XBAK_SKIP_DEPS=1 (install nothing), XBAK_CROSS_MINIMAL=1 (see above),
# XBAK_CROSS_BUILD (build directory, default build-aarch64), XBAK_JOBS (default nproc).
# Exit status: non-zero if the build or any test fails. The last lines are a summary.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=${XBAK_CROSS_BUILD:-build-aarch64}
jobs=${XBAK_JOBS:-$(nproc)}
clean=0
ctest_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --clean) clean=1 ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) echo "cross-aarch64: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

t0=$SECONDS
say() { printf '\n===== [aarch64] %s\n' "$*"; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

HOST_PKGS=(g++-aarch64-linux-gnu qemu-user-static cmake ninja-build pkg-config file)
ARM_PKGS=(libstdc++6 zlib1g-dev libzstd-dev liblz4-dev libgtest-dev libgmock-dev)
if [ "${XBAK_CROSS_MINIMAL:-0}" != 1 ]; then
  ARM_PKGS+=(libssl-dev libcurl4-openssl-dev libev-dev)
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q "install ok installed"; }
if [ "${XBAK_SKIP_DEPS:-0}" != 1 ]; then
  missing=()
  for p in "${HOST_PKGS[@]}"; do installed "$p" || missing+=("$p"); done
  for p in "${ARM_PKGS[@]}"; do installed "$p:arm64" || missing+=("$p:arm64"); done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "cross-aarch64: all $((${#HOST_PKGS[@]} + ${#ARM_PKGS[@]})) packages present"
  else
    say "installing ${missing[*]}"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then $SUDO dpkg --add-architecture arm64; fi
    $SUDO apt-get update -qq
    removed=$(apt-get install -s --no-install-recommends "${missing[@]}" 2> /dev/null | awk '/^Remv/ {print $2}' | tr '\n' ' ')
    if [ -n "$removed" ]; then
      echo "cross-aarch64: installing ${missing[*]} would remove: $removed; refusing" >&2
      exit 1
    fi
    # The arm64 libraries must be the same version as their amd64 twins (Multi-Arch: same), so
    # apt may upgrade a few amd64 packages to the current stable point release.
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" > /dev/null
  fi
fi

if [ "$clean" = 1 ]; then rm -rf "$build"; fi
mkdir -p "$build"
say "configure ($build)"
t_conf=$SECONDS
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXBAK_UNIT_ONLY=ON -DXBAK_BENCHMARKS=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; echo "cross-aarch64: cmake configure failed" >&2; exit 1; }
say "build (-j$jobs)"
cmake --build "$build" -j"$jobs"
t_build=$((SECONDS - t_conf))

mapfile -t bins < <(find "$build/tests" -maxdepth 1 -type f -name 'unit_*' -perm -u+x | sort)
[ ${#bins[@]} -gt 0 ] || { echo "cross-aarch64: no unit test binary was built" >&2; exit 1; }
say "checks"
for b in "${bins[@]}"; do
  file -b "$b" | grep -q 'ARM aarch64' || { echo "cross-aarch64: $b is not an AArch64 binary" >&2; exit 1; }
done
echo "unit test binaries (AArch64): $(for b in "${bins[@]}"; do basename "$b"; done | tr '\n' ' ')"
# The CRC32C instructions must be in the library (crc32cx/crc32cb, from the target("+crc") function).
crc_obj=$(find "$build" -name 'crc32c.cc.o' | head -n 1)
ncrc=$(aarch64-linux-gnu-objdump -d "$crc_obj" | grep -cE '\bcrc32c[bhwx]\b' || true)
[ "$ncrc" -gt 0 ] || { echo "cross-aarch64: no CRC32C instruction in $crc_obj" >&2; exit 1; }
echo "CRC32C instructions in crc32c.cc.o: $ncrc"
# ...and taken at run time (qemu's default CPU has FEAT_CRC32): the test prints which path it tested.
export XBAK_EXPECT_CRC32C_HW=1
util_bin=$build/tests/unit_util
if [ -x "$util_bin" ]; then
  qemu-aarch64-static "$util_bin" --gtest_filter='Crc32c.*' 2>&1 | grep -E 'crc32c path|PASSED|FAILED' || true
fi

say "unit tests under qemu-aarch64-static"
t_test=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure --no-tests=error -j"$jobs" -L '^unit$' \
  -E '^LogCopierRealServer\.' "${ctest_extra[@]}" || status=1
t_test=$((SECONDS - t_test))

echo
echo "cross-aarch64: ${#bins[@]} unit test binaries built in ${t_build} s (configure + build), tests took ${t_test} s under qemu, $((SECONDS - t0)) s in all"
if [ $status = 0 ]; then echo "cross-aarch64: ok"; else echo "cross-aarch64: FAILED"; fi
exit $status
