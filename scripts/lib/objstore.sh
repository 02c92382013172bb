# shellcheck shell=bash
# objstore.sh - a private MinIO (and a toxiproxy in front of it) on 127.0.0.1 for xbcloud's
# tests, demo and benchmarks.
#
#   . scripts/lib/objstore.sh
#   os_cleanup_on_exit                  # stop what this shell starts, even on error
#   os_minio_start 29000                # MinIO on 127.0.0.1:29000 (console 29001), data in $XBAK_WORK/minio-29000
#   os_bucket_create 29000 test-bucket  # via boto3 (an independent S3 client)
#   os_toxi_start 29474 && os_toxi_proxy s3 29010 29000   # 127.0.0.1:29010 -> MinIO, faults on demand
#   os_toxi_toxic s3 reset_peer timeout=0 toxicity=0.1
#
# The binaries come from scripts/build-go-tools.sh (built once, cached). Credentials are the
# fixed test ones below; they are exported as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, which
# is how xbcloud, boto3, aws and rclone pick them up.

if [ -n "${_OS_LOADED:-}" ]; then return 0; fi
_OS_LOADED=1

OS_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${XBAK_WORK:=$OS_REPO_ROOT/.work}"
export XBAK_WORK
export OS_ACCESS_KEY=xbaktest OS_SECRET_KEY=xbaktest-secret-123
export AWS_ACCESS_KEY_ID=$OS_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$OS_SECRET_KEY AWS_DEFAULT_REGION=us-east-1
unset AWS_CA_BUNDLE AWS_PROFILE AWS_SESSION_TOKEN 2> /dev/null || true
_OS_PIDS=()

_os_log() { [ "${OS_QUIET:-0}" = 1 ] || echo "objstore: $*" >&2; }
_os_err() { echo "objstore: ERROR: $*" >&2; }

os_gobin() { # prints the directory holding minio and toxiproxy-server (builds them once)
  if [ -z "${_OS_GOBIN:-}" ]; then _OS_GOBIN=$("$OS_REPO_ROOT/scripts/build-go-tools.sh"); fi
  echo "$_OS_GOBIN"
}

_os_wait_http() { # URL TIMEOUT
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if curl -fs -o /dev/null "$1"; then return 0; fi
    sleep 0.1
  done
  return 1
}

os_minio_start() { # PORT [DATADIR]: start MinIO on 127.0.0.1:PORT (console: $OS_CONSOLE_PORT or PORT+1)
  local port=$1 dir=${2:-$XBAK_WORK/minio-$1} gobin
  gobin=$(os_gobin) || return 1
  mkdir -p "$dir"
  MINIO_ROOT_USER=$OS_ACCESS_KEY MINIO_ROOT_PASSWORD=$OS_SECRET_KEY MINIO_BROWSER=off \
    "$gobin/minio" server "$dir" --quiet --address "127.0.0.1:$port" --console-address "127.0.0.1:${OS_CONSOLE_PORT:-$((port + 1))}" \
    > "$dir.log" 2>&1 &
  local pid=$!
  _OS_PIDS+=("$pid")
  echo "$pid" > "$dir.pid"
  if ! _os_wait_http "http://127.0.0.1:$port/minio/health/live" 60; then
    _os_err "MinIO did not start on 127.0.0.1:$port (log: $dir.log)"
    tail -20 "$dir.log" >&2
    return 1
  fi
  _os_log "MinIO up on 127.0.0.1:$port (data $dir)"
}

os_minio_stop() { # PORT [DATADIR] [SIGNAL]
  local dir=${2:-$XBAK_WORK/minio-$1} sig=${3:-TERM} pid
  [ -f "$dir.pid" ] || return 0
  pid=$(cat "$dir.pid")
  kill -"$sig" "$pid" 2> /dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  rm -f "$dir.pid"
}

# Debian's python3 has python3-boto3 (scripts/install-deps.sh); another python3 first in PATH
# (pyenv, a venv) may not.
OS_PYTHON=/usr/bin/python3
[ -x "$OS_PYTHON" ] || OS_PYTHON=python3

os_py() { # run python with boto3 against ENDPOINT ($OS_ENDPOINT): os_py 'code using s3'
  OS_ENDPOINT=${OS_ENDPOINT:?} "$OS_PYTHON" -c "
import os, sys, boto3, botocore.config
s3 = boto3.client('s3', endpoint_url=os.environ['OS_ENDPOINT'], region_name='us-east-1',
                  aws_access_key_id=os.environ['OS_ACCESS_KEY'], aws_secret_access_key=os.environ['OS_SECRET_KEY'],
                  config=botocore.config.Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 3}))
$1
" "${@:2}"
}

os_bucket_create() { # PORT BUCKET
  OS_ENDPOINT=http://127.0.0.1:$1 os_py 's3.create_bucket(Bucket=sys.argv[1])' "$2"
}

os_toxi_start() { # API_PORT: start toxiproxy-server on 127.0.0.1:API_PORT
  local port=$1 gobin
  gobin=$(os_gobin) || return 1
  "$gobin/toxiproxy-server" -host 127.0.0.1 -port "$port" > "$XBAK_WORK/toxiproxy-$port.log" 2>&1 &
  _OS_PIDS+=("$!")
  _OS_TOXI=http://127.0.0.1:$port
  if ! _os_wait_http "$_OS_TOXI/version" 30; then
    _os_err "toxiproxy did not start on 127.0.0.1:$port"
    return 1
  fi
  _os_log "toxiproxy up on 127.0.0.1:$port"
}

