#!/usr/bin/env bash
# Builds the object-storage servers the tests and benchmarks run on loopback, once, and caches
# them in $XBAK_CACHE (default ~/.cache/xbak):
#   gobin/minio             S3-compatible server  (go install github.com/minio/minio@latest, ~4 min)
#   gobin/toxiproxy-server  fault-injecting TCP proxy (github.com/Shopify/toxiproxy/v2)
#   gobin/fake-gcs-server   Google Cloud Storage emulator (github.com/fsouza/fake-gcs-server, ~1 min)
#   azurite/node_modules/.bin/azurite-blob   Azure Blob Storage emulator (npm package azurite, ~30 s)
# Prints the gobin directory on stdout. Installs a Go toolchain from go.dev into the cache when
# `go` is missing or older than MinIO needs (Debian 12's golang is 1.19).
set -euo pipefail
CACHE=${XBAK_CACHE:-$HOME/.cache/xbak}
GOBIN_DIR=$CACHE/gobin
GO_VERSION=1.24.6
mkdir -p "$GOBIN_DIR"

FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.35.0

# Azurite: from the npm registry into the cache (Node.js from Debian when missing).
if [ ! -x "$CACHE/azurite/node_modules/.bin/azurite-blob" ]; then
  if ! command -v npm > /dev/null 2>&1; then
    echo "build-go-tools: installing Node.js and npm (Debian) for Azurite" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get install -y -qq nodejs npm > /dev/null
  fi
  echo "build-go-tools: npm install azurite@$AZURITE_VERSION" >&2
  rm -rf "$CACHE/azurite.tmp" && mkdir -p "$CACHE/azurite.tmp"
  npm install --prefix "$CACHE/azurite.tmp" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >&2
  rm -rf "$CACHE/azurite" && mv "$CACHE/azurite.tmp" "$CACHE/azurite"
fi

need_minio=1; need_toxi=1; need_gcs=1
[ -x "$GOBIN_DIR/minio" ] && need_minio=0
[ -x "$GOBIN_DIR/toxiproxy-server" ] && need_toxi=0
[ -x "$GOBIN_DIR/fake-gcs-server" ] && need_gcs=0
if [ $need_minio = 0 ] && [ $need_toxi = 0 ] && [ $need_gcs = 0 ]; then echo "$GOBIN_DIR"; exit 0; fi

go_ok() { # is `go` at least 1.24?
  local v
  v=$("$1" env GOVERSION 2> /dev/null | sed 's/^go//') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n1.24\n' "$v" | sort -V | head -1)" = 1.24 ]
}
GO=""
for g in go /usr/local/go/bin/go "$CACHE/go/bin/go"; do
  if command -v "$g" > /dev/null 2>&1 && go_ok "$g"; then GO=$(command -v "$g"); break; fi
done
if [ -z "$GO" ]; then
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) echo "build-go-tools: unsupported arch $(uname -m)" >&2; exit 1 ;; esac
  echo "build-go-tools: installing Go $GO_VERSION into $CACHE/go" >&2
  rm -rf "$CACHE/go.tmp" && mkdir -p "$CACHE/go.tmp"
  curl -fsSL "https://go.dev/dl/go$GO_VERSION.linux-$arch.tar.gz" | tar -xz -C "$CACHE/go.tmp"
  rm -rf "$CACHE/go" && mv "$CACHE/go.tmp/go" "$CACHE/go" && rmdir "$CACHE/go.tmp"
  GO=$CACHE/go/bin/go
fi

export GOFLAGS="-mod=mod -buildvcs=false" GOBIN=$GOBIN_DIR.tmp
mkdir -p "$GOBIN"
if [ $need_minio = 1 ]; then
  echo "build-go-tools: go install github.com/minio/minio@latest (about 4 minutes, once)" >&2
  t0=$SECONDS
  "$GO" install github.com/minio/minio@latest
  mv "$GOBIN/minio" "$GOBIN_DIR/minio"
  echo "build-go-tools: minio built in $((SECONDS - t0)) s" >&2
fi
if [ $need_toxi = 1 ]; then
  echo "build-go-tools: go install github.com/Shopify/toxiproxy/v2/cmd/server@latest" >&2
  "$GO" install github.com/Shopify/toxiproxy/v2/cmd/server@latest
  mv "$GOBIN/server" "$GOBIN_DIR/toxiproxy-server"
fi
if [ $need_gcs = 1 ]; then
  echo "build-go-tools: go install github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" >&2
  "$GO" install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
  mv "$GOBIN/fake-gcs-server" "$GOBIN_DIR/fake-gcs-server"
fi
rmdir "$GOBIN" 2> /dev/null || true
echo "$GOBIN_DIR"
