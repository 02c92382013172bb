#!/usr/bin/env bash
# Issue 22 (the bucket as a backup repository), against a real MinIO and a real server:
#   1. three chains (a full and two incrementals each, one chain through --fifo-streams) under a
#      prefix; xbcloud list as a table and as JSON, checked against the objects themselves (boto3);
#      expire --retain-full=2: a dry run deletes nothing; killed with SIGKILL midway and run again,
#      the oldest chain goes entirely and nothing else; an expire racing a put leaves the put's
#      backup alone, and the put completes and verifies.
#   2. an incremental taken on a host whose only copy of its base is in the bucket (xbcloud get
#      NAME followed by the checkpoints file name), restored with its full from the bucket: checksums equal.
#   4. a put killed at about half of its stream and run again: it sends only what was missing
#      (counted against the objects stored), and the backup verifies and restores.
#   6. bad input: foreign objects in the bucket and inside the prefix, a manifest edited by hand,
#      a base directory that holds no backup: clear errors, nothing deleted that was not asked.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud

src_port=$(alloc_port)
dst_port=$(alloc_port)
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
bucket=xbak-repo

step "MinIO and a bucket with an object that is not a backup"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0)
os_py 's3.put_object(Bucket=sys.argv[1], Key="README.txt", Body=b"not a backup")
s3.put_object(Bucket=sys.argv[1], Key="host1/notes/today.txt", Body=b"not a backup either")' "$bucket"

step "source server under sysbench"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
cnf=$(sb_cnf src)

# backup NAME [BASE_LSNDIR] [xbak options...]: xbak --backup | xbcloud put host1/NAME, keeping
# the checkpoints in $TEST_WORK/lsn-NAME for the next incremental.
backup() {
  local name=$1 base=${2:-}
  local inc=()
  [ -z "$base" ] || inc=(--incremental-basedir="$base")
  "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --extra-lsndir="$TEST_WORK/lsn-$name" \
    "${inc[@]}" "${@:3}" 2> "$TEST_WORK/b-$name.log" |
    "$XBCLOUD" put "${S3[@]}" --parallel=4 --read-buffer-size=1M "host1/$name" 2> "$TEST_WORK/put-$name.log" ||
    { cat "$TEST_WORK/b-$name.log" "$TEST_WORK/put-$name.log" >&2; fail "backup | xbcloud put host1/$name"; }
}
# The same through 4 named pipes on each side.
backup_fifo() {
  local name=$1 base=$2 dir=$TEST_WORK/fifo-$1
  mkdir -p "$dir"
  "$XBCLOUD" put "${S3[@]}" --parallel=4 --fifo-streams=4 --fifo-dir="$dir" "host1/$name" \
    2> "$TEST_WORK/put-$name.log" &
  local put=$!
  "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --fifo-streams=4 --fifo-dir="$dir" \
    --extra-lsndir="$TEST_WORK/lsn-$name" --incremental-basedir="$base" 2> "$TEST_WORK/b-$name.log" ||
    { cat "$TEST_WORK/b-$name.log" >&2; fail "fifo backup $name"; }
  wait "$put" || { cat "$TEST_WORK/put-$name.log" >&2; fail "xbcloud put --fifo-streams host1/$name"; }
}
write() { sb_sql src "UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % ${1:-5} = 0"; }

step "three chains: a full and two incrementals each (chain b's incrementals through named pipes)"
for c in a b c; do
  backup "full-$c"
  write 3
  if [ "$c" = b ]; then backup_fifo "inc-$c-1" "$TEST_WORK/lsn-full-$c"; else backup "inc-$c-1" "$TEST_WORK/lsn-full-$c"; fi
  write 7
  if [ "$c" = b ]; then backup_fifo "inc-$c-2" "$TEST_WORK/lsn-inc-$c-1"; else backup "inc-$c-2" "$TEST_WORK/lsn-inc-$c-1"; fi
  write 11
  sleep 1 # distinct start seconds, so the order of the chains is the order of the puts
done

