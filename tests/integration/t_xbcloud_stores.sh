#!/usr/bin/env bash
# Issue 22, done-when 5: the repository round trip on Azure Blob Storage (Azurite) and Google
# Cloud Storage (fake-gcs-server), each through its own protocol, against a real server:
#   three chains (a full and two incrementals each; chain b's incrementals through 4 named pipes)
#   put on each store; list as a table and as JSON, checked against an independent client
#   (scripts/lib/store_ls.py, on each store's REST API); expire --retain-full=2: a dry run deletes nothing, then the oldest chain goes
#   entirely and nothing else; verify of every backup left; the newest chain restored straight
#   from the store (xbcloud get pipes into xbak --restore): checksums equal the source; delete.
# Then each store's own ways in and errors: Azure with a SAS token (a read-only one refused a put
# by name), a wrong key, a missing container; Google with a service account's OAuth token from a
# token endpoint on loopback, a missing bucket; another store's option refused.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_xbcloud
unset STORAGE_EMULATOR_HOST GOOGLE_APPLICATION_CREDENTIALS AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN 2> /dev/null || true
export NO_GCE_CHECK=true

src_port=$(alloc_port)
dst_port=$(alloc_port)
az_port=$(alloc_port)
gcs_port=$(alloc_port)
box=xbak-repo

step "Azurite and fake-gcs-server, a container and a bucket"
os_azurite_start "$az_port" "$TEST_WORK/azurite"
os_fakegcs_start "$gcs_port"
os_azure_container_create "$az_port" "$box"
os_gcs_bucket_create "$gcs_port" "$box"
AZ=(--storage=azure --azure-storage-account="$OS_AZ_ACCOUNT" --azure-container-name="$box"
  --azure-endpoint="http://127.0.0.1:$az_port/$OS_AZ_ACCOUNT" --progress-interval=0)
GS=(--storage=google --google-bucket="$box" --progress-interval=0)
# The account key from the environment, as a cron job would have it (never on the command line).
export AZURE_STORAGE_KEY=$OS_AZ_KEY
# fake-gcs-server takes no credentials: Google's libraries talk to the emulator that
# STORAGE_EMULATOR_HOST names without them (an endpoint given on purpose gets credentials).
xg() { STORAGE_EMULATOR_HOST=127.0.0.1:$gcs_port "$XBCLOUD" "$@"; }
xa() { "$XBCLOUD" "$@"; }

step "source server with sample data and sysbench tables"
sb_init src "$src_port"
sb_start src
sb_load_sample src
sb_load_sysbench src 2 5000
cnf=$(sb_cnf src)
write() { sb_sql src "UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id % ${1:-5} = 0"; }

