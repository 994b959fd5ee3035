#!/usr/bin/env bash
# mini-swe-agent from PyPI in a venv of its own (it pulls in litellm: never in the project's venv), for
# the agent loop's default harness (tool_config/agent_loop.yaml) and tests/verl/test_agent_loop_mini.py.
#   scripts/install_mini_swe_agent.sh        installs into $MINI_SWE_AGENT_VENV (default /opt/mini-swe-agent)
set -euo pipefail
source "$(dirname "$0")/common.sh"
DEST="${MINI_SWE_AGENT_VENV:-/opt/mini-swe-agent}"
VERSION="${MINI_SWE_AGENT_VERSION:-2.4.6}"
if [ ! -x "$DEST/bin/mini" ]; then
  # the base interpreter of the project's Python: sandboxes bind its prefix, so the venv runs inside them
  BASE="$("$PYTHON" -c 'import sys; print(sys.base_prefix)')/bin/python3"
  if ! mkdir -p "$DEST" 2>/dev/null || [ ! -w "$DEST" ]; then  # /opt as a user: made once with sudo, then theirs
    sudo mkdir -p "$DEST" && sudo chown "$(id -u):$(id -g)" "$DEST"
  fi
  echo "installing mini-swe-agent $VERSION into $DEST (its own venv)"
  "$BASE" -m venv "$DEST"
  "$DEST/bin/pip" install -q "mini-swe-agent==$VERSION"
fi
"$DEST/bin/mini" --help >/dev/null 2>&1 || { echo "error: $DEST/bin/mini does not run" >&2; exit 1; }
echo "mini-swe-agent ready: MINI_SWE_AGENT_VENV=$DEST"