step "list: a table with the chains as trees"
"$XBCLOUD" list "${S3[@]}" host1 > "$TEST_WORK/list.txt" 2> "$TEST_WORK/list.err" ||
  { cat "$TEST_WORK/list.err" >&2; fail "xbcloud list"; }
cat "$TEST_WORK/list.txt" >&2
assert_contains "$TEST_WORK/list.txt" "^host1/full-a +full " "full-a listed as a full"
assert_contains "$TEST_WORK/list.txt" "^  host1/inc-a-1 +incremental " "inc-a-1 under its full"
assert_contains "$TEST_WORK/list.txt" "^    host1/inc-b-2 +incremental " "inc-b-2 under inc-b-1"
assert_contains "$TEST_WORK/list.txt" "^9 backups \(9 complete\) in 3 chains; 1 objects outside any backup" "the summary line"

step "list --json agrees with the objects themselves (boto3)"
"$XBCLOUD" list "${S3[@]}" --json host1 > "$TEST_WORK/list.json"
os_py '
import json
bucket, path = sys.argv[1], sys.argv[2]
listing = json.load(open(path))
objects = {}
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="host1/"):
    for o in page.get("Contents", []):
        objects[o["Key"]] = o["Size"]
backups = {b["name"]: b for b in listing["backups"]}
assert len(backups) == 9, sorted(backups)
assert listing["foreign_objects"] == 1, listing["foreign_objects"]
for name, b in backups.items():
    data = {k: v for k, v in objects.items() if k.startswith(name + "/") and k[-21:-20] == "." and k[-20:].isdigit()}
    assert b["complete"] and (name + "/xbcloud.manifest") in objects, name
    assert b["objects"] == len(data), (name, b["objects"], len(data))
    assert b["stored_bytes"] == sum(data.values()), (name, b["stored_bytes"], sum(data.values()))
    cp = s3.get_object(Bucket=bucket, Key=name + "/" + os.environ["META"] + "checkpoints.00000000000000000000")["Body"].read()
    assert ("to_lsn = %d\n" % b["to_lsn"]).encode() in cp, (name, b["to_lsn"])
    full = name.split("/")[1].startswith("full")
    assert b["type"] == ("full" if full else "incremental"), name
for c in "abc":
    assert backups["host1/inc-%s-1" % c]["base"] == "host1/full-%s" % c
    assert backups["host1/inc-%s-2" % c]["base"] == "host1/inc-%s-1" % c
    assert backups["host1/full-%s" % c]["chain"] == ["host1/full-%s" % c, "host1/inc-%s-1" % c, "host1/inc-%s-2" % c]
# One manifest read per backup; the levels that are not backups (host1/, host1/notes/) asked for
# a manifest and listed: never a request per object.
assert listing["requests"] == 9 + 4, listing["requests"]
print("list --json: 9 backups, sizes, LSNs and chains agree with the objects; %d requests" % listing["requests"])
' "$bucket" "$TEST_WORK/list.json" >&2

objects_of() { # PREFIX: how many objects the bucket holds under PREFIX
  os_py 'print(sum(len(p.get("Contents", [])) for p in s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[1], Prefix=sys.argv[2])))' "$bucket" "$1"
}

step "expire --retain-full=2 --dry-run deletes nothing"
before=$(objects_of "")
"$XBCLOUD" expire "${S3[@]}" --retain-full=2 --dry-run host1 > "$TEST_WORK/dry.txt"
cat "$TEST_WORK/dry.txt" >&2
assert_eq 3 "$(grep -c '^would delete host1/' "$TEST_WORK/dry.txt")" "the dry run plans chain a"
assert_contains "$TEST_WORK/dry.txt" "^would delete host1/inc-a-2 " "chain a planned"
assert_eq "$before" "$(objects_of "")" "the dry run deleted objects"

step "an expire racing a put: the put's backup is left alone and completes"
# An incremental of chain c: finished before expire runs again, it must not change what is kept.
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --incremental-basedir="$TEST_WORK/lsn-inc-c-2" \
  > "$TEST_WORK/race.xbs" 2> "$TEST_WORK/b-race.log"
