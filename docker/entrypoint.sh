#!/usr/bin/env bash
# Container entrypoint: start the sandbox service supervised (restarted if it dies, unless it exits
# 3, coderl's "this host cannot run the sandbox": then so does this, at once), wait until it is
# ready, run the given command (default: a shell), forward SIGTERM/SIGINT to it, and exit with its
# exit code (stopping the service on the way out).
#
# Environment: CODERL_SERVICE_CMD (default: "coderl serve"), CODERL_HOST (127.0.0.1), CODERL_PORT
# (8080), CODERL_READY_TIMEOUT (180 s), CODERL_RESTART_DELAY (1 s), CODERL_SERVICE_PIDFILE
# (where the running service's pid is kept, default /tmp/coderl-service.pid).
set -uo pipefail

SERVICE_CMD="${CODERL_SERVICE_CMD:-coderl serve}"
HOST="${CODERL_HOST:-127.0.0.1}"
PORT="${CODERL_PORT:-8080}"
READY_TIMEOUT="${CODERL_READY_TIMEOUT:-180}"
RESTART_DELAY="${CODERL_RESTART_DELAY:-1}"
PIDFILE="${CODERL_SERVICE_PIDFILE:-/tmp/coderl-service.pid}"
export CODERL_HOST="$HOST" CODERL_PORT="$PORT"

log() { echo "entrypoint: $*" >&2; }

supervise() {
  local stopping=0 svc
  trap 'stopping=1; [ -n "${svc:-}" ] && kill -TERM "$svc" 2>/dev/null' TERM INT
  while [ "$stopping" = 0 ]; do
    # shellcheck disable=SC2086  # the command is a command line on purpose
    $SERVICE_CMD &
    svc=$!
    echo "$svc" > "$PIDFILE"
    wait "$svc"
    rc=$?
    wait "$svc" 2>/dev/null  # a trapped signal interrupts the first wait
    [ "$stopping" = 1 ] && break
    if [ "$rc" = 3 ]; then  # coderl's exit code for a host that cannot run the sandbox: no retry helps
      log "the sandbox service cannot start here (its reason is the line above); not restarting it"
      rm -f "$PIDFILE"; exit 3
    fi
    log "service exited with $rc; restarting in ${RESTART_DELAY}s"
    sleep "$RESTART_DELAY"
  done
  rm -f "$PIDFILE"
}

supervise &
SUPERVISOR=$!
stop_service() { kill -TERM "$SUPERVISOR" 2>/dev/null; wait "$SUPERVISOR" 2>/dev/null; }
# Stopped before the service is ready: stop it too (no supervisor left restarting it).
trap 'log "stopped while starting"; stop_service; exit 143' TERM
trap 'log "interrupted while starting"; stop_service; exit 130' INT

probe_host="$HOST"; case "$HOST" in 0.0.0.0|::) probe_host=127.0.0.1 ;; esac
# in the background, so a signal's trap runs at once rather than after the probe
coderl health "http://$probe_host:$PORT" --quiet --wait "$READY_TIMEOUT" --while-alive "$SUPERVISOR" &
wait $!
case $? in
  0) ;;
  3) wait "$SUPERVISOR"; exit $? ;;  # it gave up: fail fast with the service's reason
  *) log "service not ready after ${READY_TIMEOUT}s"; stop_service; exit 1 ;;
esac
log "sandbox ready at http://$HOST:$PORT"

[ "$#" -gt 0 ] || set -- bash
"$@" &
CHILD=$!
got_signal=0
# The signal goes to the command itself (not a process group, which would take the terminal from an
# interactive shell): a command line that starts others should `exec` the last one.
forward() { got_signal=1; kill -"$1" "$CHILD" 2>/dev/null; }
trap 'forward TERM' TERM
trap 'forward INT' INT
while :; do  # a trapped signal cuts `wait` short: wait again until one ends with no signal in it
  got_signal=0
  wait "$CHILD"
  status=$?
  [ "$got_signal" = 1 ] || break  # bash keeps a reaped child's status, so waiting again is safe
done
stop_service
exit "$status"
