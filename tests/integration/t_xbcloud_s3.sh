#!/usr/bin/env bash
# Issue 22 (credentials and S3 options), against real MinIO servers on loopback:
#   3. credentials as AWS tools find them: a profile of the shared credentials file, a
#      credential_process, STS AssumeRole against MinIO's own STS (a role profile with a
#      source_profile), the EC2 instance metadata service (IMDSv2, a fake on loopback), and
#      temporary credentials that expire during a long put and are renewed (counted); wrong and
#      expired credentials: one line, exit != 0, no secret printed.
#      Server-side encryption over TLS (MinIO with a self-signed certificate, verified by default):
#      SSE-C round trip (boto3 sees the customer algorithm; a get without the key fails clearly),
#      SSE-S3 (AES256) round trip.
#   1. (part) S3 Object Lock: a backup put with --s3-object-lock-mode=GOVERNANCE cannot be deleted by
#      expire nor delete, nor by a plain S3 client deleting its versions; list shows it locked.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${XBCLOUD:=$XBAK_BUILD/xbcloud}"
: "${XBAK:=$XBAK_BUILD/xbak}"
[ -x "$XBCLOUD" ] || fail "xbcloud binary not found at $XBCLOUD"
. "$XBAK_SRC/scripts/lib/objstore.sh"
SB_ON_EXIT+=(os_cleanup)

s3_port=$(alloc_port)
OS_CONSOLE_PORT=$(alloc_port)
tls_port=$(alloc_port)
tls_console=$(alloc_port)
imds_port=$(alloc_port)
bucket=xbak-creds
secret=S3cr3t-must-not-leak

step "MinIO, a bucket, and a stream of a few files (mbstream -c)"
os_minio_start "$s3_port" "$TEST_WORK/minio"
os_bucket_create "$s3_port" "$bucket"
export OS_ENDPOINT=http://127.0.0.1:$s3_port
mkdir -p "$TEST_WORK/files/db"
for i in 1 2 3; do head -c $((3 << 20)) /dev/urandom > "$TEST_WORK/files/db/t$i.ibd"; done
echo "backup_type = full-backuped" > "$TEST_WORK/files/xtrabackup_checkpoints"
(cd "$TEST_WORK/files" && mbstream -c db/t1.ibd db/t2.ibd db/t3.ibd xtrabackup_checkpoints) > "$TEST_WORK/s.xbs"
# Every run below starts from an empty environment for AWS: no keys, a HOME without ~/.aws, no
# instance metadata service unless a step sets one.
mkdir -p "$TEST_WORK/home"
NOAWS=(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE
  HOME="$TEST_WORK/home" AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE="$TEST_WORK/aws-config"
  AWS_SHARED_CREDENTIALS_FILE="$TEST_WORK/aws-credentials")
S3=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket="$bucket" --progress-interval=0 --no-defaults)
roundtrip() { # LABEL NAME [env...] -- [xbcloud options...]: put s.xbs as NAME, get it back, compare
  local label=$1 name=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  "${NOAWS[@]}" "${envs[@]}" "$XBCLOUD" put "${S3[@]}" "$@" "$name" < "$TEST_WORK/s.xbs" 2> "$TEST_WORK/put-$name.log" ||
    { cat "$TEST_WORK/put-$name.log" >&2; fail "$label: put"; }
  "${NOAWS[@]}" "${envs[@]}" "$XBCLOUD" get "${S3[@]}" "$@" "$name" 2> "$TEST_WORK/get-$name.log" > "$TEST_WORK/got.xbs" ||
    { cat "$TEST_WORK/get-$name.log" >&2; fail "$label: get"; }
  cmp -s "$TEST_WORK/s.xbs" "$TEST_WORK/got.xbs" || fail "$label: the stream came back different"
  echo "$label: put and get round trip" >&2
}
expect_error() { # LABEL REGEX CMD...: exit != 0, one line on stderr matching REGEX, no secret
  local label=$1 regex=$2 rc=0
  shift 2
  "$@" < "$TEST_WORK/s.xbs" > /dev/null 2> "$TEST_WORK/err.log" || rc=$?
  [ "$rc" -ne 0 ] || fail "$label: exit 0"
  [ "$(wc -l < "$TEST_WORK/err.log")" -eq 1 ] || { cat "$TEST_WORK/err.log" >&2; fail "$label: not one line"; }
  grep -qE "$regex" "$TEST_WORK/err.log" || { cat "$TEST_WORK/err.log" >&2; fail "$label: message does not match $regex"; }
  if grep -q -e "$secret" -e "$OS_SECRET_KEY" "$TEST_WORK/err.log"; then fail "$label: secret printed"; fi
  echo "$label: $(cat "$TEST_WORK/err.log")" >&2
}

