#!/usr/bin/env bash
# Start the sandbox service in the background, supervised (restarted if it dies), and return once
# it is ready; `scripts/start_sandbox.sh stop` stops it. Logs go to $CODERL_LOG_DIR/sandbox.log.
#
#   CODERL_HOST, CODERL_PORT, CODERL_SLOTS, ... are read by `coderl serve` (see coderl serve --help).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LOG_DIR="${CODERL_LOG_DIR:-$ROOT/outputs/logs}"
SUPERVISOR_PID="$LOG_DIR/sandbox-supervisor.pid"
mkdir -p "$LOG_DIR"
if [ -x "$ROOT/.venv/bin/coderl" ]; then export PATH="$ROOT/.venv/bin:$PATH"; fi

if [ "${1:-start}" = stop ]; then
  if [ -f "$SUPERVISOR_PID" ] && kill -TERM "$(cat "$SUPERVISOR_PID")" 2>/dev/null; then
    echo "sandbox: stopping"; rm -f "$SUPERVISOR_PID"; exit 0
  fi
  echo "sandbox: not running" >&2; exit 1
fi
if [ -f "$SUPERVISOR_PID" ] && kill -0 "$(cat "$SUPERVISOR_PID")" 2>/dev/null; then
  echo "sandbox: already running (pid $(cat "$SUPERVISOR_PID"))"; exit 0
fi
command -v coderl >/dev/null || { echo "error: coderl is not installed (bash scripts/setup.sh)" >&2; exit 1; }
# The entrypoint supervises the service and, once it is ready, runs the keep-alive command.
nohup "$ROOT/docker/entrypoint.sh" sleep infinity >> "$LOG_DIR/sandbox.log" 2>&1 &
echo $! > "$SUPERVISOR_PID"
coderl health "http://127.0.0.1:${CODERL_PORT:-8080}" --quiet --wait "${CODERL_READY_TIMEOUT:-180}" \
  --while-alive "$(cat "$SUPERVISOR_PID")"
case $? in
  0) echo "sandbox: ready at http://${CODERL_HOST:-127.0.0.1}:${CODERL_PORT:-8080} (log: $LOG_DIR/sandbox.log)" ;;
  3) echo "error: sandbox failed to start; see $LOG_DIR/sandbox.log" >&2; tail -n 5 "$LOG_DIR/sandbox.log" >&2; exit 1 ;;
  *) echo "error: sandbox not ready in time; see $LOG_DIR/sandbox.log" >&2; exit 1 ;;
esac