# Each backup is taken once into files (one stream, or 4 for the FIFO ones) and put on both stores.
backup() { # NAME [BASE]
  local name=$1 base=${2:-} inc=()
  [ -z "$base" ] || inc=(--incremental-basedir="$TEST_WORK/lsn-$base")
  "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --extra-lsndir="$TEST_WORK/lsn-$name" \
    "${inc[@]}" > "$TEST_WORK/$name.xbs" 2> "$TEST_WORK/b-$name.log" ||
    { cat "$TEST_WORK/b-$name.log" >&2; fail "backup $name"; }
}
backup_fifo() { # NAME BASE: 4 named pipes, each drained into a file
  local name=$1 dir=$TEST_WORK/fifo-$1 i readers=()
  mkdir -p "$dir" "$TEST_WORK/$name.parts"
  for i in 0 1 2 3; do mkfifo "$dir/thread_$i"; done
  for i in 0 1 2 3; do cat "$dir/thread_$i" > "$TEST_WORK/$name.parts/$i" & readers+=($!); done
  "$XBAK" --backup --defaults-file="$cnf" --parallel=2 --stream=xbstream --fifo-streams=4 --fifo-dir="$dir" \
    --extra-lsndir="$TEST_WORK/lsn-$name" --incremental-basedir="$TEST_WORK/lsn-$2" 2> "$TEST_WORK/b-$name.log" ||
    { cat "$TEST_WORK/b-$name.log" >&2; fail "fifo backup $name"; }
  wait "${readers[@]}"
}
put() { # CLIENT NAME: from its file, or through 4 named pipes again for the FIFO ones
  local client=$1 name=$2 store=${1#x} log=$TEST_WORK/put-$1-$2.log
  if [ -d "$TEST_WORK/$name.parts" ]; then
    local dir=$TEST_WORK/putfifo-$store-$name i feeders=()
    mkdir -p "$dir"
    for i in 0 1 2 3; do mkfifo "$dir/thread_$i"; done
    for i in 0 1 2 3; do cat "$TEST_WORK/$name.parts/$i" > "$dir/thread_$i" & feeders+=($!); done
    "$client" put "${@:3}" --parallel=4 --fifo-streams=4 --fifo-dir="$dir" "host1/$name" 2> "$log" ||
      { cat "$log" >&2; fail "$client put --fifo-streams host1/$name"; }
    wait "${feeders[@]}"
  else
    "$client" put "${@:3}" --parallel=4 --read-buffer-size=4M "host1/$name" < "$TEST_WORK/$name.xbs" 2> "$log" ||
      { cat "$log" >&2; fail "$client put host1/$name"; }
  fi
}

step "three chains: a full and two incrementals each (chain b's incrementals through named pipes)"
for c in a b c; do
  backup "full-$c"
  write 3
  if [ $c = b ]; then backup_fifo "inc-$c-1" "full-$c"; else backup "inc-$c-1" "full-$c"; fi
  write 7
  if [ $c = b ]; then backup_fifo "inc-$c-2" "inc-$c-1"; else backup "inc-$c-2" "inc-$c-1"; fi
  [ $c = c ] || write 11
done
sb_checksums src > "$TEST_WORK/src.sum" # chain c holds the source as it is now

run_store() { # xa|xg STORE-OPTIONS-ARRAY-NAME azure|gcs PORT
  local x=$1 label=$3 port=$4
  local -n opts=$2
  count() { os_store_count "$label" "$port" "$box" "$1"; }
  step "[$label] put the nine backups (in chain order, a second apart: list orders chains by start)"
  for c in a b c; do
    for n in "full-$c" "inc-$c-1" "inc-$c-2"; do put "$x" "$n" "${opts[@]}"; done
    sleep 1
  done

  step "[$label] list: a table with the chains as trees"
  "$x" list "${opts[@]}" host1 > "$TEST_WORK/list-$label.txt" 2> "$TEST_WORK/list-$label.err" ||
    { cat "$TEST_WORK/list-$label.err" >&2; fail "[$label] xbcloud list"; }
  cat "$TEST_WORK/list-$label.txt" >&2
  assert_contains "$TEST_WORK/list-$label.txt" "^host1/full-a +full " "[$label] full-a listed as a full"
  assert_contains "$TEST_WORK/list-$label.txt" "^    host1/inc-b-2 +incremental " "[$label] inc-b-2 under inc-b-1"
  assert_contains "$TEST_WORK/list-$label.txt" "^9 backups \(9 complete\) in 3 chains" "[$label] the summary line"

  step "[$label] list --json agrees with the objects as the store's API lists them"
  "$x" list "${opts[@]}" --json host1 > "$TEST_WORK/list-$label.json"
  os_store_ls "$label" "$port" "$box" host1/ > "$TEST_WORK/objects-$label.json"
  python3 - "$TEST_WORK/list-$label.json" "$TEST_WORK/objects-$label.json" "$TEST_WORK" <<'PY' >&2
import json, os, re, sys
listing, objects, work = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
sizes = {"host1/" + o["Path"]: o["Size"] for o in objects}
backups = {b["name"]: b for b in listing["backups"]}
assert len(backups) == 9, sorted(backups)
for name, b in backups.items():
    data = {k: v for k, v in sizes.items() if k.startswith(name + "/") and re.search(r"\.\d{20}$", k)}
    assert b["complete"] and name + "/xbcloud.manifest" in sizes, name
    assert b["objects"] == len(data), (name, b["objects"], len(data))
    assert b["stored_bytes"] == sum(data.values()), (name, b["stored_bytes"], sum(data.values()))
    cp = open("%s/lsn-%s/%scheckpoints" % (work, name.split("/")[1], os.environ["META"])).read()
    assert "to_lsn = %d\n" % b["to_lsn"] in cp, (name, b["to_lsn"])
for c in "abc":
    assert backups["host1/inc-%s-1" % c]["base"] == "host1/full-%s" % c
    assert backups["host1/full-%s" % c]["chain"] == ["host1/full-%s" % c, "host1/inc-%s-1" % c, "host1/inc-%s-2" % c]
print("list --json: 9 backups, sizes, LSNs and chains agree with the store's listing; %d requests" % listing["requests"])
PY

  step "[$label] expire --retain-full=2: a dry run deletes nothing, then chain a goes and nothing else"
  local before
  before=$(count "")
  "$x" expire "${opts[@]}" --retain-full=2 --dry-run host1 > "$TEST_WORK/dry-$label.txt"
  assert_eq 3 "$(grep -c '^would delete host1/.*-a' "$TEST_WORK/dry-$label.txt")" "[$label] the dry run plans chain a"
  assert_eq "$before" "$(count "")" "[$label] the dry run deleted objects"
  "$x" expire "${opts[@]}" --retain-full=2 host1 > "$TEST_WORK/exp-$label.txt"
  cat "$TEST_WORK/exp-$label.txt" >&2
  for n in full-a inc-a-1 inc-a-2; do
    assert_eq 0 "$(count "host1/$n/")" "[$label] $n still has objects"
  done
  for n in full-b inc-b-1 inc-b-2 full-c inc-c-1 inc-c-2; do
    "$x" verify "${opts[@]}" "host1/$n" > "$TEST_WORK/verify-$label-$n.txt" ||
      { cat "$TEST_WORK/verify-$label-$n.txt" >&2; fail "[$label] host1/$n does not verify after expire"; }
  done
  assert_contains "$TEST_WORK/verify-$label-inc-b-2.txt" "^verify: [0-9]+ objects, [0-9]+ bytes, 0 problems" \
    "[$label] verify's summary"

  step "[$label] chain c restored straight from the store: get pipes into xbak --restore"
  local cmd=("$x" "${opts[@]}")
  restore_chain_from_store "$label" "$dst_port" "$TEST_WORK/src.sum" cmd host1/full-c host1/inc-c-1 host1/inc-c-2

  step "[$label] delete: every object of the backup goes; a get of it then fails by name"
  "$x" delete "${opts[@]}" host1/inc-c-2 2> "$TEST_WORK/del-$label.log"
  assert_eq 0 "$(count host1/inc-c-2/)" "[$label] objects left after delete"
  if "$x" get "${opts[@]}" host1/inc-c-2 > /dev/null 2> "$TEST_WORK/get-gone-$label.log"; then
    fail "[$label] a get of a deleted backup succeeded"
  fi
  assert_contains "$TEST_WORK/get-gone-$label.log" "host1/inc-c-2" "[$label] the missing backup is named"
}

run_store xa AZ azure "$az_port"
run_store xg GS gcs "$gcs_port"

step "[azure] a SAS token instead of the key; a read-only one cannot put, and says so"
sas() { # PERMISSIONS: a container SAS for $box, valid for an hour
  python3 - "$1" "$box" "$OS_AZ_ACCOUNT" "$OS_AZ_KEY" <<'PY'
import base64, hmac, hashlib, sys, time, urllib.parse
sp, container, account, key = sys.argv[1:5]
st = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 300))
se = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
fields = [sp, st, se, "/blob/%s/%s" % (account, container), "", "", "http,https", "2021-08-06", "c", "", "", "", "", "", "", ""]
sig = base64.b64encode(hmac.new(base64.b64decode(key), "\n".join(fields).encode(), hashlib.sha256).digest()).decode()
q = dict(sv="2021-08-06", sr="c", sp=sp, st=st, se=se, spr="http,https", sig=sig)
print(urllib.parse.urlencode(q))
PY
}
AZURE_STORAGE_KEY="" AZURE_STORAGE_SAS_TOKEN=$(sas racwdl) xa put "${AZ[@]}" host2/full < "$TEST_WORK/full-b.xbs" \
  2> "$TEST_WORK/put-sas.log" || { cat "$TEST_WORK/put-sas.log" >&2; fail "put with a SAS token"; }
