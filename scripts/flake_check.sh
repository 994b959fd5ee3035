#!/usr/bin/env bash
# Run tests N times in a row and name every test that did not pass every time (a flake, or a test that
# always fails), with its outcome in each run; a test skipped every time is listed apart, with its reason.
#   scripts/flake_check.sh [N] [pytest args]      e.g. scripts/flake_check.sh 10 tests/server/test_ray.py
# Default: N=3 over the default suite (-m "not slow"). Each run's junit XML and output stay in
# $FLAKE_DIR (default: a new folder under /tmp, printed). Exit 0 only when every test passed (or
# skipped) in every run.
set -euo pipefail
cd "$(dirname "$0")/.."
N=3
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then N=$1; shift; fi
[ "$N" -ge 1 ] || { echo "error: N must be at least 1" >&2; exit 2; }
args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(-m "not slow")
[ -x .venv/bin/python ] || { echo "error: no .venv: run scripts/test.sh (or scripts/setup.sh dev) once first" >&2; exit 2; }
dir="${FLAKE_DIR:-$(mktemp -d /tmp/flake-check.XXXXXX)}"
mkdir -p "$dir"
echo "flake_check: $N runs of pytest ${args[*]}; logs in $dir"
for i in $(seq 1 "$N"); do
  start=$SECONDS
  set +e
  .venv/bin/python -m pytest -q -p no:cacheprovider -ra --junitxml="$dir/run$i.xml" "${args[@]}" >"$dir/run$i.log" 2>&1
  rc=$?
  set -e
  echo "flake_check: run $i/$N: exit $rc, $((SECONDS - start)) s, $(grep -E ' in [0-9.]+s' "$dir/run$i.log" | tail -n 1 | tr -d '=')"
done
exec .venv/bin/python scripts/flake_report.py "$dir" "$N"