half=$(( $(stat -c %s "$TEST_WORK/race.xbs") / 2 ))
{ head -c "$half" "$TEST_WORK/race.xbs"; sleep 6; tail -c +$((half + 1)) "$TEST_WORK/race.xbs"; } |
  "$XBCLOUD" put "${S3[@]}" --parallel=2 --read-buffer-size=1M host1/racing 2> "$TEST_WORK/put-race.log" &
race_put=$!
for _ in $(seq 50); do
  [ "$(objects_of host1/racing/)" -gt 2 ] && break
  sleep 0.1
done
"$XBCLOUD" list "${S3[@]}" host1 > "$TEST_WORK/list-race.txt"
assert_contains "$TEST_WORK/list-race.txt" "^host1/racing .* incomplete$" "list shows the put under way as incomplete"
"$XBCLOUD" expire "${S3[@]}" --retain-full=2 --dry-run host1 > "$TEST_WORK/exp-race.txt"
assert_contains "$TEST_WORK/exp-race.txt" "^keep host1/racing .*put not finished" "expire leaves the put under way alone"

step "expire killed with SIGKILL at several points, then run again"
# After each kill, what list shows complete must be whole (verify), and nothing outside chain a
# may be touched; the cuts land in reading the catalog, between backups and inside one.
for delay in 0.03 0.06 0.1 0.15 0.2 0.3; do
  "$XBCLOUD" expire "${S3[@]}" --retain-full=2 host1 > /dev/null 2> "$TEST_WORK/exp-cut.log" &
  exp=$!
  sleep "$delay"
  kill -9 "$exp" 2>/dev/null || true
  wait "$exp" 2>/dev/null || true
  "$XBCLOUD" list "${S3[@]}" --json host1 > "$TEST_WORK/list-cut.json"
  os_py '
import json
states = {b["name"]: b["state"] for b in json.load(open(sys.argv[1]))["backups"]}
for n in ("full-b", "inc-b-1", "inc-b-2", "full-c", "inc-c-1", "inc-c-2"):
    assert states.get("host1/" + n) == "complete", (n, states)
print(" ".join("%s=%s" % (k[6:], v) for k, v in sorted(states.items()) if "-a" in k) or "chain a gone")
' "$TEST_WORK/list-cut.json" >&2
  for n in full-a inc-a-1 inc-a-2; do
    if grep -q "\"name\": \"host1/$n\", \"type\": \"[a-z]*\", \"state\": \"complete\"" "$TEST_WORK/list-cut.json"; then
      "$XBCLOUD" verify "${S3[@]}" "host1/$n" > /dev/null || fail "host1/$n is listed complete but is not whole after a kill at ${delay}s"
    fi
  done
done
"$XBCLOUD" expire "${S3[@]}" --retain-full=2 host1 > "$TEST_WORK/exp2.txt" 2> "$TEST_WORK/exp2.log" ||
  { cat "$TEST_WORK/exp2.log" >&2; fail "expire after a kill"; }
cat "$TEST_WORK/exp2.txt" >&2
assert_contains "$TEST_WORK/exp2.txt" "^keep host1/racing " "the racing put's backup is kept"
for n in full-a inc-a-1 inc-a-2; do
  assert_eq 0 "$(objects_of "host1/$n/")" "host1/$n was not deleted entirely"
done
for n in full-b inc-b-1 inc-b-2 full-c inc-c-1 inc-c-2; do
  "$XBCLOUD" verify "${S3[@]}" "host1/$n" > /dev/null || fail "host1/$n damaged by expire"
done
assert_eq 1 "$(objects_of README.txt)" "a foreign object at the top was deleted"
assert_eq 1 "$(objects_of host1/notes/)" "a foreign object inside the prefix was deleted"
wait "$race_put" || { cat "$TEST_WORK/put-race.log" >&2; fail "the put racing expire"; }
"$XBCLOUD" verify "${S3[@]}" host1/racing > /dev/null || fail "the put that raced expire does not verify"