AZURE_STORAGE_KEY="" AZURE_STORAGE_SAS_TOKEN=$(sas rl) xa verify "${AZ[@]}" host2/full > /dev/null ||
  fail "verify with a read-only SAS token"
if AZURE_STORAGE_KEY="" AZURE_STORAGE_SAS_TOKEN=$(sas rl) xa put "${AZ[@]}" host2/again < "$TEST_WORK/inc-a-1.xbs" \
  2> "$TEST_WORK/put-ro.log"; then
  fail "a put with a read-only SAS token succeeded"
fi
cat "$TEST_WORK/put-ro.log" >&2
assert_contains "$TEST_WORK/put-ro.log" "HTTP 403 AuthorizationPermissionMismatch" "the refusal is named"

step "[azure] a wrong key and a missing container: one line, non-zero, no secret"
wrong=$(printf 'x%.0s' $(seq 64) | base64 -w0)
if AZURE_STORAGE_KEY=$wrong xa list "${AZ[@]}" 2> "$TEST_WORK/az-wrong.log"; then fail "a wrong key listed"; fi
cat "$TEST_WORK/az-wrong.log" >&2
assert_contains "$TEST_WORK/az-wrong.log" "HTTP 403 AuthorizationFailure.*check the account name and key" "a wrong key"
if grep -qF "$wrong" "$TEST_WORK/az-wrong.log"; then fail "the key was printed"; fi
if xa list "${AZ[@]/--azure-container-name=$box/--azure-container-name=nosuch}" 2> "$TEST_WORK/az-nc.log"; then
  fail "a missing container listed"
