#!/usr/bin/env bash
# benchmarks/run --compare against a deliberately slowed build: the microbenchmarks built at -O0
# (CMAKE_BUILD_TYPE=Debug) make xbak's own multi-buffer MD5 (storage/md5_multi, AVX2 intrinsics) several
# times slower while memcpy, ISA-L's CRCs, zlib,
# OpenSSL, zstd and lz4 (system libraries) stay as they are. Checks that
#   1. comparing a result with itself passes (exit 0, nothing flagged);
#   2. Release (A) against -O0 (B) fails (exit 1) and flags the multi-buffer MD5 figure;
#   3. the other way round (-O0 as A), the MD5 figures are "better", not regressions (memcpy and the
#      library figures are the same code in both builds, so on a busy machine noise alone may flag them);
#   4. a file that is not a result is a usage error (exit 2).
# Only the checksum microbenchmarks run (about a minute with both builds; the CPU needs AVX2).
#   tests/bench/t_compare.sh        (environment: XBAK_BENCH_BUILD, XBAK_BENCH_BUILD_O0, XBAK_JOBS)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
W=$ROOT/.work/t_compare
rm -rf "$W"; mkdir -p "$W"
FAST=${XBAK_BENCH_BUILD:-$ROOT/build-bench}
SLOW=${XBAK_BENCH_BUILD_O0:-$ROOT/build-bench-O0}
FILTER='BM_(Memcpy|Crc32c|Md5Many/x8_avx2)'
fail() { echo "t_compare: FAIL: $*" >&2; exit 1; }
run() { # BUILD_DIR BUILD_TYPE OUT
  benchmarks/run --quick --only micro --no-charts --micro-filter "$FILTER" --build-dir "$1" --build-type "$2" \
    --dir "$W/run-$2" --out "$3" > "$W/run-$2.txt" 2>&1 || { cat "$W/run-$2.txt" >&2; fail "benchmarks/run ($2) failed"; }
}
run "$FAST" Release "$W/fast.json"
run "$SLOW" Debug "$W/slow.json"

set +e
benchmarks/run --compare "$W/fast.json" "$W/fast.json" > "$W/same.txt"; rc_same=$?
benchmarks/run --compare "$W/fast.json" "$W/slow.json" --threshold 10 > "$W/slowed.txt"; rc_slow=$?
benchmarks/run --compare "$W/slow.json" "$W/fast.json" --threshold 10 > "$W/faster.txt"; rc_fast=$?
benchmarks/run --compare "$W/fast.json" "$ROOT/README.md" > "$W/bad.txt" 2>&1; rc_bad=$?
set -e
cat "$W/slowed.txt"
[ $rc_same = 0 ] || fail "identical results: exit $rc_same, expected 0"
grep -q ' 0 regressed' "$W/same.txt" || fail "identical results flagged something"
[ $rc_slow = 1 ] || fail "-O0 build: exit $rc_slow, expected 1"
grep -q '^REGRESSION micro/BM_Md5Many/x8_avx2/bytes:1048576$' "$W/slowed.txt" || fail "-O0 build: multi-buffer MD5 not flagged"
! grep -q '^REGRESSION micro/BM_Md5Many' "$W/faster.txt" || fail "reverse comparison flags an MD5 figure"
grep -q 'micro/BM_Md5Many/x8_avx2/bytes:1048576 .* better' "$W/faster.txt" || fail "reverse comparison: MD5 not better"
[ $rc_bad = 2 ] || fail "a file that is not a result: exit $rc_bad, expected 2"
echo "t_compare: ok (identical: exit 0; -O0 build: exit 1, $(grep -c '^REGRESSION' "$W/slowed.txt") figures flagged; reverse: MD5 better (exit $rc_fast); bad input: exit 2)"
