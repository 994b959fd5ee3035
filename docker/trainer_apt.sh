#!/usr/bin/env bash
# The training images' system layer (docker/Dockerfile.cuda and docker/Dockerfile.ascend share it):
# the sandbox's packages from docker/sandbox-apt.txt, Debian's version pins dropped (the bases are
# Ubuntu releases). Its own file so that editing the Python layer's script keeps this layer cached.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
mapfile -t packages < <(sed -e 's/#.*//' -e 's/=.*//' -e '/^[[:space:]]*$/d' docker/sandbox-apt.txt)
apt-get update
apt-get install -y --no-install-recommends "${packages[@]}"
rm -rf /var/lib/apt/lists/*
