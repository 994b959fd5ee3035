#!/usr/bin/env bash
# Sourced by the image scripts: picks the container engine and the project's image names.
#   ENGINE          docker when a Docker daemon answers, else podman (CODERL_ENGINE overrides)
#   VERSION         the project version from pyproject.toml (the image tag)
# With podman and no CONTAINERS_CONF of your own, docker/podman-containers.conf is used (ulimits
# and runc for hosts that need them; see the file).
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$CODERL_ROOT/pyproject.toml" | head -n 1)"

pick_engine() {
  if [ -n "${CODERL_ENGINE:-}" ]; then
    command -v "$CODERL_ENGINE" >/dev/null || { echo "error: CODERL_ENGINE=$CODERL_ENGINE is not installed" >&2; return 1; }
    ENGINE="$CODERL_ENGINE"
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    ENGINE=docker
  elif command -v podman >/dev/null; then
    ENGINE=podman
  else
    echo "error: no container engine: no Docker daemon answers and podman is not installed (bash scripts/install_podman.sh)" >&2
    return 1
  fi
  if [ "$ENGINE" = podman ] && [ -z "${CONTAINERS_CONF:-}" ]; then
    export CONTAINERS_CONF="$CODERL_ROOT/docker/podman-containers.conf"
  fi
  export ENGINE
}

# image_size IMAGE: its size in bytes, as the engine reports it.
image_size() {
  "$ENGINE" image inspect --format '{{.Size}}' "$1"
}

human_size() {
  awk -v b="$1" 'BEGIN { split("B KB MB GB TB", u); i = 1; while (b >= 1000 && i < 5) { b /= 1000; i++ } printf "%.2f %s\n", b, u[i] }'
}
