#!/usr/bin/env bash
# Print the path of Debian's kubectl (the `kubernetes-client` package; its `kubectl kustomize` is what
# tests/deploy renders the overlays with), installing it first when it is missing. Idempotent, as root.
#
# Where no other package owns /usr/bin/kubectl, this is a plain `apt-get install kubernetes-client`.
# Where one does (e.g. the Google Cloud SDK's `kubectl` package, as on our CI machines), installing
# would fail on that file, so the same .deb is fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` under $CODERL_K8S_TOOLS (default /opt/coderl/kubernetes-client), leaving the
# other kubectl alone.
set -euo pipefail
PKG=kubernetes-client
TOOLS="${CODERL_K8S_TOOLS:-/opt/coderl/kubernetes-client}"

if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q "ok installed"; then
  echo /usr/bin/kubectl; exit 0
fi
if [ -x "$TOOLS/usr/bin/kubectl" ]; then
  echo "$TOOLS/usr/bin/kubectl"; exit 0
fi
[ "$(id -u)" = 0 ] || { echo "error: installing $PKG needs root (apt-get)" >&2; exit 1; }
apt_quiet() { DEBIAN_FRONTEND=noninteractive apt-get "$@" >/dev/null; }
for attempt in 1 2 3 4 5; do  # another apt-get may hold the lock for a while
  apt_quiet update -qq && break
  [ "$attempt" = 5 ] && { echo "error: apt-get update failed" >&2; exit 1; }
  sleep 20
done
if ! owner=$(dpkg -S /usr/bin/kubectl 2>/dev/null); then
  apt_quiet install -y -qq --no-install-recommends "$PKG"
  echo /usr/bin/kubectl; exit 0
fi
echo "debian_kubectl: /usr/bin/kubectl belongs to ${owner%%:*}; unpacking $PKG under $TOOLS" >&2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt's download user (_apt) writes here
(cd "$work" && apt-get download -qq "$PKG" 2>/dev/null)
mkdir -p "$TOOLS.tmp" && dpkg-deb -x "$work"/"$PKG"_*.deb "$TOOLS.tmp"
rm -rf "$TOOLS" && mv "$TOOLS.tmp" "$TOOLS"
echo "$TOOLS/usr/bin/kubectl"
