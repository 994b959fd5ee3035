#!/usr/bin/env bash
# The main job on a machine without accelerators: set up (idempotent), start the sandbox service,
# score real problems end to end through it, print the report.
set -euo pipefail
bash "$(dirname "$0")/setup.sh" dev
source "$(dirname "$0")/common.sh"  # after setup.sh: PYTHON is the .venv it made (or $PYTHON)
cd "$CODERL_ROOT"
exec "$PYTHON" -m coderl.cli demo "$@"