step "an incremental on a host that kept nothing: its base's checkpoints come from the bucket"
write 2
mkdir -p "$TEST_WORK/base-from-bucket"
"$XBCLOUD" get "${S3[@]}" host1/inc-c-2 ${META}checkpoints 2> "$TEST_WORK/get-cp.log" |
  "$XBAK" --extract -C "$TEST_WORK/base-from-bucket" 2> "$TEST_WORK/x-cp.log" ||
  { cat "$TEST_WORK/get-cp.log" "$TEST_WORK/x-cp.log" >&2; fail "xbcloud get NAME ${META}checkpoints"; }
assert_eq "${META}checkpoints" "$(ls "$TEST_WORK/base-from-bucket")" "only the checkpoints were fetched"
backup inc-c-3 "$TEST_WORK/base-from-bucket"
sb_checksums src > "$TEST_WORK/src-c3.sum"
"$XBCLOUD" list "${S3[@]}" --json host1 > "$TEST_WORK/list-c3.json"
# Its base is a backup that ends where it starts: inc-c-2, or on a server this quiet (no checkpoint
# in between) a later one that ends at the same LSN, which serves as well.
os_py 'import json
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["backups"]}
i = b["host1/inc-c-3"]
assert i["base"] in b and b[i["base"]]["to_lsn"] == i["from_lsn"], i
assert i["from_lsn"] == b["host1/inc-c-2"]["to_lsn"], i' "$TEST_WORK/list-c3.json"
cmd=("$XBCLOUD" "${S3[@]}")
restore_chain_from_store c3 "$dst_port" "$TEST_WORK/src-c3.sum" cmd host1/full-c host1/inc-c-1 host1/inc-c-2 host1/inc-c-3

step "a put killed at half of its stream, run again: only what was missing is sent"
"$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream > "$TEST_WORK/resume.xbs" 2> "$TEST_WORK/b-res.log"
half=$(( $(stat -c %s "$TEST_WORK/resume.xbs") / 2 ))
mkfifo "$TEST_WORK/half.fifo"
{ head -c "$half" "$TEST_WORK/resume.xbs"; exec sleep 60; } > "$TEST_WORK/half.fifo" &
feeder=$!
"$XBCLOUD" put "${S3[@]}" --parallel=4 --read-buffer-size=256K host1/resumed < "$TEST_WORK/half.fifo" \
  2> "$TEST_WORK/put-res1.log" &
res_put=$!
# Until what it read has been stored: nothing more comes for a minute.
prev=-1
for _ in $(seq 100); do
  n=$(objects_of host1/resumed/)
  [ "$n" -gt 4 ] && [ "$n" = "$prev" ] && break
  prev=$n
  sleep 0.5
done
kill -9 "$res_put" "$feeder"
wait "$res_put" "$feeder" 2>/dev/null || true
stored=$(objects_of host1/resumed/)
[ "$(objects_of host1/resumed/xbcloud.manifest)" = 0 ] || fail "a killed put left a manifest"
"$XBCLOUD" put "${S3[@]}" --parallel=4 --read-buffer-size=256K host1/resumed < "$TEST_WORK/resume.xbs" \
  2> "$TEST_WORK/put-res2.log" || { cat "$TEST_WORK/put-res2.log" >&2; fail "the resumed put"; }
