#!/usr/bin/env bash
# Start the sandbox service in the background, supervised (restarted if it dies), and return once
# it is ready; `scripts/start_sandbox.sh stop` stops it. Logs go to $CODERL_LOG_DIR/sandbox.log. A
# start that fails (the service gave up, or was not ready in $CODERL_READY_TIMEOUT s) prints this
# start's last log lines, stops what it started and exits 1.
#
#   CODERL_HOST, CODERL_PORT, CODERL_SLOTS, ... are read by `coderl serve` (see coderl serve --help).
set -euo pipefail
source "$(dirname "$0")/common.sh"
LOG_DIR="${CODERL_LOG_DIR:-$CODERL_ROOT/outputs/logs}"
LOG="$LOG_DIR/sandbox.log"
SUPERVISOR_PID="$LOG_DIR/sandbox-supervisor.pid"
mkdir -p "$LOG_DIR"
# the `coderl` beside common.sh's PYTHON comes first on PATH: the one the entrypoint starts
if python_path="$(command -v "$PYTHON")" && [ -x "$(dirname "$python_path")/coderl" ]; then
  export PATH="$(dirname "$python_path"):$PATH"
fi

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
log_start=$(( $(stat -c %s "$LOG" 2>/dev/null || echo 0) + 1 ))  # this start's lines begin here
nohup "$CODERL_ROOT/docker/entrypoint.sh" sleep infinity >> "$LOG" 2>&1 &
echo $! > "$SUPERVISOR_PID"
ready=0
coderl health "http://127.0.0.1:${CODERL_PORT:-8080}" --quiet --wait "${CODERL_READY_TIMEOUT:-180}" \
  --while-alive "$(cat "$SUPERVISOR_PID")" || ready=$?
if [ "$ready" = 0 ]; then
  echo "sandbox: ready at http://${CODERL_HOST:-127.0.0.1}:${CODERL_PORT:-8080} (log: $LOG)"; exit 0
fi
case $ready in
  3) echo "error: sandbox failed to start (log: $LOG); its last lines:" >&2 ;;
  *) echo "error: sandbox not ready in ${CODERL_READY_TIMEOUT:-180}s (log: $LOG); its last lines:" >&2 ;;
esac
tail -c "+$log_start" "$LOG" | tail -n 20 >&2
kill -TERM "$(cat "$SUPERVISOR_PID")" 2>/dev/null || true
rm -f "$SUPERVISOR_PID"
exit 1