os_toxi_proxy() { # NAME LISTEN_PORT UPSTREAM_PORT
  curl -fsS -X POST "$_OS_TOXI/proxies" -d \
    "{\"name\":\"$1\",\"listen\":\"127.0.0.1:$2\",\"upstream\":\"127.0.0.1:$3\",\"enabled\":true}" > /dev/null
}

os_toxi_toxic() { # PROXY TYPE [STREAM] ATTR=VALUE... e.g. os_toxi_toxic s3 latency downstream latency=100 toxicity=0.5
  local proxy=$1 type=$2 stream=downstream tox=1.0 attrs="" kv
  shift 2
  if [ "${1:-}" = upstream ] || [ "${1:-}" = downstream ]; then stream=$1; shift; fi
  for kv in "$@"; do
    case "$kv" in
      toxicity=*) tox=${kv#toxicity=} ;;
      *) attrs+="${attrs:+,}\"${kv%%=*}\":${kv#*=}" ;;
    esac
  done
  curl -fsS -X POST "$_OS_TOXI/proxies/$proxy/toxics" -d \
    "{\"name\":\"${type}_$stream\",\"type\":\"$type\",\"stream\":\"$stream\",\"toxicity\":$tox,\"attributes\":{$attrs}}" > /dev/null
}

os_toxi_clear() { # PROXY: remove every toxic
  local names
  names=$(curl -fsS "$_OS_TOXI/proxies/$1/toxics" | python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)))')
  for n in $names; do curl -fsS -X DELETE "$_OS_TOXI/proxies/$1/toxics/$n" > /dev/null; done
}

# Azure Blob Storage and Google Cloud Storage, by their emulators (from build-go-tools.sh).
# Azurite's development account and its published key (it opens nothing but the emulator).
export OS_AZ_ACCOUNT=devstoreaccount1
export OS_AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

os_azurite_start() { # PORT [DATADIR]: Azurite's blob service on 127.0.0.1:PORT
  local port=$1 dir=${2:-$XBAK_WORK/azurite-$1} bin
  os_gobin > /dev/null || return 1
  bin=${XBAK_CACHE:-$HOME/.cache/xbak}/azurite/node_modules/.bin/azurite-blob
  mkdir -p "$dir"
  "$bin" --blobHost 127.0.0.1 --blobPort "$port" --location "$dir" --silent --disableTelemetry --loose \
    > "$dir.log" 2>&1 &
  _OS_PIDS+=("$!")
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q "successfully listens" "$dir.log" 2> /dev/null && { _os_log "Azurite up on 127.0.0.1:$port"; return 0; }
    sleep 0.1
  done
  _os_err "Azurite did not start on 127.0.0.1:$port (log: $dir.log)"
  tail -20 "$dir.log" >&2
  return 1
}

os_fakegcs_start() { # PORT: fake-gcs-server (in memory) on 127.0.0.1:PORT
  local port=$1 gobin
  gobin=$(os_gobin) || return 1
  "$gobin/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$port" -backend memory \
    -public-host "127.0.0.1:$port" -external-url "http://127.0.0.1:$port" > "$XBAK_WORK/fakegcs-$port.log" 2>&1 &
  _OS_PIDS+=("$!")
  if ! _os_wait_http "http://127.0.0.1:$port/_internal/healthcheck" 30; then
    _os_err "fake-gcs-server did not start on 127.0.0.1:$port"
    return 1
  fi
  _os_log "fake-gcs-server up on 127.0.0.1:$port"
}

# The objects under PREFIX as JSON [{"Path", "Size"}], by a client of its own (store_ls.py):
# os_store_ls azure|gcs PORT CONTAINER PREFIX; os_store_count: how many.
os_store_ls() { "$OS_PYTHON" "$OS_REPO_ROOT/scripts/lib/store_ls.py" "$@"; }
os_store_count() { os_store_ls "$@" | "$OS_PYTHON" -c 'import json, sys; print(len(json.load(sys.stdin)))'; }

os_azure_container_create() { # PORT CONTAINER: Create Container, signed with the account key
  "$OS_PYTHON" - "$1" "$2" <<'PY'
import base64, hashlib, hmac, http.client, os, sys, time
port, container = sys.argv[1], sys.argv[2]
account, key = os.environ["OS_AZ_ACCOUNT"], base64.b64decode(os.environ["OS_AZ_KEY"])
date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
path = "/%s/%s" % (account, container)
sts = "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:%s\nx-ms-version:2021-08-06\n/%s%s\nrestype:container" % (date, account, path)
sig = base64.b64encode(hmac.new(key, sts.encode(), hashlib.sha256).digest()).decode()
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
c.request("PUT", path + "?restype=container", headers={"x-ms-date": date, "x-ms-version": "2021-08-06",
          "Authorization": "SharedKey %s:%s" % (account, sig), "Content-Length": "0"})
r = c.getresponse()
if r.status != 201:
    sys.exit("objstore: Create Container %s: HTTP %d %s" % (container, r.status, r.read()[:200]))
PY
}
os_gcs_bucket_create() { # PORT BUCKET
  curl -fsS -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$2\"}" \
    "http://127.0.0.1:$1/storage/v1/b" > /dev/null
}

os_cleanup() {
  local p
  for p in "${_OS_PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  for p in "${_OS_PIDS[@]}"; do wait "$p" 2> /dev/null || true; done
  _OS_PIDS=()
}

os_cleanup_on_exit() { trap 'os_cleanup' EXIT; }