cat "$TEST_WORK/put-res2.log" >&2
assert_contains "$TEST_WORK/put-res2.log" "resuming an interrupted put \(${stored} objects stored\)" "the resume names what it found"
line=$(grep "put host1/resumed: done" "$TEST_WORK/put-res2.log")
sent=$(sed -E 's/.* uploaded in ([0-9]+) of ([0-9]+) objects.*/\1/' <<< "$line")
total=$(sed -E 's/.* uploaded in ([0-9]+) of ([0-9]+) objects.*/\2/' <<< "$line")
skipped=$(sed -E 's/.*, ([0-9]+) objects \(.*\) already stored.*/\1/' <<< "$line")
assert_eq "$total" "$((sent + skipped))" "sent + skipped = all objects"
# The data objects the killed put stored with their sidecars (each a pair), less the started
# marker, are what the second put did not send again (the last one may have been cut).
[ "$skipped" -ge $(( (stored - 1) / 2 - 1 )) ] || fail "only $skipped of the $stored objects stored were skipped"
[ "$skipped" -gt 0 ] && [ "$sent" -gt 0 ] || fail "expected some objects skipped and some sent ($skipped, $sent)"
"$XBCLOUD" verify "${S3[@]}" host1/resumed > /dev/null || fail "the resumed backup does not verify"
"$XBCLOUD" get "${S3[@]}" host1/resumed 2> /dev/null > "$TEST_WORK/resumed.xbs"
mkdir "$TEST_WORK/x-orig" "$TEST_WORK/x-resumed"
"$XBAK" --extract -C "$TEST_WORK/x-orig" < "$TEST_WORK/resume.xbs" 2> /dev/null
"$XBAK" --extract -C "$TEST_WORK/x-resumed" < "$TEST_WORK/resumed.xbs" 2> /dev/null
diff -r "$TEST_WORK/x-orig" "$TEST_WORK/x-resumed" > /dev/null || fail "the resumed backup's files differ from the stream"

step "bad input: a manifest edited by hand, a base that is not a backup"
os_py 'b, k = sys.argv[1], "host1/full-b/xbcloud.manifest"
m = s3.get_object(Bucket=b, Key=k)["Body"].read().replace(b"\nstarted ", b"\nbegun ", 1)
s3.put_object(Bucket=b, Key=k, Body=m)' "$bucket"
"$XBCLOUD" list "${S3[@]}" host1 > "$TEST_WORK/list-bad.txt"
assert_contains "$TEST_WORK/list-bad.txt" "^host1/full-b .*damaged manifest" "the edited manifest is reported"
"$XBCLOUD" list "${S3[@]}" --json host1 | grep -q '"problem": "host1/full-b/xbcloud.manifest: manifest line 2' ||
  fail "list --json does not say what is wrong with the manifest"
before=$(objects_of host1/)
"$XBCLOUD" expire "${S3[@]}" --retain-full=1 host1 --dry-run > "$TEST_WORK/exp-bad.txt"
assert_contains "$TEST_WORK/exp-bad.txt" "^keep host1/full-b .*manifest unreadable" "expire leaves a damaged backup alone"
assert_contains "$TEST_WORK/exp-bad.txt" "^keep host1/inc-b-1 .*base is missing" "and its incrementals"
if "$XBCLOUD" verify "${S3[@]}" host1/full-b > "$TEST_WORK/verify-bad.txt" 2>&1; then fail "verify passed an edited manifest"; fi
assert_eq "$before" "$(objects_of host1/)" "a dry run deleted objects"
mkdir -p "$TEST_WORK/not-a-backup"
if "$XBAK" --backup --defaults-file="$cnf" --stream=xbstream --incremental-basedir="$TEST_WORK/not-a-backup" \
  > /dev/null 2> "$TEST_WORK/b-bad.log"; then
  fail "an incremental of a directory without a backup was taken"
fi
assert_contains "$TEST_WORK/b-bad.log" "not-a-backup" "the error names the directory"
if "$XBCLOUD" expire "${S3[@]}" --retain-full=0 host1 2> "$TEST_WORK/exp0.log"; then fail "--retain-full=0 accepted"; fi
assert_contains "$TEST_WORK/exp0.log" "retain-full must be at least 1" "a clear refusal"
if "$XBCLOUD" list "${S3[@]}" ../x 2> "$TEST_WORK/list-bad-prefix.log"; then fail "a bad prefix accepted"; fi
assert_contains "$TEST_WORK/list-bad-prefix.log" "PREFIX" "the bad prefix is named"
assert_eq 1 "$(objects_of README.txt)" "a foreign object was deleted"
