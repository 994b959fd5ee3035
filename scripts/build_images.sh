#!/usr/bin/env bash
# Build the appliance's images with docker (when a daemon answers) or podman, tagged with the
# project version, and print each one's size and build time.
#
#   scripts/build_images.sh [options] [sandbox|cuda|ascend|cpu|all ...]     (default: sandbox)
#
#   sandbox   coderl-sandbox:VERSION   the service alone        (FROM python:3.11.11-slim-bookworm)
#   cuda      coderl-cuda:VERSION      trainer + sandbox, GPUs  (FROM the verl 0.9.x vLLM image)
#   ascend    coderl-ascend:VERSION    trainer + sandbox, NPUs  (FROM the CANN 9 image)
#   cpu       coderl-cpu:VERSION       Dockerfile.cuda's layers on a torch CPU base, always made here
#                                      (as --local-base does), to build and run the trainer image
#                                      without a GPU
#   all       sandbox cuda ascend; with --local-base: sandbox cpu (accelerator bases come only from
#             a registry)
#   bases     with --local-base only: the local Debian and Python bases, nothing on them (what the
#             image-task tests build their task images FROM)
#
# Options:
#   --local-base        make the bases no registry is needed for: Debian 12 (mmdebstrap), a Python
#                       3.11 stand-in on it (docker/Dockerfile.python-standin), and for `cpu` torch's
#                       CPU build on that; the real FROMs stay the default without this option
#   --ca-file FILE      extra CA certificates (PEM) for pip's TLS inside the build (repeatable); the
#                       host's /usr/local/share/ca-certificates/*.crt are added by default. They go in
#                       as a build secret, never into a layer.
#   --torch-wheel FILE  torch's CPU wheel for `cpu` (default: `pip download` of docker/torch-cpu.txt's pin
#                       with this host's pip configuration, which must resolve to a CPU build)
#   --no-cache          build every layer again
# Environment: CODERL_ENGINE=docker|podman forces an engine; CODERL_IMAGE_CACHE (default
# /var/cache/coderl-images, or ~/.cache/coderl-images when not root) keeps the Debian tarball and
# the torch wheel; CODERL_BUILD_NICE (default 10) is the builds' nice level.
set -euo pipefail
# shellcheck source=scripts/container_engine.sh
source "$(dirname "$0")/container_engine.sh"
cd "$CODERL_ROOT"

TORCH_VERSION="$(sed -n 's/^torch==//p' docker/torch-cpu.txt)"   # the one pin
DEFAULT_CACHE=/var/cache/coderl-images
[ "$(id -u)" = 0 ] || DEFAULT_CACHE="$HOME/.cache/coderl-images"
CACHE="${CODERL_IMAGE_CACHE:-$DEFAULT_CACHE}"
LOCAL_DEBIAN=localhost/coderl-base/debian:bookworm
LOCAL_PYTHON=localhost/coderl-base/python:3.11-bookworm
LOCAL_TORCH=localhost/coderl-base/torch-cpu:$TORCH_VERSION

die() { echo "error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

LOCAL_BASE=0; NO_CACHE=(); CA_FILES=(); TORCH_WHEEL=""; TARGETS=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --local-base) LOCAL_BASE=1 ;;
    --no-cache) NO_CACHE=(--no-cache) ;;
    --ca-file) [ "$#" -ge 2 ] && [ -f "$2" ] || die "--ca-file needs a readable file"; CA_FILES+=("$2"); shift ;;
    --torch-wheel) [ "$#" -ge 2 ] && [ -f "$2" ] || die "--torch-wheel needs a wheel file"; TORCH_WHEEL="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    sandbox|cuda|ascend|cpu|bases) TARGETS+=("$1") ;;
    all) if [ "$LOCAL_BASE" = 1 ]; then TARGETS+=(sandbox cpu); else TARGETS+=(sandbox cuda ascend); fi ;;
    *) die "unknown argument '$1' (targets: sandbox cuda ascend cpu bases all; --help)" ;;
  esac
  shift
done
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(sandbox)
pick_engine
mkdir -p "$CACHE"

# The CA bundle secret: the system bundle plus the extra CAs; pip then trusts exactly these.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for pem in /usr/local/share/ca-certificates/*.crt; do [ -f "$pem" ] && CA_FILES+=("$pem"); done
SYSTEM_BUNDLE=""
for candidate in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  [ -f "$candidate" ] && { SYSTEM_BUNDLE="$candidate"; break; }
done
cat ${SYSTEM_BUNDLE:+"$SYSTEM_BUNDLE"} "${CA_FILES[@]}" /dev/null > "$WORK/ca-bundle.pem"
SECRET=(--secret "id=ca-bundle,src=$WORK/ca-bundle.pem")

