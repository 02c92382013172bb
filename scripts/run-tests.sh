#!/usr/bin/env bash
# The project's one test command (fresh Debian 12 machine or a developer checkout):
# installs the dependencies, configures, builds and runs every test.
#
#   scripts/run-tests.sh            all tests (labels unit + integration), build dir ./build
#   scripts/run-tests.sh --unit     only the unit tests (label unit)
#   scripts/run-tests.sh --asan     build with -DXBAK_SANITIZE=address,undefined in ./build-asan
#   scripts/run-tests.sh ... -- ARGS   extra ctest arguments, e.g. -- -R reference
#
# Environment: XBAK_BUILD_DIR (build dir, relative to the repo or absolute), XBAK_SKIP_DEPS=1
# (skip scripts/install-deps.sh), XBAK_PORT_RANGE (ports for the integration tests' servers).
# Exit status: non-zero if anything fails. The last lines are ctest's summary.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

unit_only=0
asan=0
ctest_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --unit) unit_only=1 ;;
    --asan) asan=1 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) echo "run-tests: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

banner() { printf '\n===== %s\n' "$*"; }
t_start=$SECONDS

if [ "${XBAK_SKIP_DEPS:-0}" != 1 ]; then
  banner "dependencies"
  scripts/install-deps.sh
fi

if [ "$asan" = 1 ]; then
  build=${XBAK_BUILD_DIR:-build-asan}
  cmake_args=(-DXBAK_SANITIZE=address,undefined)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
  build=${XBAK_BUILD_DIR:-build}
  cmake_args=()
fi

banner "configure ($build)"
mkdir -p "$build"
cmake -S "$repo" -B "$build" -G Ninja "${cmake_args[@]}" > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; echo "run-tests: cmake configure failed" >&2; exit 1; }
grep -E '^-- (Build files|Configuring done)' "$build/configure.log" || true

banner "build (-j$(nproc))"
cmake --build "$build" -j"$(nproc)"

banner "test ($([ "$unit_only" = 1 ] && echo "label unit" || echo "all labels"))"
ctest_args=(--test-dir "$build" --output-on-failure --no-tests=error -j"$(nproc)")
[ "$unit_only" = 1 ] && ctest_args+=(-L '^unit$')
echo "(configure + build took $((SECONDS - t_start)) s)"
exec ctest "${ctest_args[@]}" "${ctest_extra[@]}"
