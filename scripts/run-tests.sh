#!/usr/bin/env bash
# The project's one test command (fresh Debian 12 machine or a developer checkout):
# installs the dependencies, configures, builds and runs every test, four times over:
#   1. a normal build (./build): unit + integration tests against real servers;
#   2. ASan + UBSan (./build-asan): the unit tests and the integration tests labelled asan (one
#      per engine, end to end: tests/CMakeLists.txt lists them; --asan-full runs them all);
#   3. TSan (./build-tsan): the unit tests (they drive every threaded part directly);
#   4. AArch64 (./build-aarch64): cross-compiled, the unit tests under qemu-user
#      (scripts/cross-aarch64.sh; about 5 minutes from a clean build directory on 2 cores);
#   5. fuzz (./build-fuzz): every libFuzzer target (clang, ASan+UBSan) for XBAK_FUZZ_SECONDS
#      (default 7) each, from its seed corpus (scripts/run-fuzz.sh); a crash fails the pass.
#
#   scripts/run-tests.sh            all five passes (what CI runs)
#   scripts/run-tests.sh --quick    pass 1 only
#   scripts/run-tests.sh --unit     pass 1, unit tests only
#   scripts/run-tests.sh --asan     pass 2 only;  --tsan  pass 3 only;  --arm64  pass 4 only;
#   scripts/run-tests.sh --asan-full  opt-in, not in CI: pass 2 with every integration test
#                                   (about 25 minutes on 2 cores)
#                                   --fuzz  pass 5 only
#   scripts/run-tests.sh --soak     opt-in, not in CI: the normal build, then tests/soak/t_soak.sh
#                                   (XBAK_SOAK_BACKUPS hot backups in a row under writes and DDL
#                                   through a throttled consumer, each prepared, restored, checked;
#                                   default 50, about a minute each), and t_prepare_under_load with
#                                   7 chains (CI's normal pass: 4)
#   scripts/run-tests.sh --kills    opt-in, not in CI: the normal build, then t_restore with a
#                                   one-pass restore killed at 50 random points
#                                   (XBAK_RESTORE_KILLS) and at 100 chosen page writes
#                                   (XBAK_RESTORE_SWEEP), up to 50 writes to small tables past their
#                                   copy, renames, truncates and syncs, each run again and
#                                   compared (about 12 minutes)
#   scripts/run-tests.sh --server=mariadb-11.8
#                                   opt-in, not in CI: the normal build, then every integration
#                                   test against that server (XBAK_SERVER, run from a Debian root
#                                   that scripts/server-root.sh makes once; docs/servers.md), with
#                                   every cell of the layout matrix. CI's normal pass runs the
#                                   tests labelled mariadb-11.8 (a few cells) on every change.
#   scripts/run-tests.sh --peer     opt-in, not in CI: the normal build, then MariaDB's own test suite
#                                   for mariabackup (Debian's mariadb-test, installed if missing) with
#                                   xbak in mariabackup's place, then with the real mariabackup as the
#                                   control (tests/peer/run-mariabackup-suite.sh; about 12 minutes on 2
#                                   cores); fails on any failure tests/peer/expected-failures.txt does
#                                   not explain (docs/mariabackup.md)
#   scripts/run-tests.sh ... -- ARGS   extra ctest arguments, e.g. -- -R reference
#
# Environment: XBAK_SKIP_DEPS=1 (skip scripts/install-deps.sh), XBAK_PORT_RANGE (ports for the
# integration tests' servers). Exit status: non-zero if anything fails. The last lines name each
# failed test with the end of its output, then one line per pass.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

passes=(normal asan tsan arm64 fuzz)
unit_only=0
other_server=""
asan_full=0
ctest_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) passes=(normal) ;;
    --unit) passes=(normal); unit_only=1 ;;
    --asan) passes=(asan) ;;
    --asan-full) passes=(asan); asan_full=1 ;;
    --tsan) passes=(tsan) ;;
    --arm64) passes=(arm64) ;;
    --fuzz) passes=(fuzz) ;;
    --soak) passes=(soak) ;;
    --kills) passes=(kills) ;;
    --server=*) passes=(server); other_server=${1#--server=} ;;
    --peer) passes=(peer) ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) echo "run-tests: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

