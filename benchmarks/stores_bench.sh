#!/usr/bin/env bash
# Azure Blob Storage and Google Cloud Storage, by their emulators on loopback (Azurite,
# fake-gcs-server, both in memory): the same xbstream put and got by xbcloud (--parallel 4 and
# 16) and by rclone (rcat/cat, its defaults), side by side in one run, each store through its own
# protocol. rclone is the CLI installable here for all three stores (az and gsutil are not
# packaged for Debian 12 in a usable form); Debian's rclone 1.60 cannot address an Azure
# emulator (its endpoint option is a domain suffix there), so rclone v1.68.2 is built once with
# `go install` and cached beside MinIO.
#   benchmarks/stores_bench.sh [--quick] [--reps N] [--size MIB] [--out FILE.json]
# The stream (default 1 GiB; --quick 256 MiB) is the same incompressible xbstream as
# xbcloud_bench.sh's, read from the page cache; downloads go to /dev/null. Records wall time,
# user+system CPU and peak RSS (/usr/bin/time) of the client only; the emulator shares the
# 2 cores, and on loopback it is what bounds both clients. Results: docs/results/stores-bench.json
# (benchmarks/report.py renders them).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
REPS=2; SIZE_MIB=1024; OUT="$ROOT/docs/results/stores-bench.json"; QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=1; SIZE_MIB=256 ;;
    --reps) REPS=$2; shift ;;
    --size) SIZE_MIB=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--size MIB] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbcloud > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBCLOUD=$BUILD/xbcloud
GOBIN_DIR=$(scripts/build-go-tools.sh)
RCLONE=$GOBIN_DIR/rclone-1.68.2
if [ ! -x "$RCLONE" ]; then
  echo "building rclone v1.68.2 (go install, about 2 minutes, once)" >&2
  tmp=$(mktemp -d)
  GOBIN=$tmp GOFLAGS="-mod=mod -buildvcs=false" go install github.com/rclone/rclone@v1.68.2
  mv "$tmp/rclone" "$RCLONE" && rmdir "$tmp"
fi
export RCLONE_CONFIG=/dev/null

export XBAK_WORK=$ROOT/.work/stores-bench
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
. scripts/lib/objstore.sh
os_cleanup_on_exit
AZ_PORT=23960; GCS_PORT=23961
"${XBAK_CACHE:-$HOME/.cache/xbak}/azurite/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" \
  --inMemoryPersistence --silent --disableTelemetry --loose > "$XBAK_WORK/azurite.log" 2>&1 &
_OS_PIDS+=("$!")
for _ in $(seq 300); do grep -q "successfully listens" "$XBAK_WORK/azurite.log" && break; sleep 0.1; done
os_fakegcs_start "$GCS_PORT"
os_azure_container_create "$AZ_PORT" bench
os_gcs_bucket_create "$GCS_PORT" bench

STREAM=$XBAK_WORK/stream.xbs
if [ -n "${XBAK_BENCH_CACHE:-}" ]; then mkdir -p "$XBAK_BENCH_CACHE"; STREAM=$XBAK_BENCH_CACHE/xbcloud-stream-${SIZE_MIB}M.xbs; fi
if [ ! -s "$STREAM" ]; then
  echo "making a ${SIZE_MIB} MiB xbstream" >&2
  mkdir -p "$XBAK_WORK/files"
  nfiles=$((SIZE_MIB / 64 > 0 ? SIZE_MIB / 64 : 1))
  for i in $(seq 1 "$nfiles"); do head -c $((64 << 20)) /dev/urandom > "$XBAK_WORK/files/f$i.ibd"; done
  (cd "$XBAK_WORK/files" && mbstream -c ./*.ibd) > "$STREAM.tmp" && mv "$STREAM.tmp" "$STREAM"
  rm -rf "$XBAK_WORK/files"
fi
BYTES=$(stat -c %s "$STREAM")
cat "$STREAM" > /dev/null

RES="$XBAK_WORK/results.tsv"; : > "$RES"
timed() { # STORE OP TOOL PARALLEL REP CMD...
  local store=$1 op=$2 tool=$3 par=$4 rep=$5 tf="$XBAK_WORK/time.txt"
  shift 5
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" > /dev/null 2> "$XBAK_WORK/last.log" ||
    { tail "$XBAK_WORK/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$store $op $tool $par $rep $e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" | tee -a "$RES" >&2
}
export AZURE_STORAGE_KEY=$OS_AZ_KEY
AZ=(--storage=azure --azure-storage-account="$OS_AZ_ACCOUNT" --azure-container-name=bench
  --azure-endpoint="http://127.0.0.1:$AZ_PORT/$OS_AZ_ACCOUNT" --progress-interval=0)
# The emulator by STORAGE_EMULATOR_HOST, without credentials; never a metadata server.
export NO_GCE_CHECK=true
GS=(--storage=google --google-bucket=bench --progress-interval=0)
RC_AZ=":azureblob,account=$OS_AZ_ACCOUNT,key='$OS_AZ_KEY',endpoint='http://127.0.0.1:$AZ_PORT/$OS_AZ_ACCOUNT':bench"
RC_GS=":gcs,anonymous=true,endpoint='http://127.0.0.1:$GCS_PORT/storage/v1/':bench"
for rep in $(seq 1 "$REPS"); do
  for store in azure google; do
    if [ $store = azure ]; then opts=("${AZ[@]}"); rc=$RC_AZ; env=(); else opts=("${GS[@]}"); rc=$RC_GS; env=(STORAGE_EMULATOR_HOST=127.0.0.1:$GCS_PORT); fi
    for p in 4 16; do
      timed $store put xbcloud "$p" "$rep" env "${env[@]}" "$XBCLOUD" put "${opts[@]}" --parallel="$p" b < "$STREAM"
      timed $store get xbcloud "$p" "$rep" env "${env[@]}" "$XBCLOUD" get "${opts[@]}" --parallel="$p" b
      env "${env[@]}" "$XBCLOUD" delete "${opts[@]}" b 2> /dev/null
    done
    timed $store put rclone 4 "$rep" "$RCLONE" rcat "$rc/rclone.xbs" < "$STREAM"
    timed $store get rclone 4 "$rep" "$RCLONE" cat "$rc/rclone.xbs"
    "$RCLONE" deletefile "$rc/rclone.xbs"
  done
done

python3 - "$RES" "$OUT" "$QUICK" "$BYTES" "$RCLONE" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick, nbytes, rclone = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), sys.argv[5]
rows = []
for line in open(res):
    store, op, tool, par, rep, e, m, c = line.split()
    rows.append({"store": store, "op": op, "tool": tool, "parallel": int(par), "rep": int(rep), "seconds": float(e),
                 "peak_rss_kb": int(m), "cpu_seconds": float(c)})
ver = lambda cmd: (subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines() or ["?"])[0]
doc = {"benchmark": "stores", "quick": quick, "bytes": nbytes,
       "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"rclone": ver([rclone, "version"]), "azurite": "3.35.0", "fake-gcs-server": "v1.56.1"},
       "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
