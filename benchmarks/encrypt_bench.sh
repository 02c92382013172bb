#!/usr/bin/env bash
# Encryption benchmark (issue 23): the same full backup streamed to a reader that counts its bytes,
# plain and encrypted, in one run:
#   xbak plain                       --stream=xbstream
#   xbak --encrypt=AES256            (--encrypt-threads=2), and CHACHA20
#   xbak | openssl enc -aes-256-ctr  the rival: the stream encrypted by a pipe (Percona's xbcrypt is
#                                    not packaged for Debian 12; openssl enc is the common stand-in;
#                                    CTR is unauthenticated, so it is the cheaper rival)
#   mariabackup | openssl enc        mariabackup has no encryption of its own
# each without compression and with zstd. Target: xbak --encrypt at most 5% slower than plain.
#   benchmarks/encrypt_bench.sh [--quick] [--reps N] [--out FILE.json]
# Records wall time, user+system CPU of the whole pipeline and peak RSS of the backup process
# (/usr/bin/time), and the bytes streamed. Results: docs/results/encrypt-bench.json;
# benchmarks/report.py renders them. The per-core cipher speeds are micro_bench's BM_Seal/BM_Open.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
QUICK=0; REPS=5; OUT="$ROOT/docs/results/encrypt-bench.json"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; REPS=2 ;;
    --reps) REPS=$2; shift ;;
    --out) OUT=$2; shift ;;
    *) echo "usage: $0 [--quick] [--reps N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done
if [ $QUICK = 1 ]; then SB_TABLES=4; SB_ROWS=50000; else SB_TABLES=8; SB_ROWS=200000; fi

bash scripts/install-deps.sh
BUILD=${XBAK_BENCH_BUILD:-$ROOT/build-release}   # benchmarks/run builds once into its own directory
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXBAK_TESTS=OFF > /dev/null
ninja -C "$BUILD" xbak > /dev/null
XBAK=$BUILD/xbak

export XBAK_WORK=$ROOT/.work/encrypt-bench
. scripts/lib/sandbox.sh
sb_kill_all
rm -rf "$XBAK_WORK"; mkdir -p "$XBAK_WORK" "$(dirname "$OUT")"
sb_cleanup_on_exit
RES="$XBAK_WORK/results.tsv"; : > "$RES"
sb_init ebench 23507 "innodb_log_file_size=256M"
sb_start ebench
CNF=$(sb_cnf ebench)
sb_load_sysbench ebench $SB_TABLES $SB_ROWS
sb_flush ebench
KEY="$XBAK_WORK/backup.key"
(umask 077 && openssl rand -base64 24 > "$KEY")
HEXKEY=$(openssl rand -hex 32)
HEXIV=$(openssl rand -hex 16)

# run LABEL PIPELINE : the pipeline (a shell string) under /usr/bin/time, its stdout counted;
# prints "seconds peak_rss_kb cpu_seconds bytes"
run() {
  local tf="$XBAK_WORK/time.txt"
  /usr/bin/time -f '%e %M %U %S' -o "$tf" bash -o pipefail -c "$1" 2> "$XBAK_WORK/last.log" |
    wc -c > "$XBAK_WORK/bytes.txt" || { tail "$XBAK_WORK/last.log" >&2; return 1; }
  read -r e m u s < <(tail -n 1 "$tf")
  echo "$e $m $(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}') $(cat "$XBAK_WORK/bytes.txt")"
}

X="$XBAK --backup --defaults-file=$CNF --parallel=4 --progress-interval=0 --stream=xbstream"
ENC_PIPE="openssl enc -aes-256-ctr -K $HEXKEY -iv $HEXIV"
for rep in $(seq 1 "$REPS"); do
  for comp in none zstd; do
    copt=""; [ $comp = zstd ] && copt="--compress=zstd --compress-threads=2"
    # The order of the variants turns every repetition, so that a drift of the machine does not
    # always favour the same one.
    variants=(plain aes256 chacha20 xbak-openssl mariabackup-openssl)
    for k in 0 1 2 3 4; do
      v=${variants[$(((k + rep - 1) % 5))]}
      case $v in
        plain) cmd="$X $copt" ;;
        aes256) cmd="$X $copt --encrypt=AES256 --encrypt-threads=2 --encrypt-key-file=$KEY" ;;
        chacha20) cmd="$X $copt --encrypt=CHACHA20 --encrypt-threads=2 --encrypt-key-file=$KEY" ;;
        xbak-openssl) cmd="$X $copt | $ENC_PIPE" ;;
        mariabackup-openssl)
          [ $comp = none ] || continue  # mariabackup's own compression is not zstd
          cmd="mariabackup --defaults-file=$CNF --backup --parallel=4 --stream=xbstream | $ENC_PIPE" ;;
      esac
      read -r e m c b < <(run "$cmd")
      echo "$v $comp $rep $e $m $c $b" | tee -a "$RES" >&2
    done
  done
done

python3 - "$RES" "$OUT" "$QUICK" "$SB_TABLES" "$SB_ROWS" <<'PY'
import json, sys, platform, subprocess, datetime, os
res, out, quick, tables, rows_per = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5])
rows = []
for line in open(res):
    v, comp, rep, e, m, c, b = line.split()
    rows.append({"variant": v, "compress": comp, "rep": int(rep), "seconds": float(e), "peak_rss_kb": int(m),
                 "cpu_seconds": float(c), "bytes": int(b)})
ver = subprocess.run(["mariabackup", "--version"], capture_output=True, text=True)
ossl = subprocess.run(["openssl", "version"], capture_output=True, text=True)
doc = {"benchmark": "encrypt", "quick": quick, "date": datetime.datetime.now().isoformat(timespec="seconds"),
       "dataset": {"sysbench_tables": tables, "rows": rows_per},
       "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "kernel": platform.release()},
       "versions": {"mariabackup": (ver.stdout or ver.stderr).strip().splitlines()[0],
                    "openssl": ossl.stdout.strip()}, "runs": rows}
json.dump(doc, open(out, "w"), indent=1)
PY
echo "results: $OUT" >&2
