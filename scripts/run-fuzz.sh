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
mkdir -p build-fuzz
# -O1 and line tables only, as libFuzzer's documentation and OSS-Fuzz build: faster to build than
# -O2 -g, and the stack traces keep their lines.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DXBAK_FUZZ=ON -DXBAK_TESTS=OFF -DXBAK_BENCHMARKS=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" > build-fuzz/configure.log 2>&1 ||
  { cat build-fuzz/configure.log >&2; exit 1; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do targets+=("$(basename "$f" .cc)"); done
fi
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  # Seeds: real files from a test backup, in tests/fuzz/corpus/<target>/ (read only; new
  # inputs go to build-fuzz/corpus/<target>/).
  seeds=()
  if [ -d "tests/fuzz/corpus/$t" ]; then seeds=("tests/fuzz/corpus/$t"); fi
  echo "== $t ($secs s)"
  if ! "build-fuzz/tests/fuzz/$t" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t/" "build-fuzz/corpus/$t" "${seeds[@]}" 2> "build-fuzz/$t.log"; then
    tail -n 40 "build-fuzz/$t.log" >&2
    echo "FUZZ FAILURE: $t (input in build-fuzz/crashes/$t/)" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units" "build-fuzz/$t.log" || true
  fi
done
exit $status
