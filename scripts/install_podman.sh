#!/usr/bin/env bash
# Install podman and what --local-base needs (Debian/Ubuntu, as root): podman, buildah (builds),
# mmdebstrap (a Debian base without a registry) and runc (docker/podman-containers.conf).
# Does nothing when they are all there already.
set -euo pipefail
missing=()
for tool in podman buildah mmdebstrap runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
[ "${#missing[@]}" -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { echo "error: installing ${missing[*]} needs root (apt-get)" >&2; exit 1; }
echo "installing ${missing[*]}"
for attempt in 1 2 3 4 5; do  # another apt-get may hold the lock for a while
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
       podman buildah mmdebstrap runc >/dev/null; then
    exit 0
  fi
  sleep 20
done
echo "error: apt-get could not install ${missing[*]}" >&2
exit 1
