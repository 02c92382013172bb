#!/usr/bin/env bash
# Issue "xbcloud": backups streamed to a real MinIO and back.
#   1. xbak --backup --stream | xbcloud put -> xbcloud get | xbak --extract -> prepare -> restore ->
#      CHECKSUM TABLE equal; the same with --fifo-streams=8 on both sides and --compress.
#   2. every object matches its .md5 sidecar, read back with an independent client (boto3).
#   3. faults: through an HTTP proxy answering 503 SlowDown to 15% of requests and a toxiproxy
#      resetting connections and adding latency, put and get complete and the data is identical;
#      MinIO killed mid-put: put fails, no completion marker, get refuses.
#   4. bad input (credentials, bucket, endpoint, TLS, not xbstream): one clear line, exit != 0,
#      no secret printed.
#   5. delete removes that backup's objects and nothing else.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud

src_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
toxi_api=$(alloc_port)
toxi_port=$(alloc_port)
fault_port=$(alloc_port)
bucket=xbak-test

step "MinIO (built once by scripts/build-go-tools.sh) and a bucket"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)

step "source server with sample data"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
sb_load_many src 50
sb_checksums src > "$TEST_WORK/src.sum"
cnf=$(sb_cnf src)

step "stdout: xbak --backup --stream | xbcloud put; xbcloud get | xbak --extract; restore"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream 2> "$TEST_WORK/b1.log" |
  "$XBCLOUD" put "${S3[@]}" --parallel=4 --read-buffer-size=1M full1 2> "$TEST_WORK/put1.log" ||
  { cat "$TEST_WORK/b1.log" "$TEST_WORK/put1.log" >&2; fail "backup | xbcloud put failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=4 full1 2> "$TEST_WORK/get1.log" |
  "$XBAK" --extract -C "$TEST_WORK/r1" 2> "$TEST_WORK/x1.log" ||
  { cat "$TEST_WORK/get1.log" "$TEST_WORK/x1.log" >&2; fail "xbcloud get | extract failed"; }
cp -a "$TEST_WORK/r1" "$TEST_WORK/r1.orig"
restore_and_verify "$TEST_WORK/r1" stdout

step "xbak --restore straight from xbcloud get: a zstd full + an incremental, one named pipe each"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --compress=zstd \
  --extra-lsndir="$TEST_WORK/lsn0" 2> "$TEST_WORK/rb0.log" |
  "$XBCLOUD" put "${S3[@]}" --parallel=4 rfull 2> "$TEST_WORK/rput0.log" ||
  { cat "$TEST_WORK/rb0.log" "$TEST_WORK/rput0.log" >&2; fail "full backup | xbcloud put failed"; }
sb_sql src "UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % 3 = 0; CREATE TABLE many.after_full (id INT PRIMARY KEY) SELECT seq id FROM test.seq_1_to_999"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --incremental-basedir="$TEST_WORK/lsn0" \
  2> "$TEST_WORK/rb1.log" | "$XBCLOUD" put "${S3[@]}" --parallel=4 rinc1 2> "$TEST_WORK/rput1.log" ||
  { cat "$TEST_WORK/rb1.log" "$TEST_WORK/rput1.log" >&2; fail "incremental backup | xbcloud put failed"; }
sb_checksums src > "$TEST_WORK/src-inc.sum"
mkfifo "$TEST_WORK/rs0" "$TEST_WORK/rs1"
"$XBCLOUD" get "${S3[@]}" --parallel=4 rfull > "$TEST_WORK/rs0" 2> "$TEST_WORK/rget0.log" &
g0=$!
"$XBCLOUD" get "${S3[@]}" --parallel=4 rinc1 > "$TEST_WORK/rs1" 2> "$TEST_WORK/rget1.log" &
g1=$!
"$XBAK" --restore --parallel=2 --from-stream="$TEST_WORK/rs0" --from-stream="$TEST_WORK/rs1" \
  --datadir="$TEST_WORK/rsdata" 2> "$TEST_WORK/rs.log" || { tail -n 20 "$TEST_WORK/rs.log" >&2; fail "xbak --restore --from-stream"; }
wait "$g0" || { cat "$TEST_WORK/rget0.log" >&2; fail "xbcloud get rfull"; }
wait "$g1" || { cat "$TEST_WORK/rget1.log" >&2; fail "xbcloud get rinc1"; }
[ ! -e "$TEST_WORK/rsdata/xbak-restore-staging" ] || fail "the staging directory was left in the datadir"
assert_contains "$TEST_WORK/rs.log" "binary log position of the restored data .*mysql-bin" "the incremental's binlog position"
sb_init_from_datadir dst "$dst_port" "$TEST_WORK/rsdata"
if [ "$(id -u)" -eq 0 ]; then chown -R mysql:mysql "$TEST_WORK/rsdata"; fi
sb_start dst
sb_check_all dst
sb_checksums dst > "$TEST_WORK/rs.sum"
sb_compare_checksums "$TEST_WORK/src-inc.sum" "$TEST_WORK/rs.sum" || fail "the restore from streams differs"
sb_stop dst
cp "$TEST_WORK/src-inc.sum" "$TEST_WORK/src.sum"  # the source as the steps below back it up
# A stream cut short: refused, the datadir left marked unfinished; the same restore with whole
# streams then starts over and finishes.
"$XBCLOUD" get "${S3[@]}" rfull > "$TEST_WORK/rfull.xb" 2> /dev/null || fail "xbcloud get rfull to a file"
"$XBCLOUD" get "${S3[@]}" rinc1 > "$TEST_WORK/rinc1.xb" 2> /dev/null || fail "xbcloud get rinc1 to a file"
head -c $(($(stat -c %s "$TEST_WORK/rfull.xb") / 2)) "$TEST_WORK/rfull.xb" > "$TEST_WORK/cut.xb"
if "$XBAK" --restore --from-stream="$TEST_WORK/cut.xb" --from-stream="$TEST_WORK/rinc1.xb" \
  --datadir="$TEST_WORK/rs2" 2> "$TEST_WORK/rs2-cut.log"; then
  fail "restored from a stream cut in half"
fi
head -n 3 "$TEST_WORK/rs2-cut.log"
assert_file "$TEST_WORK/rs2/xbak_restore_in_progress" "the journal of the failed restore"
"$XBAK" --restore --from-stream="$TEST_WORK/rfull.xb" --from-stream="$TEST_WORK/rinc1.xb" \
  --datadir="$TEST_WORK/rs2" 2> "$TEST_WORK/rs2.log" || { tail -n 20 "$TEST_WORK/rs2.log" >&2; fail "the re-run restore"; }
assert_contains "$TEST_WORK/rs2.log" "starting over"
[ ! -e "$TEST_WORK/rs2/xbak_restore_in_progress" ] || fail "the finished restore left its journal"
# A stream of the wrong kind in the chain: the full backup's stream again where the incremental
# belongs. Checked when it is whole, before its pages go in; the datadir stays marked unfinished.
cp "$TEST_WORK/rfull.xb" "$TEST_WORK/rfull2.xb"
if "$XBAK" --restore --from-stream="$TEST_WORK/rfull.xb" --from-stream="$TEST_WORK/rfull2.xb" \
  --datadir="$TEST_WORK/rs3" 2> "$TEST_WORK/rs3.log"; then
  fail "restored a chain of two full backups"
fi
assert_contains "$TEST_WORK/rs3.log" "is not an incremental backup"
assert_file "$TEST_WORK/rs3/xbak_restore_in_progress" "the journal of the refused restore"
rm -rf "$TEST_WORK/rs2" "$TEST_WORK/rs3" "$TEST_WORK/rfull.xb" "$TEST_WORK/rfull2.xb" "$TEST_WORK/rinc1.xb" "$TEST_WORK/cut.xb"

step "8 FIFOs on both sides, zstd-compressed"
"$XBCLOUD" put "${S3[@]}" --parallel=8 --fifo-streams=8 --fifo-dir="$TEST_WORK/pf" full8 2> "$TEST_WORK/put8.log" &
put_pid=$!
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --compress=zstd --compress-threads=2 \
  --fifo-streams=8 --fifo-dir="$TEST_WORK/pf" 2> "$TEST_WORK/b8.log" || { cat "$TEST_WORK/b8.log" >&2; fail "fifo backup failed"; }
wait "$put_pid" || { cat "$TEST_WORK/put8.log" >&2; fail "xbcloud put --fifo-streams=8 failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=8 --fifo-streams=8 --fifo-dir="$TEST_WORK/gf" full8 2> "$TEST_WORK/get8.log" &
get_pid=$!
"$XBAK" --extract --fifo-streams=8 --fifo-dir="$TEST_WORK/gf" -C "$TEST_WORK/r8" 2> "$TEST_WORK/x8.log" ||
  { cat "$TEST_WORK/x8.log" "$TEST_WORK/get8.log" >&2; fail "extract from 8 FIFOs failed"; }
wait "$get_pid" || { cat "$TEST_WORK/get8.log" >&2; fail "xbcloud get --fifo-streams=8 failed"; }
assert_file "$TEST_WORK/r8/ibdata1.zst"
"$XBAK" --decompress --remove-original --parallel=2 --target-dir="$TEST_WORK/r8" 2> "$TEST_WORK/d8.log" ||
  { cat "$TEST_WORK/d8.log" >&2; fail "decompress failed"; }
restore_and_verify "$TEST_WORK/r8" fifo8-zstd

step "credentials and endpoint from an options file ([xbcloud]), one file of a backup"
cat > "$TEST_WORK/xbcloud.cnf" << CNF
[xbcloud]
s3-endpoint = http://127.0.0.1:$s3_port
s3-bucket = $bucket
s3-access-key = $OS_ACCESS_KEY
s3-secret-key = $OS_SECRET_KEY
progress-interval = 0
CNF
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$XBCLOUD" get --defaults-file="$TEST_WORK/xbcloud.cnf" full8 \
  ${META}checkpoints 2> "$TEST_WORK/getcnf.log" | "$XBAK" --extract -C "$TEST_WORK/meta" 2>> "$TEST_WORK/getcnf.log" ||
  { cat "$TEST_WORK/getcnf.log" >&2; fail "get with an options file failed"; }
assert_contains "$TEST_WORK/meta/${META}checkpoints" '^backup_type = full-backuped$'
[ "$(find "$TEST_WORK/meta" -type f | wc -l)" = 1 ] || fail "get FILE returned more than that file"
grep -q "$OS_SECRET_KEY" "$TEST_WORK/getcnf.log" && fail "secret printed"

step "every object matches its md5 sidecar (boto3, an independent client)"
os_py '
import hashlib
objs, token = [], None
while True:
    kw = {"Bucket": sys.argv[1]}
    if token: kw["ContinuationToken"] = token
    r = s3.list_objects_v2(**kw)
    objs += [o["Key"] for o in r.get("Contents", [])]
    if not r.get("IsTruncated"): break
    token = r["NextContinuationToken"]
keys = set(objs)
data = [k for k in objs if not k.endswith(".md5") and not k.endswith("/xbcloud.manifest") and not k.endswith("/xbcloud.started")]
assert data, "no objects"
for name in ("full1", "full8"):
    assert name + "/xbcloud.manifest" in keys, name + ": no completion marker"
for k in data:
    body = s3.get_object(Bucket=sys.argv[1], Key=k)["Body"].read()
    side = s3.get_object(Bucket=sys.argv[1], Key=k + ".md5")["Body"].read().decode()
    assert side.split()[0] == hashlib.md5(body).hexdigest(), k + ": md5 sidecar does not match"
    assert side.split()[1] == k.rsplit("/", 1)[-1], k + ": sidecar names another file"
print(f"{len(data)} objects match their md5 sidecars")
' "$bucket"

step "faults: 15% HTTP 503 SlowDown, 5% connection resets, latency"
os_toxi_start "$toxi_api"
os_toxi_proxy s3 "$toxi_port" "$s3_port"
python3 "$XBAK_SRC/scripts/lib/http_fault_proxy.py" --listen "$fault_port" --upstream "$toxi_port" \
  --error-rate 0.15 2> "$TEST_WORK/fault-proxy.log" &
fault_pid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$fault_port/" && break; sleep 0.1; done
os_toxi_toxic s3 reset_peer downstream timeout=200 toxicity=0.05
os_toxi_toxic s3 latency upstream latency=30 jitter=20
# Waits between retries of at most 1 s (--max-backoff): the faults are as frequent, the test shorter.
FAULTY=(--s3-endpoint="http://127.0.0.1:$fault_port" --s3-bucket="$bucket" --progress-interval=0 --max-retries=10
  --max-backoff=1000)
# A partial backup (sbtest): its large files (system tablespace, undo, sbtest tables) are fetched
# in byte ranges below, and few small files keep the number of requests, each of which pays the
# injected latency, low enough for CI.
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --databases=sbtest 2> "$TEST_WORK/bf.log" \
  > "$TEST_WORK/faulty.xbs" ||
  { cat "$TEST_WORK/bf.log" >&2; fail "backup failed"; }
"$XBCLOUD" put "${FAULTY[@]}" --parallel=8 --read-buffer-size=256K faulty < "$TEST_WORK/faulty.xbs" 2> "$TEST_WORK/putf.log" ||
  { cat "$TEST_WORK/putf.log" >&2; fail "put through faults failed"; }
"$XBCLOUD" get "${FAULTY[@]}" --parallel=8 faulty 2> "$TEST_WORK/getf.log" > "$TEST_WORK/faulty-got.xbs" ||
  { cat "$TEST_WORK/getf.log" >&2; fail "get through faults failed"; }
"$XBAK" --extract -C "$TEST_WORK/rf-sent" < "$TEST_WORK/faulty.xbs" 2> /dev/null
"$XBAK" --extract -C "$TEST_WORK/rf-got" < "$TEST_WORK/faulty-got.xbs" 2> "$TEST_WORK/xf.log" ||
  { cat "$TEST_WORK/xf.log" >&2; fail "extract of the faulty get failed"; }
diff -r "$TEST_WORK/rf-sent" "$TEST_WORK/rf-got" > /dev/null || fail "data through faults differs"
# A backup of 10 MiB objects (1 MiB pieces), fetched through the faults with 16 requests: the
# stream must equal a plain one-at-a-time get.
"$XBCLOUD" put "${S3[@]}" --parallel=4 big10 < "$TEST_WORK/faulty.xbs" 2> "$TEST_WORK/put10.log" ||
  { cat "$TEST_WORK/put10.log" >&2; fail "put of big10 failed"; }
"$XBCLOUD" get "${S3[@]}" --parallel=1 big10 2> "$TEST_WORK/get-plain.log" > "$TEST_WORK/big10-plain.xbs" ||
  { cat "$TEST_WORK/get-plain.log" >&2; fail "plain get of big10 failed"; }
"$XBCLOUD" get "${FAULTY[@]}" --parallel=16 big10 2> "$TEST_WORK/getp.log" > "$TEST_WORK/big10-pieces.xbs" ||
  { cat "$TEST_WORK/getp.log" >&2; fail "get by pieces through faults failed"; }
cmp -s "$TEST_WORK/big10-plain.xbs" "$TEST_WORK/big10-pieces.xbs" || fail "get by pieces gave another stream"
# The same backup as a put before manifest version 2 left it (no piece MD5s: objects checked
# whole): with more requests than get's window of objects, the objects come in byte ranges.
os_py '
b, k = sys.argv[1], "big10/xbcloud.manifest"
lines = s3.get_object(Bucket=b, Key=k)["Body"].read().decode().split("\n")
assert lines[0] == "xbcloud-manifest 3", lines[:2]
lines = lines[[i for i, l in enumerate(lines) if l.startswith("pieces ")][0] + 1:]  # the summary and pieces lines go
out = ["xbcloud-manifest 1"]
for l in lines:
    f = l.split(" ", 4)
    out.append(" ".join(f[:3] + f[4:]) if len(f) == 5 else l)
s3.put_object(Bucket=b, Key=k, Body="\n".join(out).encode())
' "$bucket" || fail "could not rewrite the manifest as version 1"
"$XBCLOUD" get "${FAULTY[@]}" --parallel=16 big10 2> "$TEST_WORK/getr.log" > "$TEST_WORK/big10-ranged.xbs" ||
  { cat "$TEST_WORK/getr.log" >&2; fail "ranged get through faults failed"; }
cmp -s "$TEST_WORK/big10-plain.xbs" "$TEST_WORK/big10-ranged.xbs" || fail "ranged get gave another stream"
read -r objs gets < <(sed -n 's/.* in \([0-9]*\) objects .* by \([0-9]*\) GETs.*/\1 \2/p' "$TEST_WORK/getr.log" | tail -1)
echo "ranged get: $objs objects by $gets GETs, same stream as a plain get"
[ -n "$gets" ] && [ "$gets" -gt "$objs" ] || fail "the --parallel=16 get did not fetch in ranges"
put_retries=$(grep -o '[0-9]* retries' "$TEST_WORK/putf.log" | tail -1 | cut -d' ' -f1)
get_retries=$(grep -o '[0-9]* retries' "$TEST_WORK/getf.log" | tail -1 | cut -d' ' -f1)
injected=$(grep -c '^fault-proxy: 503' "$TEST_WORK/fault-proxy.log" || true)
echo "faults injected: $injected HTTP 503; put retried $put_retries, get retried $get_retries requests; data identical"
[ "$injected" -gt 0 ] && [ "$put_retries" -gt 0 ] && [ "$get_retries" -gt 0 ] || fail "no fault was exercised"
os_toxi_clear s3
kill "$fault_pid"

step "MinIO killed mid-put: put fails, no completion marker, get refuses"
os_toxi_toxic s3 bandwidth upstream rate=3000   # KB/s: the put takes several seconds
"$XBCLOUD" put --s3-endpoint="http://127.0.0.1:$toxi_port" --s3-bucket="$bucket" --progress-interval=0 \
  --max-retries=2 --parallel=2 --read-buffer-size=1M killed < "$TEST_WORK/faulty.xbs" 2> "$TEST_WORK/putk.log" &
put_pid=$!
sleep 2
os_minio_stop "$s3_port" "$TEST_WORK/minio" KILL
rc=0
wait "$put_pid" || rc=$?
cat "$TEST_WORK/putk.log"
assert_ne 0 "$rc" "put must fail when the server dies"
assert_contains "$TEST_WORK/putk.log" 'no completion marker was written' "put failure message"
os_toxi_clear s3
os_minio_start "$s3_port" "$TEST_WORK/minio"
n=$(os_py 'r = s3.list_objects_v2(Bucket=sys.argv[1], Prefix="killed/"); ks=[o["Key"] for o in r.get("Contents", [])]; assert "killed/xbcloud.manifest" not in ks; print(len(ks))' "$bucket")
echo "after the kill: $n objects of 'killed' stored, no completion marker"
rc=0
"$XBCLOUD" get "${S3[@]}" killed > /dev/null 2> "$TEST_WORK/getk.log" || rc=$?
assert_ne 0 "$rc" "get of an incomplete backup must fail"
assert_contains "$TEST_WORK/getk.log" 'incomplete.*completion marker' "get refusal"
cat "$TEST_WORK/getk.log"

step "bad input: one clear line, exit != 0, no secret printed"
secret=S3cr3t-must-not-leak
expect_error() { # LABEL REGEX CMD... (stdin: /dev/null unless redirected by the caller)
  local label=$1 regex=$2 rc=0
  shift 2
  "$@" > /dev/null 2> "$TEST_WORK/err.log" || rc=$?
  [ "$rc" -ne 0 ] || fail "$label: exit 0"
  [ "$(wc -l < "$TEST_WORK/err.log")" -eq 1 ] || { cat "$TEST_WORK/err.log" >&2; fail "$label: not one line"; }
  grep -qE "$regex" "$TEST_WORK/err.log" || { cat "$TEST_WORK/err.log" >&2; fail "$label: message does not match $regex"; }
  if grep -q "$secret" "$TEST_WORK/err.log" "$TEST_WORK/ps.log" 2> /dev/null; then fail "$label: secret printed"; fi
  echo "$label: $(cat "$TEST_WORK/err.log")"
}
: > "$TEST_WORK/ps.log"
expect_error "wrong credentials" 'HTTP 403' env AWS_SECRET_ACCESS_KEY=$secret "$XBCLOUD" get "${S3[@]}" full1
expect_error "wrong secret on the command line" 'HTTP 403' "$XBCLOUD" get "${S3[@]}" --s3-secret-key=$secret full1
expect_error "missing bucket" "bucket 'no-such-bucket' does not exist" \
  "$XBCLOUD" get --s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket=no-such-bucket full1
expect_error "unreachable endpoint" 'cannot reach http://127.0.0.1:'"$fault_port" \
  "$XBCLOUD" get --s3-endpoint="http://127.0.0.1:$fault_port" --s3-bucket="$bucket" --max-retries=1 full1
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TEST_WORK/k.pem" -out "$TEST_WORK/c.pem" -days 1 \
  -subj /CN=127.0.0.1 2> /dev/null
tls_port=$(alloc_port)
openssl s_server -accept "127.0.0.1:$tls_port" -cert "$TEST_WORK/c.pem" -key "$TEST_WORK/k.pem" -www -quiet &
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$tls_port") 2> /dev/null && break; sleep 0.1; done
expect_error "untrusted TLS certificate" 'TLS certificate of https://127.0.0.1:[0-9]+ not trusted' \
  "$XBCLOUD" get --s3-endpoint="https://127.0.0.1:$tls_port" --s3-bucket="$bucket" full1
kill %% 2> /dev/null || true
expect_error "not an xbstream" 'corrupt stdin at byte 0: bad chunk magic' \
  sh -c "echo 'hello, this is not a backup stream' | '$XBCLOUD' put --s3-endpoint=http://127.0.0.1:$s3_port --s3-bucket=$bucket --progress-interval=0 notxb"
expect_error "SigV2 asked" 'signature version 2 is not supported' "$XBCLOUD" get "${S3[@]}" --s3-api-version=2 full1
rc=0
"$XBCLOUD" get "${S3[@]}" --max-backoff=0 full1 > /dev/null 2> "$TEST_WORK/err.log" || rc=$?
assert_eq 2 "$rc" "--max-backoff=0: usage error"
assert_contains "$TEST_WORK/err.log" 'max-backoff must be between 1 and 3600000' "--max-backoff=0"

step "xbcloud get killed (-9) at random moments: the extraction is never complete; a re-run is"
# full8 is 8 streams; full1 one: the get of full1 into one extraction, killed part way.
for i in 1 2 3 4; do
  d="$TEST_WORK/gk$i"
  ( trap - ERR; "$XBCLOUD" get "${S3[@]}" --parallel=2 full1 2> /dev/null | "$XBAK" --extract -C "$d" 2> "$TEST_WORK/gk$i.log" ) &
  pipe=$!
  sleep "0.$((RANDOM % 6 + 1))"
  pkill -9 -f "xbcloud get --s3-endpoint=http://127.0.0.1:$s3_port .* full1" 2> /dev/null || true
  wait "$pipe" 2> /dev/null || true
  if [ -e "$d/${META}checkpoints" ]; then
    # The get had finished before the kill: then the extraction must be whole.
    diff -r "$d" "$TEST_WORK/r1.orig" > /dev/null || fail "get killed at round $i: a complete-looking extraction differs"
    echo "round $i: the get finished before the kill; the extraction is whole"
  else
    echo "round $i: killed; no ${META}checkpoints ($(find "$d" -name '*.xbpartial' 2> /dev/null | wc -l) files left .xbpartial)"
  fi
  rm -rf "$d"
  "$XBCLOUD" get "${S3[@]}" --parallel=2 full1 2> /dev/null | "$XBAK" --extract -C "$d" 2> "$TEST_WORK/gk$i-re.log" ||
    { cat "$TEST_WORK/gk$i-re.log" >&2; fail "get | extract after a killed get"; }
  diff -r "$d" "$TEST_WORK/r1.orig" > /dev/null || fail "re-run get after a kill: extraction differs"
  rm -rf "$d"
done

step "delete removes that backup and nothing else"
"$XBCLOUD" delete "${S3[@]}" full1 2> "$TEST_WORK/del.log" || { cat "$TEST_WORK/del.log" >&2; fail "delete failed"; }
cat "$TEST_WORK/del.log"
os_py '
def count(p):
    return len(s3.list_objects_v2(Bucket=sys.argv[1], Prefix=p).get("Contents", []))
assert count("full1/") == 0, "full1 objects remain"
assert count("full8/") > 0 and count("faulty/") > 0, "other backups touched"
' "$bucket"
rc=0
"$XBCLOUD" get "${S3[@]}" full1 > /dev/null 2> "$TEST_WORK/err.log" || rc=$?
assert_ne 0 "$rc" "get after delete"
assert_contains "$TEST_WORK/err.log" 'backup full1 not found'