FORMAT=()
[ "$ENGINE" = podman ] && FORMAT=(--format docker)  # the OCI format drops HEALTHCHECK

# build TAG DOCKERFILE CONTEXT [build args...]: build and report size and time.
build() {
  local tag="$1" file="$2" context="$3" start=$SECONDS
  shift 3
  echo "== building $tag ($file, $ENGINE)" >&2
  nice -n "${CODERL_BUILD_NICE:-10}" "$ENGINE" build "${FORMAT[@]}" "${NO_CACHE[@]}" "${SECRET[@]}" \
    -f "$file" -t "$tag" "$@" "$context" >&2 || die "building $tag failed (output above)"
  printf '%-45s %10s  built in %ss\n' "$tag" "$(human_size "$(image_size "$tag")")" "$((SECONDS - start))"
}

have_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

debian_base() {
  have_image "$LOCAL_DEBIAN" && return
  command -v mmdebstrap >/dev/null || die "--local-base needs mmdebstrap (bash scripts/install_podman.sh)"
  local tar="$CACHE/debian-bookworm.tar"
  if [ ! -f "$tar" ] || [ ! -s "$tar" ]; then
    rm -rf "$tar" "$tar.part"  # what an interrupted (or, before --format, a misread) run left
    echo "== mmdebstrap: Debian 12 minbase -> $tar" >&2
    # --format: mmdebstrap reads the format from the name's extension, and "*.part" made a directory
    nice -n "${CODERL_BUILD_NICE:-10}" mmdebstrap --variant=minbase --format=tar --quiet bookworm "$tar.part" >&2 \
      || die "mmdebstrap failed"
    mv "$tar.part" "$tar"
  fi
  "$ENGINE" import --change 'CMD ["/bin/bash"]' "$tar" "$LOCAL_DEBIAN" >/dev/null || die "importing $tar failed"
  printf '%-45s %10s  (mmdebstrap + import)\n' "$LOCAL_DEBIAN" "$(human_size "$(image_size "$LOCAL_DEBIAN")")"
}

# locked NAME CMD...: CMD holding $CACHE/NAME.lock. Two runs asking for one image at once (.ci/run builds
# the images in the background while the tests may ask for them) build it one after the other: the later
# one waits, then finds the image (or every layer cached) and takes seconds.
locked() {
  local name="$1"; shift
  ( flock 9 || die "could not lock $CACHE/$name.lock"; "$@" ) 9>"$CACHE/$name.lock"
}

python_base() { locked bases python_base_unlocked; }
python_base_unlocked() {
  debian_base
  build "$LOCAL_PYTHON" docker/Dockerfile.python-standin . --build-arg "DEBIAN_IMAGE=$LOCAL_DEBIAN"
}

torch_cpu_base() {
  python_base
  local wheels="$WORK/wheels"
  mkdir -p "$wheels"
  if [ -n "$TORCH_WHEEL" ]; then
    cp "$TORCH_WHEEL" "$wheels/"
  else
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
      "torch==$TORCH_VERSION" -d "$CACHE/wheels" >&2 || die "pip could not download torch==$TORCH_VERSION (--torch-wheel FILE)"
    cp "$CACHE/wheels"/torch-"$TORCH_VERSION"*-cp311-*.whl "$wheels/"
  fi
  for wheel in "$wheels"/*.whl; do
    case "$wheel" in *+cpu*) ;; *) die "$(basename "$wheel") is not a CPU build of torch (--torch-wheel FILE)";; esac
  done
  build "$LOCAL_TORCH" docker/Dockerfile.torch-cpu "$wheels" --build-arg "PYTHON_IMAGE=$LOCAL_PYTHON" \
    --build-arg "TORCH_VERSION=$TORCH_VERSION"
}

for target in "${TARGETS[@]}"; do
  case "$target" in
    sandbox)
      args=()
      if [ "$LOCAL_BASE" = 1 ]; then python_base; args=(--build-arg "PYTHON_IMAGE=$LOCAL_PYTHON"); fi
      locked sandbox build "coderl-sandbox:$VERSION" docker/Dockerfile.sandbox . "${args[@]}" ;;
    cuda|ascend)
      [ "$LOCAL_BASE" = 0 ] || die "$target: its accelerator base comes only from a registry (the cpu target builds the same layers on a CPU base)"
      build "coderl-$target:$VERSION" "docker/Dockerfile.$target" . ;;
    bases)
      [ "$LOCAL_BASE" = 1 ] || die "bases: only with --local-base"
      python_base ;;
    cpu)  # its base is always made here
      torch_cpu_base
      build "coderl-cpu:$VERSION" docker/Dockerfile.cuda . --build-arg "BASE_IMAGE=$LOCAL_TORCH" ;;
  esac
done
