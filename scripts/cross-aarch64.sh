#!/usr/bin/env bash
# AArch64 cross build and its unit tests under qemu-user, on a Debian 12 x86-64 machine (CI's
# "arm64" pass of scripts/run-tests.sh; also by hand):
#   scripts/cross-aarch64.sh [--clean] [-- CTEST_ARGS...]
#
# 1. Installs, only what is missing: the cross compiler (g++-aarch64-linux-gnu), qemu-user-static,
#    and the arm64 multiarch packages of every library xbak and xbcloud link (dpkg
#    --add-architecture arm64): zlib, zstd, lz4, openssl, libcurl, libev, Boost.Program_options,
#    the page compression codecs (lzma, bzip2, lzo, snappy), gtest/gmock, and libmariadb3 (the
#    runtime). libmariadb-dev and ISA-L (libisal-dev, libisal2) are not "Multi-Arch: same", so their
#    arm64 packages cannot be installed next to the amd64 ones the native build needs (apt would
#    remove those): their .debs are downloaded and unpacked into $build/sysroot-mariadb and
#    $build/sysroot-isal instead, and pkg-config is pointed at them (XBAK_AARCH64_PKG_CONFIG, read
#    by the toolchain file).
#    XBAK_CROSS_MINIMAL=1 installs only zlib/zstd/lz4/gtest (ISA-L is unpacked in every mode: the
#    util layer needs it) and builds only the unit tests of the layers they serve
#    (XBAK_UNIT_ONLY). The install is simulated first and refused if apt would remove any package.
# 2. Configures build-aarch64/ with cmake/aarch64-linux-gnu.cmake (-O2 as the normal pass's
#    RelWithDebInfo, without its debug information, which costs about a quarter of the compile
#    time (src/restore/restore.cc: 12.7-13.9 s with -g, 9.6-10.5 s without) and is not wanted in
#    the binaries handed out; -Werror) and builds every layer, xbak, xbcloud
#    and the unit tests.
# 3. Checks that the binaries are AArch64 and linked with ISA-L, whose CRC code for AArch64
#    (PMULL and CRC32 instructions, chosen at run time; qemu's default CPU "max" has both) the
#    CRC unit tests then check against the definition.
# 4. Runs the unit tests with ctest under qemu-aarch64-static, on the arm64 multiarch runtime
#    (libc6:arm64, libstdc++6:arm64: /lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu). Not with
#    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu: the cross toolchain's glibc there (libc6-arm64-cross
#    2.36-8cross1) hangs in the first pthread_create under Debian 12's qemu 7.2. The tests that need a running MariaDB server
#    (LogCopierRealServer.*) stay on the native architecture: they are excluded here. Tests that
#    call a host tool (zstd, lz4, mbstream) run it natively, through qemu's execve.
#    qemu timings mean nothing: no benchmark runs here.
# 5. tests/cross/t_cross_arch.sh: backups taken by the x86-64 xbak (build/, built here if absent)
#    are verified and prepared by both builds, byte-identical results; xbcloud put/get against
#    MinIO crossed between the two. The AArch64 xbak and xbcloud are left in $build for CI to keep.
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
minimal=${XBAK_CROSS_MINIMAL:-0}
if [ "$minimal" != 1 ]; then
  ARM_PKGS+=(libssl-dev libcurl4-openssl-dev libev-dev libboost-program-options-dev libmariadb3
    liblzma-dev libbz2-dev liblzo2-dev libsnappy-dev)
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
unit_only=OFF
if [ "$minimal" = 1 ]; then unit_only=ON; fi
# unpack_sysroot NAME VERSION PKG...: the arm64 packages PKG (at VERSION) unpacked into
# $build/sysroot-NAME, where apt cannot install them (not "Multi-Arch: same": the arm64 package would
# replace the amd64 one the native build needs); their .pc files' prefix points into the unpacked
# tree, and the directory is added to XBAK_AARCH64_PKG_CONFIG (read by the toolchain file). The
# binaries find such a library under qemu through their build RPATH (CMake adds the directory).
export XBAK_AARCH64_PKG_CONFIG=""
unpack_sysroot() {
  local name=$1 ver=$2 root=$build/sysroot-$1 p d pc
  shift 2
  if [ "$(cat "$root/.version" 2> /dev/null)" != "$ver" ]; then
    say "$* (arm64) $ver unpacked into $root"
    rm -rf "$root" "$build/debs-$name"
    mkdir -p "$root" "$build/debs-$name"
    chmod a+rwx "$build/debs-$name" # apt downloads as its _apt user
    (cd "$build/debs-$name" && for p in "$@"; do apt-get download -q "$p:arm64=$ver" > /dev/null || exit 1; done) ||
      { echo "cross-aarch64: could not download $* (arm64) $ver" >&2; exit 1; }
    for d in "$build/debs-$name"/*.deb; do dpkg-deb -x "$d" "$root"; done
    for pc in "$root"/usr/lib/aarch64-linux-gnu/pkgconfig/*.pc; do
      sed -i "s|^prefix=.*|prefix=$(cd "$root" && pwd)/usr|" "$pc"
    done
    echo "$ver" > "$root/.version"
  fi
  XBAK_AARCH64_PKG_CONFIG="$(cd "$root" && pwd)/usr/lib/aarch64-linux-gnu/pkgconfig${XBAK_AARCH64_PKG_CONFIG:+:$XBAK_AARCH64_PKG_CONFIG}"
}
# ISA-L (util's CRCs), of the version the native build has.
isal_ver=$(dpkg-query -W -f='${Version}' libisal-dev 2> /dev/null) ||
  { echo "cross-aarch64: needs libisal-dev on this machine (scripts/install-deps.sh installs it)" >&2; exit 1; }
unpack_sysroot isal "$isal_ver" libisal-dev libisal2
if [ "$unit_only" = OFF ]; then
  # libmariadb-dev, of the version of the installed libmariadb3:arm64 (with libmariadb3's, for
  # the link).
  mver=$(dpkg-query -W -f='${Version}' libmariadb3:arm64)
  unpack_sysroot mariadb "$mver" libmariadb-dev libmariadb3
fi
say "configure ($build)"
t_conf=$SECONDS
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
  -DXBAK_UNIT_ONLY=$unit_only -DXBAK_BENCHMARKS=OFF -DXBAK_UNITY="${XBAK_UNITY:-ON}" > "$build/configure.log" 2>&1 ||
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
# The CRCs are ISA-L's (libisal, arm64 package): its AArch64 code is chosen at run time from
# getauxval(AT_HWCAP) (PMULL, CRC32 under qemu's default CPU); the unit tests check the values.
aarch64-linux-gnu-readelf -d "$build/tests/unit_util" | grep -q 'libisal' ||
  { echo "cross-aarch64: $build/tests/unit_util is not linked with libisal" >&2; exit 1; }

say "unit tests under qemu-aarch64-static"
t_test=$SECONDS
status=0
ctest --test-dir "$build" --output-on-failure --no-tests=error -j"$jobs" -L '^unit$' \
  -E '^LogCopierRealServer\.' "${ctest_extra[@]}" || status=1
t_test=$((SECONDS - t_test))

t_cross=0
if [ "$unit_only" = OFF ] && [ "${XBAK_CROSS_SKIP_COMPARE:-0}" != 1 ]; then
  for b in xbak xbcloud; do
    file -b "$build/$b" | grep -q 'ARM aarch64' || { echo "cross-aarch64: $build/$b is not AArch64" >&2; exit 1; }
  done
  native=${XBAK_NATIVE_BUILD:-build}
  if [ ! -x "$native/xbak" ] || [ ! -x "$native/xbcloud" ]; then
    say "x86-64 build for the comparison ($native)"
    mkdir -p "$native"
    cmake -S "$repo" -B "$native" -G Ninja > "$native/configure.log" 2>&1 ||
      { cat "$native/configure.log" >&2; exit 1; }
    cmake --build "$native" -j"$jobs" --target xbak xbcloud
  fi
  say "x86-64 against AArch64: verify, prepare, xbcloud (tests/cross/t_cross_arch.sh)"
  t_cross=$SECONDS
  XBAK="$repo/$native/xbak" XBCLOUD="$repo/$native/xbcloud" XBAK_SRC="$repo" XBAK_BUILD="$repo/$native" \
    XBAK_ARM="$repo/$build/xbak" XBCLOUD_ARM="$repo/$build/xbcloud" bash tests/cross/t_cross_arch.sh || status=1
  t_cross=$((SECONDS - t_cross))
fi
if [ "$unit_only" = OFF ]; then
  # What an ARM user runs, kept where CI collects artefacts: the binaries and their checksums.
  art=$repo/artifacts/aarch64
  mkdir -p "$art"
  cp "$build/xbak" "$build/xbcloud" "$art/"
  (cd "$art" && sha256sum xbak xbcloud > SHA256SUMS)
  echo "cross-aarch64: AArch64 binaries in $art: $(file -b "$art/xbak" | cut -d, -f1-2)"
fi

echo
echo "cross-aarch64: ${#bins[@]} unit test binaries built in ${t_build} s (configure + build), tests took ${t_test} s under qemu, the comparison ${t_cross} s, $((SECONDS - t0)) s in all"
if [ $status = 0 ]; then echo "cross-aarch64: ok"; else echo "cross-aarch64: FAILED"; fi
exit $status
