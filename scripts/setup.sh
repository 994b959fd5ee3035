#!/usr/bin/env bash
# Install everything coderl needs on a Debian/Ubuntu host, idempotently:
#   system packages (bubblewrap + the toolchains of the supported languages) and a virtualenv
#   at .venv with coderl and its extras. Never pulls a CUDA torch: torch is pinned to the local
#   CPU build first (docker/torch-cpu.txt, the one pin) and constrained to it afterwards.
# Usage: scripts/setup.sh [extras]   (default extras: dev)
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$CODERL_ROOT"
EXTRAS="${1:-dev}"

# the sandbox's Debian packages: the one list the image installs too (version pins dropped here).
# A package whose command is already on PATH from elsewhere is left alone: NodeSource's nodejs
# bundles npm (Debian's npm conflicts with it), rustup provides rustc. Beside it, the libraries that
# compiled SWE-bench projects' environments build against on this host (docker/swe-build-apt.txt:
# matplotlib's FreeType and qhull, which its build would otherwise download).
need_apt=()
while read -r pkg; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" && continue
  command -v "$pkg" >/dev/null 2>&1 && continue
  need_apt+=("$pkg")
done < <(sed -e 's/#.*//' -e 's/=.*//' -e 's/[[:space:]]//g' -e '/^$/d' docker/sandbox-apt.txt docker/swe-build-apt.txt
         # dev: Debian's chromium, the browser the viewer's tests drive through Playwright (never a download)
         case "$EXTRAS" in *dev*) echo chromium ;; esac)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing system packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp_for .venv coderl-setup pyproject.toml docker/torch-cpu.txt <(echo "$EXTRAS")
if [ ! -f "$STAMP" ]; then
  echo "setup: installing coderl[$EXTRAS] into .venv (first run takes a few minutes; pip's log: .venv/setup.log)"
  log=.venv/setup.log
  : > "$log"
  # pip's output goes to the log; the console gets the package pip is on, at most every 5 s
  pip_step() {
    echo "setup: pip install $*"
    .venv/bin/pip install --progress-bar off "$@" >>"$log" 2>&1 &
    local pid=$! last="" now shown=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
      sleep 1
      [ $((SECONDS - shown)) -ge 5 ] || continue
      shown=$SECONDS
      # (none yet when every requirement is already satisfied: grep's "no match" must not stop setup)
      now=$({ grep -E '^(Collecting|Building wheel|Installing collected|Successfully installed)' "$log" || true; } |
            tail -n 1 | cut -c1-100)
      if [ -n "$now" ] && [ "$now" != "$last" ]; then echo "setup:   $now"; last=$now; fi
    done
    wait "$pid" || { echo "setup: pip failed; the end of $log:" >&2; tail -n 30 "$log" >&2; exit 1; }
  }
  pip_step --upgrade pip
  case "$EXTRAS" in
    *dev*|*train*)
      pip_step -r docker/torch-cpu.txt
      pip_step -c docker/torch-cpu.txt -e ".[$EXTRAS]" ;;
    *) pip_step -e ".[$EXTRAS]" ;;
  esac
  stamp_done
fi
# the packages programs may import, pinned, in a venv of their own the sandbox binds read-only
runtime="${CODERL_RUNTIME_PREFIX:-/opt/coderl/runtime}"
if ! mkdir -p "$runtime" 2>/dev/null || [ ! -w "$runtime" ]; then
  sudo mkdir -p "$runtime" && sudo chown "$(id -u):$(id -g)" "$runtime"
fi
scripts/build_runtime.sh "$runtime" "$CODERL_ROOT/.venv/bin/python"