step "a profile of the shared credentials file (AWS_PROFILE and --s3-profile)"
cat > "$TEST_WORK/aws-credentials" << EOF
[backup]
aws_access_key_id = $OS_ACCESS_KEY
aws_secret_access_key = $OS_SECRET_KEY
[wrong]
aws_access_key_id = $OS_ACCESS_KEY
aws_secret_access_key = $secret
EOF
chmod 600 "$TEST_WORK/aws-credentials"
roundtrip "AWS_PROFILE=backup" p1 AWS_PROFILE=backup -- --parallel=4
roundtrip "--s3-profile=backup" p2 -- --s3-profile=backup
expect_error "a wrong secret in a profile" 'HTTP 403' "${NOAWS[@]}" "$XBCLOUD" put "${S3[@]}" --s3-profile=wrong w1
expect_error "a profile that is not there" "AWS profile 'nobody' is not in" "${NOAWS[@]}" "$XBCLOUD" list "${S3[@]}" --s3-profile=nobody
expect_error "no credentials at all" 'no S3 credentials' "${NOAWS[@]}" "$XBCLOUD" list "${S3[@]}"

step "credential_process"
cat > "$TEST_WORK/creds.sh" << EOF
#!/bin/sh
echo x >> "$TEST_WORK/process-calls"
printf '{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "%s"}' "$OS_ACCESS_KEY" "$OS_SECRET_KEY"
EOF
cat > "$TEST_WORK/expired.sh" << EOF
#!/bin/sh
printf '{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "$secret", "SessionToken": "t", "Expiration": "2020-01-01T00:00:00Z"}' "$OS_ACCESS_KEY"
EOF
chmod +x "$TEST_WORK/creds.sh" "$TEST_WORK/expired.sh"
cat > "$TEST_WORK/aws-config" << EOF
[profile proc]
credential_process = $TEST_WORK/creds.sh
[profile old]
credential_process = $TEST_WORK/expired.sh
[profile role]
role_arn = arn:xbak:iam::000000000000:role/backup
source_profile = backup
role_session_name = xbak-test
[profile badrole]
role_arn = arn:xbak:iam::000000000000:role/backup
source_profile = wrong
EOF
roundtrip "credential_process" c1 AWS_PROFILE=proc --
expect_error "expired credentials" 'expired' "${NOAWS[@]}" "$XBCLOUD" put "${S3[@]}" --s3-profile=old e1

step "STS AssumeRole against MinIO's STS: a role profile with a source_profile"
roundtrip "AssumeRole" r1 AWS_PROFILE=role AWS_ENDPOINT_URL_STS="http://127.0.0.1:$s3_port" --
assert_contains "$TEST_WORK/put-r1.log" "temporary S3 credentials from AWS profile role \(STS AssumeRole arn:xbak" \
  "put used the role's temporary credentials"
expect_error "AssumeRole with a wrong source secret" 'AssumeRole|403|InvalidClientTokenId|SignatureDoesNotMatch' \
  "${NOAWS[@]}" AWS_ENDPOINT_URL_STS="http://127.0.0.1:$s3_port" "$XBCLOUD" list "${S3[@]}" --s3-profile=badrole
step "temporary credentials that expire during a long put are renewed"
# Real STS credentials of MinIO (which lasts at least 15 minutes), declared to expire 4 s from
# now; with a renewal margin of 2 s a put of about 10 s must fetch them again several times.
cat > "$TEST_WORK/sts.sh" << EOF
#!/bin/sh
echo x >> "$TEST_WORK/sts-calls"
AWS_ACCESS_KEY_ID=$OS_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$OS_SECRET_KEY AWS_DEFAULT_REGION=us-east-1 \\
  aws sts assume-role --endpoint-url http://127.0.0.1:$s3_port --role-arn arn:xbak:iam::000000000000:role/x \\
  --role-session-name renew --duration-seconds 900 --output json |
  python3 -c 'import json, sys, time
