#!/usr/bin/env bash
# Build the sandbox's pinned runtime environment, idempotently: what programs may import.
#   <prefix>/python  a venv of the sandbox's interpreter holding docker/runtime-python.txt (--no-deps:
#                    every package is pinned there), none of the service's own packages
#   <prefix>/node    node_modules from docker/runtime-node/package-lock.json (npm ci)
# The engine binds <prefix> read-only into every slot (coderl.sandbox.runtime_env); run it outside
# the sandbox (setup.sh, the image build), never per request.
# The engine binds <prefix> at the same path inside the sandbox: keep it a path that says nothing of
# the host (the default, not a home or a checkout).
# Usage: scripts/build_runtime.sh [prefix] [python]   (defaults: /opt/coderl/runtime, the base
# interpreter of common.sh's PYTHON)
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$CODERL_ROOT"
PREFIX="${1:-/opt/coderl/runtime}"
PY="${2:-$PYTHON}"
BASE=$("$PY" -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))')
# Go: the standard packages whose shipped archives are stale under the sandbox's CGO_ENABLED=0 (net, ...),
# built once into a cache the Go recipe links each submission's private cache to (read-only); where
# Debian's testify is installed (go_test programs import it), its packages too (~5 s less per go_test)
testify=/usr/share/gocode/src/github.com/stretchr/testify
if command -v go >/dev/null && { [ ! -d "$PREFIX/go-cache" ] \
    || { [ -d "$testify" ] && [ ! -e "$PREFIX/go-cache/testify.txt" ]; }; }; then
  echo "runtime: prebuilding Go's standard library cache in $PREFIX/go-cache"
  mkdir -p "$PREFIX"
  gopath=$(mktemp -d)
  rm -rf "$PREFIX/go-cache.tmp"
  GOCACHE="$PREFIX/go-cache.tmp" GOPATH="$gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS= go build std
  if [ -d "$testify" ]; then
    GOCACHE="$PREFIX/go-cache.tmp" GOPATH="$gopath:/usr/share/gocode" GO111MODULE=off CGO_ENABLED=0 GOFLAGS= \
      go build github.com/stretchr/testify/assert github.com/stretchr/testify/require
    echo "github.com/stretchr/testify/assert and require are in this cache" > "$PREFIX/go-cache.tmp/testify.txt"
  fi
  rm -rf "$gopath" "$PREFIX/go-cache.tmp/trim.txt" "$PREFIX/go-cache"
  mv "$PREFIX/go-cache.tmp" "$PREFIX/go-cache"
  chmod -R a+rX "$PREFIX/go-cache"
fi
stamp_for "$PREFIX" built docker/runtime-python.txt docker/runtime-node/package-lock.json
if [ -f "$STAMP" ] && [ -x "$PREFIX/python/bin/python" ]; then exit 0; fi
echo "runtime: building the sandbox's runtime packages in $PREFIX (Python: $BASE)"
rm -rf "$PREFIX/python" "$PREFIX/node" "$PREFIX"/.built-*
mkdir -p "$PREFIX"
"$BASE" -m venv "$PREFIX/python"
"$PREFIX/python/bin/python" -m pip install -q --no-cache-dir --no-deps --only-binary=:all: -r docker/runtime-python.txt
"$PREFIX/python/bin/python" -m pip check
"$PREFIX/python/bin/python" -m pip uninstall -q -y setuptools pip  # the pinned list only; nothing installs inside
if command -v npm >/dev/null; then
  mkdir -p "$PREFIX/node"
  cp docker/runtime-node/package.json docker/runtime-node/package-lock.json "$PREFIX/node/"
  (cd "$PREFIX/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
chmod -R a+rX "$PREFIX"
stamp_done
