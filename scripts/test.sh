#!/usr/bin/env bash
# Set up (idempotent) and run the test suite against the real sandbox.
#   scripts/test.sh [pytest args]     e.g. scripts/test.sh tests/sandbox -x
# The default suite leaves out tests marked `slow`; CODERL_TEST_ALL=1 runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
marker=(-m "not slow")
[ "${CODERL_TEST_ALL:-0}" = "1" ] && marker=()
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${marker[@]}" "$@"
