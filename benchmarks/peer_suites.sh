#!/usr/bin/env bash
# The peers' own test suites against our routes (issue 37 item 5), unmodified, with only the
# endpoint swapped: SandboxFusion's runner tests (sandbox/tests/runners; their TestClient(app)
# becomes an HTTP client to the service, benchmarks/peer_swap.py), ScaleBox's common_evaluate
# suite (it reads URL), verl's sandbox_fusion reward tests (they read SANDBOX_FUSION_URL).
# Fetches nothing: give the checkouts.
#
#   benchmarks/peer_suites.sh SANDBOXFUSION_DIR SCALEBOX_DIR VERL_DIR [URL]
#
# Without URL it starts `coderl serve` on a free loopback port (extra flags: $SERVE_FLAGS) and
# stops it at the end. PEER_PYTHON (default python3) must have SandboxFusion's test deps: pytest<8,
# pytest-asyncio<0.24, httpx, requests, "pydantic<2.7", "fastapi<0.104", structlog, psutil,
# aiofiles, aiohttp, tenacity, pyyaml. verl's tests run on the project's python (its verl), from a
# copy of their folder so that the checkout's own verl/ does not shadow it. Prints each suite's
# counts and exits 1 when a test fails that benchmarks/peer_suites_known_failures.txt does not
# list. About 6 minutes on 2 vCPUs.
set -uo pipefail
source "$(dirname "$0")/../scripts/common.sh"
[ $# -ge 3 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
SF=$(realpath "$1"); SB=$(realpath "$2"); VERL=$(realpath "$3"); URL=${4:-}
for d in "$SF/sandbox/tests/runners" "$SB/sandbox/tests/runners" "$VERL/tests/utils/reward_score"; do
  [ -d "$d" ] || { echo "error: $d: no such folder (is that the right checkout?)" >&2; exit 2; }
done
PEER_PYTHON=${PEER_PYTHON:-python3}
WORK=$(mktemp -d); SERVER=""
cleanup() { [ -n "$SERVER" ] && kill -TERM -- "-$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
if [ -z "$URL" ]; then
  port=$("$PYTHON" -c 'from coderl.server.launch import free_port; print(free_port())')
  URL="http://127.0.0.1:$port"
  setsid "$PYTHON" -m coderl.cli serve --port "$port" ${SERVE_FLAGS:-} > "$WORK/serve.log" 2>&1 &
  SERVER=$!
  "$PYTHON" -m coderl.cli health "$URL" --quiet --wait 180 --while-alive "$SERVER" \
    || { echo "error: coderl serve did not start:" >&2; tail -20 "$WORK/serve.log" >&2; exit 1; }
fi
echo "service: $URL (checkout: $(git -C "$CODERL_ROOT" rev-parse --short HEAD 2>/dev/null || echo "$CODERL_ROOT"))"

( cd "$SF" && PYTHONPATH="$CODERL_ROOT/benchmarks:$SF" CODERL_PEER_URL=$URL "$PEER_PYTHON" -m pytest -p peer_swap \
    -o addopts="" -o asyncio_mode=auto -p no:cacheprovider -q -W ignore --tb=line -rf sandbox/tests/runners \
    --ignore=sandbox/tests/runners/samples > "$WORK/sandboxfusion.txt" 2>&1 )
( cd "$SB" && URL=$URL "$PEER_PYTHON" -m pytest -o addopts="" -p no:cacheprovider -q -W ignore --tb=line -rf \
    sandbox/tests/runners/test_sandbox_common_evaluate.py > "$WORK/scalebox.txt" 2>&1 )
cp -r "$VERL/tests/utils/reward_score" "$WORK/verl-tests"
( cd "$WORK/verl-tests" && SANDBOX_FUSION_URL=$URL/run_code "$PYTHON" -m pytest -p no:cacheprovider -q -W ignore \
    --tb=line -rf reward_score/test_sandbox_fusion_on_cpu.py test_sandbox_on_cpu.py > "$WORK/verl.txt" 2>&1 )

known=$(grep -o '^[^ #]*' "$(dirname "$0")/peer_suites_known_failures.txt")
status=0
for suite in sandboxfusion scalebox verl; do
  echo "$suite: $(grep -E '^=*.*[0-9]+ (passed|failed)' "$WORK/$suite.txt" | tail -1 | tr -d '=' | sed 's/^ *//')"
  for id in $(grep '^FAILED ' "$WORK/$suite.txt" | cut -d' ' -f2 | sed 's#.*/##'); do
    if ! grep -qxF "$id" <<< "$known"; then echo "  NEW FAILURE: $id"; status=1; fi
  done
  grep -q -E '[0-9]+ passed' "$WORK/$suite.txt" || { echo "  the suite did not run:"; tail -5 "$WORK/$suite.txt"; status=1; }
done
exit $status