fi
assert_contains "$TEST_WORK/az-nc.log" "container 'nosuch' does not exist" "a missing container"

step "[google] a service account's OAuth token from a token endpoint on loopback"
tok_port=$(alloc_port)
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TEST_WORK/sa.pem" 2> /dev/null
python3 - "$TEST_WORK/sa.pem" "http://127.0.0.1:$tok_port/token" > "$TEST_WORK/sa.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "client_email": "backup@xbak-test.iam.gserviceaccount.com",
                  "private_key": open(sys.argv[1]).read(), "private_key_id": "k1", "token_uri": sys.argv[2]}))
PY
python3 - "$tok_port" "$TEST_WORK/token-requests.log" <<'PY' &
import http.server, sys, urllib.parse
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        with open(log, "a") as f:
            f.write("%s %s\n" % (form["grant_type"][0], form["assertion"][0].count(".")))
        body = b'{"access_token":"ya29.test-token","expires_in":3600,"token_type":"Bearer"}'
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", port), H)
open(log + ".ready", "w").close()
srv.serve_forever()
PY
tok_pid=$!
for _ in $(seq 50); do [ -e "$TEST_WORK/token-requests.log.ready" ] && break; sleep 0.1; done
"$XBCLOUD" put "${GS[@]}" --google-endpoint="http://127.0.0.1:$gcs_port" --google-credentials="$TEST_WORK/sa.json" host2/sa < "$TEST_WORK/inc-a-1.xbs" \
  2> "$TEST_WORK/put-sa.log" || { cat "$TEST_WORK/put-sa.log" >&2; fail "put with a service account"; }
assert_contains "$TEST_WORK/put-sa.log" "as service account backup@xbak-test.iam.gserviceaccount.com" "the account is named"
assert_contains "$TEST_WORK/token-requests.log" "^urn:ietf:params:oauth:grant-type:jwt-bearer 2$" "a JWT was exchanged"
if grep -q "ya29.test-token" "$TEST_WORK/put-sa.log"; then fail "the token was printed"; fi
"$XBCLOUD" verify "${GS[@]}" --google-endpoint="http://127.0.0.1:$gcs_port" --google-credentials="$TEST_WORK/sa.json" \
  host2/sa > "$TEST_WORK/verify-sa.txt" 2>&1 ||
  { cat "$TEST_WORK/verify-sa.txt" >&2; fail "verify (service account)"; }
assert_eq 2 "$(wc -l < "$TEST_WORK/token-requests.log")" "one token per command"
kill "$tok_pid"
wait "$tok_pid" 2> /dev/null || true

step "[google] HMAC keys: the XML API, which is S3's protocol (here MinIO's); AWS_SESSION_TOKEN is not sent"
s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port) os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$box"
HM=(--storage=google --google-bucket="$box" --google-endpoint="http://127.0.0.1:$s3_port"
  --google-access-key="$OS_ACCESS_KEY" --google-secret-key="$OS_SECRET_KEY" --progress-interval=0)
# A session token in the environment would make MinIO refuse the request (InvalidTokenId).
AWS_SESSION_TOKEN=not-for-google "$XBCLOUD" put "${HM[@]}" host3/full < "$TEST_WORK/inc-a-1.xbs" 2> "$TEST_WORK/put-hmac.log" ||
  { cat "$TEST_WORK/put-hmac.log" >&2; fail "put with Google HMAC keys"; }
"$XBCLOUD" verify "${HM[@]}" host3/full > /dev/null || fail "verify with Google HMAC keys"

step "[google] a missing bucket, and another store's option: named"
if xg list "${GS[@]/--google-bucket=$box/--google-bucket=nosuch}" 2> "$TEST_WORK/gs-nb.log"; then
  fail "a missing bucket listed"
fi
assert_contains "$TEST_WORK/gs-nb.log" "bucket 'nosuch' does not exist" "a missing bucket"
if xg list "${GS[@]}" --s3-bucket=x 2> "$TEST_WORK/mixed.log"; then fail "an S3 option was taken by --storage=google"; fi
assert_contains "$TEST_WORK/mixed.log" "--s3-bucket is not an option of --storage=google" "the mixed option"
if xa put "${AZ[@]}" --s3-object-lock-mode=COMPLIANCE --s3-object-lock-retain-days=1 host2/x < /dev/null \
  2> "$TEST_WORK/lock.log"; then
  fail "Object Lock was taken by --storage=azure"
fi
assert_contains "$TEST_WORK/lock.log" "not available with --storage=azure" "Object Lock refused by name"
assert_eq 0 "$(os_store_count azure "$az_port" "$box" host2/x/)" "a refused put wrote"
