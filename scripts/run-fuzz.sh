#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc, one per parser of untrusted bytes) with
# clang, ASan and UBSan in ./build-fuzz, and runs each for a bounded time.
#   scripts/run-fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
# A crash leaves its input in build-fuzz/crashes/<target>/ and makes the script exit non-zero.
# Seed corpora (real files a test backup produced) are in tests/fuzz/corpus/<target>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
secs=${1:-60}
shift || true
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...] ('$secs' is not a number of seconds)" >&2; exit 2; }
mkdir -p build-fuzz
# -O1 and line tables only, as libFuzzer's documentation and OSS-Fuzz build: faster to build than
# -O2 -g, and the stack traces keep their lines.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DXBAK_FUZZ=ON -DXBAK_TESTS=OFF -DXBAK_BENCHMARKS=OFF \
  -DXBAK_UNITY="${XBAK_UNITY:-ON}" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" > build-fuzz/configure.log 2>&1 ||
  { cat build-fuzz/configure.log >&2; exit 1; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
# One target per core at a time (libFuzzer runs one process): each still gets SECONDS of a core.
fuzz_one() { # TARGET : its run, then its summary (or its failure) on stdout/stderr
  local t=$1 seeds=()
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  # Seeds: real files from a test backup, in tests/fuzz/corpus/<target>/ (read only; new
  # inputs go to build-fuzz/corpus/<target>/).
  if [ -d "tests/fuzz/corpus/$t" ]; then seeds=("tests/fuzz/corpus/$t"); fi
  if ! "build-fuzz/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "${seeds[@]}" 2> "build-fuzz/$t.log"; then
    { echo "== $t ($secs s)"; tail -n 40 "build-fuzz/$t.log"; echo "FUZZ FAILURE: $t (input in build-fuzz/crashes/$t/)"; } >&2
    return 1
  fi
  echo "== $t ($secs s)"
  grep -E "stat::number_of_executed_units" "build-fuzz/$t.log" || true
}
jobs_max=$(nproc)
rm -f build-fuzz/*.failed
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  { fuzz_one "$t" || touch "build-fuzz/$t.failed"; } &
done
wait
# A file per failed target: wait's own statuses are lost for jobs reaped by `wait -n` above.
if compgen -G "build-fuzz/*.failed" > /dev/null; then exit 1; fi
exit 0
