#!/usr/bin/env bash
# Object-storage benchmark: the same xbstream uploaded to and downloaded from the same local
# MinIO by xbcloud (--parallel 1/4/8/16), `aws s3 cp` and `rclone rcat`/`rclone cat`, in one run.
# Then the repository: LIST_N backups (2,000; 200 with --quick) in chains of a full and 9
# incrementals, each put by xbcloud from a small stream of its own (checkpoints, info, two small
# files: 10 objects), and `xbcloud list` (JSON and table) and `xbcloud expire --dry-run` against
# what a user without them runs, `aws s3 ls --recursive` and `rclone lsf -R` (every object).
#   benchmarks/xbcloud_bench.sh [--quick] [--reps N] [--size MIB] [--list N] [--out FILE.json]
# The stream (default 1 GiB) is an xbstream of incompressible files made once by `mbstream -c`
# (what matters to the uploaders is bytes and chunk structure, not the database behind them); it
# is read from the page cache on stdin by every tool, and downloads go to /dev/null. Records
# wall time, user+system CPU and peak RSS (/usr/bin/time) of the client only. Results:
# docs/results/xbcloud-bench.json; benchmarks/report.py renders them.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
REPS=2; SIZE_MIB=1024; OUT="$ROOT/docs/results/xbcloud-bench.json"; QUICK=0; LIST_N=2000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=1; SIZE_MIB=256; LIST_N=200 ;;
    --list) LIST_N=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --size) SIZE_MIB=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--size MIB] [--list N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbcloud > "$BUILD/ninja.log" 2>&1 || { tail -n 30 "$BUILD/ninja.log" >&2; exit 1; }
XBCLOUD=$BUILD/xbcloud
scripts/build-go-tools.sh > /dev/null

export XBAK_WORK=$ROOT/.work/xbcloud-bench
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
. scripts/lib/objstore.sh
os_cleanup_on_exit
PORT=23950
os_minio_start "$PORT" "$XBAK_WORK/minio"
os_bucket_create "$PORT" bench
export OS_ENDPOINT=http://127.0.0.1:$PORT
EP=http://127.0.0.1:$PORT
export RCLONE_CONFIG_BENCH_TYPE=s3 RCLONE_CONFIG_BENCH_PROVIDER=Minio RCLONE_CONFIG_BENCH_ENDPOINT=$EP \
  RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=$OS_ACCESS_KEY RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=$OS_SECRET_KEY \
  RCLONE_CONFIG_BENCH_REGION=us-east-1

# XBAK_BENCH_CACHE=DIR (benchmarks/run sets it): the stream is made once and kept there.
STREAM=$XBAK_WORK/stream.xbs
if [ -n "${XBAK_BENCH_CACHE:-}" ]; then mkdir -p "$XBAK_BENCH_CACHE"; STREAM=$XBAK_BENCH_CACHE/xbcloud-stream-${SIZE_MIB}M.xbs; fi
if [ ! -s "$STREAM" ]; then
  echo "making a ${SIZE_MIB} MiB xbstream" >&2
  mkdir -p "$XBAK_WORK/files"
  nfiles=$((SIZE_MIB / 64 > 0 ? SIZE_MIB / 64 : 1))
  for i in $(seq 1 "$nfiles"); do
    head -c $((64 << 20)) /dev/urandom > "$XBAK_WORK/files/f$i.ibd"
  done
  (cd "$XBAK_WORK/files" && mbstream -c ./*.ibd) > "$STREAM.tmp" && mv "$STREAM.tmp" "$STREAM"
  rm -rf "$XBAK_WORK/files"
fi
BYTES=$(stat -c %s "$STREAM")
cat "$STREAM" > /dev/null   # into the page cache

RES="$XBAK_WORK/results.tsv"; : > "$RES"
timed() { # OP TOOL PARALLEL REP CMD... (stdin: the stream for uploads)
  local op=$1 tool=$2 par=$3 rep=$4 tf="$XBAK_WORK/time.txt"
  shift 4
  /usr/bin/time -f '%e %M %U %S' -o "$tf" "$@" > /dev/null 2> "$XBAK_WORK/last.log" ||
    { tail "$XBAK_WORK/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$op $tool $par $rep $e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" | tee -a "$RES" >&2
}
clear_bucket() { os_py '
b = sys.argv[1]
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b):
    ks = [{"Key": o["Key"]} for o in page.get("Contents", [])]
    if ks: s3.delete_objects(Bucket=b, Delete={"Objects": ks, "Quiet": True})
' bench; }

X=(--s3-endpoint="$EP" --s3-bucket=bench --progress-interval=0)
AWS=(/usr/bin/aws --endpoint-url "$EP" --region us-east-1)
for rep in $(seq 1 "$REPS"); do
  for p in 1 4 8 16; do
    timed put xbcloud "$p" "$rep" "$XBCLOUD" put "${X[@]}" --parallel="$p" b < "$STREAM"
    timed get xbcloud "$p" "$rep" "$XBCLOUD" get "${X[@]}" --parallel="$p" b
    clear_bucket
  done
  timed put aws 10 "$rep" "${AWS[@]}" s3 cp - s3://bench/aws.xbs < "$STREAM"
  timed get aws 10 "$rep" "${AWS[@]}" s3 cp s3://bench/aws.xbs -
  timed put rclone 4 "$rep" rclone rcat bench:bench/rclone.xbs < "$STREAM"
  timed get rclone 4 "$rep" rclone cat bench:bench/rclone.xbs
  clear_bucket
done

# --- the repository: LIST_N backups, listed ---------------------------------------------------
echo "putting $LIST_N small backups in chains of 10" >&2
mkdir -p "$XBAK_WORK/small"
head -c 65536 /dev/urandom > "$XBAK_WORK/small/ibdata1"
head -c 16384 /dev/urandom > "$XBAK_WORK/small/t.ibd"
put_small() { # INDEX: backup host/bNNNNN, chain INDEX/10, step INDEX%10
  local i=$1 d c k from to
  d=$XBAK_WORK/small/$i; mkdir -p "$d"
  c=$((i / 10)); k=$((i % 10))
  from=$((k == 0 ? 0 : c * 1000 + k * 10)); to=$((c * 1000 + (k + 1) * 10))
  printf 'backup_type = %s\nfrom_lsn = %d\nto_lsn = %d\nlast_lsn = %d\n' \
    "$([ "$k" = 0 ] && echo full-backuped || echo incremental)" "$from" "$to" "$to" > "$d/xtrabackup_checkpoints"
  printf 'uuid = %d\nstart_time = 2026-11-26 01:00:00\nend_time = 2026-11-26 01:00:01\n' "$i" > "$d/xtrabackup_info"
  ln -s "$XBAK_WORK/small/ibdata1" "$d/ibdata1"; ln -s "$XBAK_WORK/small/t.ibd" "$d/t.ibd"
  (cd "$d" && mbstream -c ibdata1 t.ibd xtrabackup_info xtrabackup_checkpoints) |
    "$XBCLOUD" put "${X[@]}" "host/$(printf 'b%05d' "$i")" 2> /dev/null
  rm -rf "$d"
}
export -f put_small; export XBAK_WORK XBCLOUD; export X_STR="${X[*]}"
# In order of chain, so that puts start in chain order (4 at a time: the order within a chain holds).
seq 0 $((LIST_N - 1)) | xargs -P 4 -I{} bash -c 'X=($X_STR); put_small {}'
OBJECTS=$(os_py 'print(sum(len(p.get("Contents", [])) for p in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="host/")))')
echo "$LIST_N backups, $OBJECTS objects" >&2
"$XBCLOUD" list "${X[@]}" --json host > "$XBAK_WORK/list.json"
REQUESTS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["requests"]); assert len(d["backups"]) == int(sys.argv[2]), len(d["backups"])' "$XBAK_WORK/list.json" "$LIST_N")
for rep in $(seq 1 "$REPS"); do
  timed list-json xbcloud 16 "$rep" "$XBCLOUD" list "${X[@]}" --json host
  timed list xbcloud 16 "$rep" "$XBCLOUD" list "${X[@]}" host
  timed expire-dry-run xbcloud 16 "$rep" "$XBCLOUD" expire "${X[@]}" --retain-full=10 --dry-run host
  timed list aws 1 "$rep" "${AWS[@]}" s3 ls --recursive s3://bench/host/
  timed list rclone 1 "$rep" rclone lsf -R bench:bench/host
done
clear_bucket

python3 - "$RES" "$OUT" "$QUICK" "$BYTES" "$LIST_N" "$OBJECTS" "$REQUESTS" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick, nbytes = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
listing = {"backups": int(sys.argv[5]), "objects": int(sys.argv[6]), "xbcloud_requests": int(sys.argv[7])}
rows = []
for line in open(res):
    op, tool, par, rep, e, m, c = line.split()
    rows.append({"op": op, "tool": tool, "parallel": int(par), "rep": int(rep), "seconds": float(e),
                 "peak_rss_kb": int(m), "cpu_seconds": float(c)})
def ver(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return ((r.stdout or r.stderr).strip().splitlines() or ["?"])[0]
doc = {"benchmark": "xbcloud", "quick": quick, "bytes": nbytes,
       "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"aws": ver(["/usr/bin/aws", "--version"]), "rclone": ver(["rclone", "version"])}, "runs": rows,
       "listing": listing}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