banner() { printf '\n===== %s\n' "$*"; }
# The opt-in long modes: the normal build (./build), then one script run against it.
build_normal() {
  mkdir -p build
  cmake -S "$repo" -B build -G Ninja > build/configure.log 2>&1 ||
    { cat build/configure.log >&2; echo "run-tests: cmake configure failed" >&2; return 1; }
  cmake --build build -j"$(nproc)" || { echo "run-tests: build failed (build)" >&2; return 1; }
}
run_with_build() { # SCRIPT : a test script against ./build's binaries
  XBAK="$repo/build/xbak" XBCLOUD="$repo/build/xbcloud" XBAK_SRC="$repo" XBAK_BUILD="$repo/build" bash "$1"
}
# The sanitizer builds: -O1 (what ASan and TSan recommend) and line tables only (-g1: enough for
# their stack traces), no microbenchmarks. With RelWithDebInfo's -O2 -g the ASan build took 12 of
# CI's minutes on 2 cores; this way about 7.5, and as a unity build 4.4.
# Every pass builds as a unity build (XBAK_UNITY in CMakeLists.txt: 8 sources to a translation
# unit, about 40% less compile time); a developer's default build compiles each file alone.
sanitizer_flags=(-DXBAK_UNITY=ON -DXBAK_BENCHMARKS=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
t_start=$SECONDS

if [ "${XBAK_SKIP_DEPS:-0}" != 1 ]; then
  banner "dependencies"
  scripts/install-deps.sh
fi
if [ "$unit_only" != 1 ] && [ "${passes[*]}" != arm64 ] && [ "${passes[*]}" != fuzz ] && [ "${passes[*]}" != peer ]; then
  # MinIO and toxiproxy for the xbcloud tests: built once (about 4 minutes), then cached.
  banner "object-storage test servers (MinIO, toxiproxy)"
  scripts/build-go-tools.sh
  # MariaDB 11.8 in a Debian 13 root for the tests labelled mariadb-11.8 and t_server_versions,
  # MySQL 9.7 in a Debian unstable root for t_mysql: made once (about 2 minutes and 1), then cached.
  banner "server roots (MariaDB 11.8, MySQL 9.7)"
  scripts/server-root.sh "${other_server:-mariadb-11.8}"
  # Without it (Debian's unstable suite between two MySQL uploads), t_mysql fails by itself.
  scripts/server-root.sh mysql-9.7 || echo "WARNING: no MySQL 9.7 root; t_mysql will fail" >&2
fi

run_pass() { # NAME
  local name=$1 build cmake_args=() ctest_args
  if [ "$name" = arm64 ]; then
    # Its own script: installs the cross toolchain, qemu and the arm64 -dev packages (only what
    # is missing; XBAK_SKIP_DEPS=1 skips that too), builds build-aarch64/ (xbak, xbcloud, every
    # unit suite), runs the unit tests and tests/cross/t_cross_arch.sh.
    banner "[arm64] cross build, unit tests and the x86-64/AArch64 comparison under qemu (scripts/cross-aarch64.sh)"
    scripts/cross-aarch64.sh -- "${ctest_extra[@]}"
    return
  fi
  if [ "$name" = kills ]; then
    banner "[kills] build (./build), then t_restore with many kill points"
    build_normal || return 1
    XBAK_RESTORE_KILLS=${XBAK_RESTORE_KILLS:-50} XBAK_RESTORE_SWEEP=${XBAK_RESTORE_SWEEP:-100} \
      run_with_build tests/integration/t_restore.sh
    return
  fi
  if [ "$name" = soak ]; then
    banner "[soak] build (./build), then tests/soak/t_soak.sh"
    build_normal || return 1
    run_with_build tests/soak/t_soak.sh || return 1
    XBAK_PREPARE_CHAINS=7 run_with_build tests/integration/t_prepare_under_load.sh
    return
  fi
  if [ "$name" = server ]; then
    banner "[server] build (./build), then every integration test against $other_server"
    build_normal || return 1
    # t_server_versions runs the host's 10.11 beside 11.8 by itself; the mariadb-11.8 cells are
    # those tests again.
    XBAK_SERVER=$other_server XBAK_LAYOUTS=${XBAK_LAYOUTS:-all} ctest --test-dir build --output-on-failure \
      --no-tests=error -j"$(nproc)" -L '^integration$' -LE "^$other_server\$" -E '^integration\.t_server_versions$' \
      --output-junit "$repo/build/ctest-$other_server.xml" "${ctest_extra[@]}"
    return
  fi
  if [ "$name" = peer ]; then
    banner "[peer] build (./build), then MariaDB's suite/mariabackup with xbak, then with mariabackup"
    build_normal || return 1
    local peer_rc=0
    XBAK="$repo/build/xbak" tests/peer/run-mariabackup-suite.sh || peer_rc=1
    tests/peer/run-mariabackup-suite.sh --control || peer_rc=1
    return $peer_rc
  fi
  if [ "$name" = fuzz ]; then
    banner "[fuzz] every libFuzzer target for ${XBAK_FUZZ_SECONDS:-7} s (scripts/run-fuzz.sh)"
    scripts/run-fuzz.sh "${XBAK_FUZZ_SECONDS:-7}"
    return
  fi
  case "$name" in
    normal)
      build=build
      # -O2 as shipped, with line tables only (-g1): enough for a backtrace, and a clean build of
      # ./build in 249 s instead of 409 s with -g's full debug information (2 cores, 2026-11-28).
      cmake_args=(-DXBAK_UNITY=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
      # clang-format is kept: a file that drifted fails the run, naming it.
      banner "[normal] clang-format check"
      find src include storage tests benchmarks \( -name '*.cc' -o -name '*.h' \) -print0 |
        xargs -0 clang-format --dry-run --Werror || { echo "run-tests: clang-format check failed" >&2; return 1; }
      # The shape rules (no file above 600 lines, no function above 80, without a reason).
      banner "[normal] shape check"
      python3 scripts/check-shape.py --self-test || { echo "run-tests: shape check failed" >&2; return 1; }
      # 4 chains of backups under load (12 backups, every one prepared and restored) keep CI under
      # 40 minutes; the test's own default, 7 (21 backups), runs with --soak and by hand.
      export XBAK_PREPARE_CHAINS=${XBAK_PREPARE_CHAINS:-4}
      # Point-in-time recovery: a minute of writes after the last backup (the test's own default,
      # two minutes, by hand), for the same reason.
      export PITR_WRITE_SECS=${PITR_WRITE_SECS:-60} ;;
    asan)
      build=build-asan; cmake_args=(-DXBAK_SANITIZE=address,undefined "${sanitizer_flags[@]}")
      export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
      export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
      # The normal pass checks 21 backups under load; under ASan, 2 chains (6) are enough.
      export XBAK_PREPARE_CHAINS=${XBAK_PREPARE_CHAINS:-2}
      # The online resize once (the normal pass runs both rounds). The redo race (3 minutes
      # under ASan) runs in the normal pass only: the copier and the spool it drives are under
      # ASan here through their unit tests, a real server's wrapping log included.
      export XBAK_RESIZE_ROUNDS=${XBAK_RESIZE_ROUNDS:-1}
      # The one-pass restore killed at 1 random point (the normal pass: 5), once while reading
      # streams (the normal pass: 2), and at no chosen system call (strace under ASan is slow;
      # the normal pass: 9 of them): the resume paths run under ASan, the many kill points
      # are the normal pass's.
      export XBAK_RESTORE_KILLS=${XBAK_RESTORE_KILLS:-1}
      export XBAK_RESTORE_STREAM_KILLS=${XBAK_RESTORE_STREAM_KILLS:-1}
      export XBAK_RESTORE_SWEEP=${XBAK_RESTORE_SWEEP:-0}
      # The layout matrix: 3 of its 15 cells (the normal pass runs all).
      export XBAK_LAYOUTS=${XBAK_LAYOUTS:-quick}
      # Point-in-time recovery: 15 s of writes after the last backup (the normal pass: 60).
      export PITR_WRITE_SECS=${PITR_WRITE_SECS:-15} ;;
    tsan)
      build=build-tsan; cmake_args=(-DXBAK_SANITIZE=thread "${sanitizer_flags[@]}")
      export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} ;;
  esac
  banner "[$name] configure ($build)"
  mkdir -p "$build"
  cmake -S "$repo" -B "$build" -G Ninja "${cmake_args[@]}" > "$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; echo "run-tests: cmake configure failed" >&2; return 1; }
  banner "[$name] build (-j$(nproc))"
  local targets=()
  if [ "$name" = tsan ]; then
    # TSan runs the unit tests only: their executables, not xbak's and xbcloud's.
    mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n 's/^\(unit_[a-z0-9_]*\): phony$/\1/p')
    [ "${#targets[@]}" -gt 0 ] || { echo "run-tests: no unit test targets in $build" >&2; return 1; }
    targets=(--target "${targets[@]}")
  fi
  cmake --build "$build" -j"$(nproc)" "${targets[@]}" || { echo "run-tests: build failed ($build)" >&2; return 1; }
  ctest_args=(--test-dir "$build" --output-on-failure --no-tests=error -j"$(nproc)"
    --output-junit "$repo/$build/ctest-results.xml")
  junit_files+=("$name:$repo/$build/ctest-results.xml")
  if [ "$unit_only" = 1 ]; then ctest_args+=(-L '^unit$'); fi
  # TSan: the unit tests, which drive every threaded part (copier, queues, FIFO writers,
  # compression pool, extract readers) directly.
  if [ "$name" = tsan ]; then ctest_args+=(-L '^unit$'); fi
  if [ "$name" = asan ]; then
    ctest_args+=(-E '^integration\.t_redo_race$')
    [ "$asan_full" = 1 ] || ctest_args+=(-L '^(unit|asan)$')
  fi
  banner "[$name] test"
  ctest "${ctest_args[@]}" "${ctest_extra[@]}"
}

# Note: run_pass runs as an `if` condition, where bash ignores `set -e`: every step in it that
# can fail says so with `|| return 1`, or is its last command.
results=()
junit_files=()
status=0
for p in "${passes[@]}"; do
  t_pass=$SECONDS
  if run_pass "$p"; then r=ok; else r=FAILED; status=1; fi
  results+=("pass $p: $r ($((SECONDS - t_pass)) s)")
  echo "run-tests: pass $p: $r after $((SECONDS - t_pass)) s ($((SECONDS - t_start)) s in all)"
done
echo
# Each failed test named again with the end of its output: CI keeps the tail of this log.
if [ "$status" != 0 ]; then
  for j in "${junit_files[@]}"; do python3 scripts/ctest-failures.py "${j%%:*}" "${j#*:}" 40; done
  echo
fi
echo "(all passes took $((SECONDS - t_start)) s)"
printf '%s\n' "${results[@]}"
exit $status