c = json.load(sys.stdin)["Credentials"]
print(json.dumps({"Version": 1, "AccessKeyId": c["AccessKeyId"], "SecretAccessKey": c["SecretAccessKey"],
  "SessionToken": c["SessionToken"], "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 4))}))'
EOF
chmod +x "$TEST_WORK/sts.sh"
printf '[profile renew]\ncredential_process = %s\n' "$TEST_WORK/sts.sh" >> "$TEST_WORK/aws-config"
: > "$TEST_WORK/sts-calls"
python3 "$XBAK_SRC/tests/integration/slow_reader.py" 1MiB < "$TEST_WORK/s.xbs" |
  "${NOAWS[@]}" AWS_PROFILE=renew XBCLOUD_CREDENTIALS_MARGIN=2 "$XBCLOUD" put "${S3[@]}" --read-buffer-size=256K \
  renewed 2> "$TEST_WORK/put-renewed.log" || { cat "$TEST_WORK/put-renewed.log" >&2; fail "the long put with renewals"; }
calls=$(wc -l < "$TEST_WORK/sts-calls")
echo "credential_process ran $calls times during a put of $(grep -o 'took [0-9.]*s' "$TEST_WORK/put-renewed.log" || echo 'about 10 s')" >&2
[ "$calls" -ge 3 ] || fail "the temporary credentials were renewed only $((calls - 1)) times during the put"
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" verify "${S3[@]}" renewed > /dev/null || fail "the renewed put does not verify"

step "the EC2 instance metadata service (IMDSv2, a fake on loopback)"
cat > "$TEST_WORK/imds.py" << 'EOF'
import http.server, json, sys, time
port, key, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
TOKEN = "imds-session-token"
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, code, body):
        self.send_response(code); self.end_headers(); self.wfile.write(body.encode())
    def do_PUT(self):
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(200, TOKEN)
        self.reply(403, "")
    def do_GET(self):
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN: return self.reply(401, "")  # IMDSv1 refused
        if self.path == "/latest/meta-data/iam/security-credentials/": return self.reply(200, "backup-role")
        if self.path == "/latest/meta-data/iam/security-credentials/backup-role":
            exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
            return self.reply(200, json.dumps({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": key,
                                               "SecretAccessKey": secret, "Token": "", "Expiration": exp}))
        self.reply(404, "")
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
python3 "$TEST_WORK/imds.py" "$imds_port" "$OS_ACCESS_KEY" "$OS_SECRET_KEY" &
imds_pid=$!
_OS_PIDS+=("$imds_pid")
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$imds_port") 2>/dev/null && break; sleep 0.1; done
roundtrip "IMDSv2" m1 AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$imds_port" --
assert_contains "$TEST_WORK/put-m1.log" "instance metadata service at http://127.0.0.1:$imds_port" "credentials from IMDS"
kill "$imds_pid"

step "S3 Object Lock: a locked backup that expire and delete cannot remove"
os_py 's3.create_bucket(Bucket="xbak-locked", ObjectLockEnabledForBucket=True)'
L=(--s3-endpoint="http://127.0.0.1:$s3_port" --s3-bucket=xbak-locked --progress-interval=0 --no-defaults)
(cd "$TEST_WORK/files" && printf 'backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 100\nlast_lsn = 100\n' > xtrabackup_checkpoints &&
  mbstream -c db/t1.ibd xtrabackup_checkpoints) > "$TEST_WORK/full1.xbs"
(cd "$TEST_WORK/files" && printf 'backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 200\nlast_lsn = 200\n' > xtrabackup_checkpoints &&
  mbstream -c db/t2.ibd xtrabackup_checkpoints) > "$TEST_WORK/full2.xbs"
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" put "${L[@]}" --s3-object-lock-mode=GOVERNANCE \
  --s3-object-lock-retain-days=1 old-full < "$TEST_WORK/full1.xbs" 2> "$TEST_WORK/put-lock.log" ||
  { cat "$TEST_WORK/put-lock.log" >&2; fail "put with Object Lock"; }
sleep 1
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" put "${L[@]}" new-full < "$TEST_WORK/full2.xbs" 2> /dev/null
os_py 'r = s3.get_object_retention(Bucket="xbak-locked", Key="old-full/xbcloud.manifest")["Retention"]
assert r["Mode"] == "GOVERNANCE", r
print("the store holds old-full/xbcloud.manifest under", r["Mode"], "until", r["RetainUntilDate"])' >&2
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" list "${L[@]}" > "$TEST_WORK/list-lock.txt"
assert_contains "$TEST_WORK/list-lock.txt" "^old-full .*locked until" "list shows the lock"
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" expire "${L[@]}" --retain-full=1 > "$TEST_WORK/expire-lock.txt" 2>&1
assert_contains "$TEST_WORK/expire-lock.txt" "^keep old-full .*S3 Object Lock" "expire skips the locked backup"
expect_error "delete of a locked backup" 'under S3 Object Lock \(GOVERNANCE\) until' \
  "${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" delete "${L[@]}" old-full
os_py '
import botocore
vs = s3.list_object_versions(Bucket="xbak-locked", Prefix="old-full/")["Versions"]
try:
    s3.delete_object(Bucket="xbak-locked", Key=vs[0]["Key"], VersionId=vs[0]["VersionId"])
    raise SystemExit("a locked version was deleted")
except botocore.exceptions.ClientError as e:
    print("the store refuses to delete a locked version:", e.response["Error"]["Code"])' >&2
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" verify "${L[@]}" old-full > /dev/null || fail "the locked backup does not verify"

step "MinIO over TLS (a self-signed certificate) with a KMS key"
mkdir -p "$TEST_WORK/certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$TEST_WORK/certs/private.key" -out "$TEST_WORK/certs/public.crt" 2> /dev/null
mkdir -p "$TEST_WORK/minio-tls"
MINIO_ROOT_USER=$OS_ACCESS_KEY MINIO_ROOT_PASSWORD=$OS_SECRET_KEY MINIO_BROWSER=off \
  MINIO_KMS_SECRET_KEY="xbak-key:$(head -c 32 /dev/urandom | base64)" \
  "$(os_gobin)/minio" server "$TEST_WORK/minio-tls" --quiet --certs-dir "$TEST_WORK/certs" \
  --address "127.0.0.1:$tls_port" --console-address "127.0.0.1:$tls_console" > "$TEST_WORK/minio-tls.log" 2>&1 &
_OS_PIDS+=($!)
for _ in $(seq 100); do
  curl -sf --cacert "$TEST_WORK/certs/public.crt" "https://127.0.0.1:$tls_port/minio/health/live" && break
  sleep 0.1
done
OS_ENDPOINT=https://127.0.0.1:$tls_port AWS_CA_BUNDLE=$TEST_WORK/certs/public.crt os_py 's3.create_bucket(Bucket="xbak-tls")'
T=(--s3-endpoint="https://127.0.0.1:$tls_port" --s3-bucket=xbak-tls --progress-interval=0 --no-defaults)
expect_error "TLS verified by default" 'not trusted|certificate' "${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" list "${T[@]}"

step "SSE-C over TLS: a round trip, and no get without the key"
head -c 32 /dev/urandom > "$TEST_WORK/sse-c.key"
chmod 600 "$TEST_WORK/sse-c.key"
S3=("${T[@]}" --cacert="$TEST_WORK/certs/public.crt")
roundtrip "SSE-C" ssec AWS_PROFILE=backup -- --s3-sse-c-key-file="$TEST_WORK/sse-c.key" --parallel=4
OS_ENDPOINT=https://127.0.0.1:$tls_port AWS_CA_BUNDLE=$TEST_WORK/certs/public.crt os_py '
import botocore
key = open(sys.argv[1], "rb").read()
k = "ssec/db/t1.ibd.00000000000000000000"
h = s3.head_object(Bucket="xbak-tls", Key=k, SSECustomerAlgorithm="AES256", SSECustomerKey=key)
assert h["SSECustomerAlgorithm"] == "AES256", h
try:
    s3.head_object(Bucket="xbak-tls", Key=k)
    raise SystemExit("an SSE-C object was readable without its key")
except botocore.exceptions.ClientError as e:
    print("without the key the store refuses:", e.response["Error"]["Code"])' "$TEST_WORK/sse-c.key" >&2
rc=0
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" get "${S3[@]}" ssec > /dev/null 2> "$TEST_WORK/get-nokey.log" || rc=$?
assert_ne 0 "$rc" "a get of an SSE-C backup without the key"
cat "$TEST_WORK/get-nokey.log" >&2
"${NOAWS[@]}" AWS_PROFILE=backup "$XBCLOUD" verify "${S3[@]}" --s3-sse-c-key-file="$TEST_WORK/sse-c.key" ssec > /dev/null ||
  fail "verify of the SSE-C backup with its key"

step "SSE-S3 (AES256) and SSE-KMS over TLS"
roundtrip "SSE-S3" sses3 AWS_PROFILE=backup -- --s3-sse=AES256
roundtrip "SSE-KMS" ssekms AWS_PROFILE=backup -- --s3-sse=aws:kms --s3-sse-kms-key-id=xbak-key
OS_ENDPOINT=https://127.0.0.1:$tls_port AWS_CA_BUNDLE=$TEST_WORK/certs/public.crt os_py '
for name, want in (("sses3", "AES256"), ("ssekms", "aws:kms")):
    h = s3.head_object(Bucket="xbak-tls", Key=name + "/db/t1.ibd.00000000000000000000")
    assert h.get("ServerSideEncryption") == want, (name, h.get("ServerSideEncryption"))
print("the store encrypted the objects: AES256 and aws:kms")' >&2
roundtrip "storage class" sc AWS_PROFILE=backup -- --s3-storage-class=STANDARD
