#!/usr/bin/env bash
# The main job on a machine without accelerators: set up (idempotent), start the sandbox service,
# score real problems end to end through it, print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
exec .venv/bin/coderl demo "$@"
