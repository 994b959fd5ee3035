#!/usr/bin/env bash
# Move an image to where it will run: a file to carry (save/load) or a registry you name (push),
# e.g. the registry of a managed training platform (docs/deploy.md).
#
#   scripts/push_image.sh save IMAGE [FILE]        IMAGE -> FILE (default: ./<name>-<tag>.tar.gz,
#                                                  gzip when FILE ends in .gz)
#   scripts/push_image.sh load FILE                FILE -> the local image store (prints the image)
#   scripts/push_image.sh push IMAGE REGISTRY/NAMESPACE
#                                                  tag IMAGE as REGISTRY/NAMESPACE/<name>:<tag> and
#                                                  push it (log in first: docker/podman login REGISTRY)
# The engine is docker when its daemon answers, else podman (CODERL_ENGINE overrides).
set -euo pipefail
# shellcheck source=scripts/container_engine.sh
source "$(dirname "$0")/container_engine.sh"

die() { echo "error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

[ "$#" -ge 1 ] || { usage >&2; exit 2; }
command="$1"; shift
case "$command" in -h|--help) usage; exit 0 ;; esac
pick_engine
have_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1 || die "no image $1 here (scripts/build_images.sh builds them)"; }
# repo:tag of an image reference, without registry or namespace: coderl-cuda:0.1.0
short_name() { local ref="${1##*/}"; case "$ref" in *:*) echo "$ref" ;; *) echo "$ref:latest" ;; esac; }

case "$command" in
  save)
    [ "$#" -ge 1 ] && [ "$#" -le 2 ] || die "usage: push_image.sh save IMAGE [FILE]"
    image="$1"; have_image "$image"
    short="$(short_name "$image")"
    file="${2:-./${short%%:*}-${short##*:}.tar.gz}"
    start=$SECONDS
    if [[ "$file" == *.gz ]]; then
      "$ENGINE" save "$image" | gzip -1 > "$file.part" || die "saving $image failed"
    else
      "$ENGINE" save -o "$file.part" "$image" || die "saving $image failed"
    fi
    mv "$file.part" "$file"
    echo "$image -> $file ($(human_size "$(stat -c %s "$file")"), $((SECONDS - start))s)"
    ;;
  load)
    [ "$#" -eq 1 ] || die "usage: push_image.sh load FILE"
    [ -f "$1" ] || die "no file $1"
    if [[ "$1" == *.gz ]]; then  # podman 4 reads no compressed archive: decompress on the way in
      loaded="$(gzip -dc "$1" | "$ENGINE" load -q)" || die "loading $1 failed"
    else
      loaded="$("$ENGINE" load -q -i "$1")" || die "loading $1 failed"
    fi
    echo "$loaded" | sed -n 's/^Loaded image[^:]*: *//p'
    ;;
  push)
    [ "$#" -eq 2 ] || die "usage: push_image.sh push IMAGE REGISTRY/NAMESPACE"
    image="$1"; have_image "$image"
    [[ "$2" == */* ]] || die "name the registry and namespace, e.g. swr.example.com/myteam (got '$2')"
    target="${2%/}/$(short_name "$image")"
    "$ENGINE" tag "$image" "$target"
    "$ENGINE" push "$target" || die "pushing $target failed (logged in? $ENGINE login ${2%%/*})"
    echo "pushed $target"
    ;;
  *) die "unknown command '$command' (save, load, push; --help)" ;;
esac
