#!/usr/bin/env bash
# One GRPO step of the agentic CPU smoke run with its session sandboxes REMOTE: every episode's sandbox
# (the stock mini-swe-agent, the task's repository) is opened over HTTP on a `coderl serve` session
# service (the agent-loop YAML's sessions_url), its model calls come back to the loop's gateway through
# the service's per-session relay, and `score: repo` grades through the same service. The rest is
# scripts/smoke_agent_pipeline.sh's RL stage (its CPU profile, run_agent_rl.sh, the repository's
# tool_config/agent_loop.yaml with only sessions_url added).
#
#   scripts/smoke_agent_remote_step.sh MODEL_DIR [RUN_DIR]     (default outputs/agent-remote-step)
#
# MODEL_DIR: a merged HF model with the tiny smoke tokenizer, e.g. the agent smoke run's RUN/sft/merged.
# SESSIONS_URL: an existing session service or replica list whose nodes hold the builtin task mirrors
# and mini's venv; unset: one `coderl serve` is started here on loopback (its own process, its own
# snapshots and environments). SMOKE_REMOTE_EPISODES (8): the step's episodes, all on the train split's
# first task. SMOKE_FAULT_RATE (0: off; e.g. 0.2): the loop reaches the service through a loopback
# proxy that fails that fraction of its /v1/swe/grade requests (scripts/smoke_fault_proxy.py, log
# RUN/logs/fault_proxy.jsonl): those episodes are sandbox errors, masked and counted. Writes
# RUN/report.json: the step's episodes (from their records), what the service served (its request
# counters), verl's metrics of the step.
set -euo pipefail
source "$(dirname "$0")/common.sh"
case "${1:-}" in ""|-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;; esac
[ -d "$1" ] || { echo "error: no model directory at $1" >&2; exit 2; }
MODEL="$(cd "$1" && pwd)"
RUN="${2:-$CODERL_ROOT/outputs/agent-remote-step}"
RUN="$(mkdir -p "$RUN" && cd "$RUN" && pwd)"
EPISODES="${SMOKE_REMOTE_EPISODES:-8}"
case "$EPISODES" in [2-9]|[1-9][0-9]) ;; *) echo "error: SMOKE_REMOTE_EPISODES must be 2-99 (one GRPO group), got $EPISODES" >&2; exit 2 ;; esac
export SMOKE_RL_STEPS=1
source "$CODERL_ROOT/scripts/smoke_profile.sh"
source "$CODERL_ROOT/scripts/smoke_stages.sh"
source "$CODERL_ROOT/scripts/smoke_agent_settings.sh"
rm -rf "$RUN"/{data,rl,logs,sessions,stages.tsv,agent_loop.yaml,service_metrics.txt,report.json}
mkdir -p "$RUN/logs"
: > "$STAGES"
stage env setup_env
stage data coderl data swe --source builtin --split train --limit 1 --build-envs --out "$RUN/data/swe"

SERVICE="" FAULT_PROXY=""
cleanup() {
  local pid
  for pid in $FAULT_PROXY $SERVICE; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
if [ -z "${SESSIONS_URL:-}" ]; then
  PORT="$("$PYTHON" -c 'from coderl.server.launch import free_port; print(free_port())')"
  SESSIONS_URL="http://127.0.0.1:$PORT"
  CODERL_SWE_REPOS="$RUN/data/swe/builtin/repos" CODERL_SESSION_BINDS="$MINI_SWE_AGENT_VENV" \
    CODERL_SESSION_DIR="$RUN/sessions" coderl serve --port "$PORT" --slots 1 > "$RUN/logs/serve.log" 2>&1 &
  SERVICE=$!
  coderl health "$SESSIONS_URL" --wait 180 --while-alive "$SERVICE"
fi
# the fault switch: the agent loop's sessions_url is the proxy in front of the (first) service
LOOP_SESSIONS_URL="$SESSIONS_URL"
if [ "${SMOKE_FAULT_RATE:-0}" != 0 ]; then
  start_fault_proxy "${SESSIONS_URL%%,*}" "$RUN/logs/fault_proxy.jsonl"
  LOOP_SESSIONS_URL="$FAULT_URL"
fi
# the repository's agent-loop YAML with the session service added
"$PYTHON" - "$CODERL_ROOT/tool_config/agent_loop.yaml" "$LOOP_SESSIONS_URL" > "$RUN/agent_loop.yaml" <<'PY'
import sys, yaml
entries = yaml.safe_load(open(sys.argv[1]))
for entry in entries:
    if entry["name"] == "coderl_gateway_agent":
        entry["sessions_url"] = sys.argv[2]
print(yaml.safe_dump(entries, sort_keys=False))
PY

# the agent smoke run's RL settings (scripts/smoke_agent_settings.sh), one step of one group
stage rl env MODEL_PATH="$MODEL" TRAIN_FILES="$RUN/data/swe/train.parquet" VAL_FILES="$RUN/data/swe/train.parquet" \
  OUTPUT_DIR="$RUN/rl" EXPERIMENT=agent-remote-step TRAIN_BATCH=1 MINI_BATCH=1 ROLLOUT_N="$EPISODES" \
  EPOCHS=1 SAVE_FREQ=-1 "${AGENT_SMOKE_RL[@]}" AGENT_LOOPS="$RUN/agent_loop.yaml" \
  bash "$CODERL_ROOT/scripts/run_agent_rl.sh" "${SMOKE_RL_OVERRIDES[@]}"

# what the service served, read while it still runs (first replica of a list)
"$PYTHON" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=30).read().decode())' \
  "${SESSIONS_URL%%,*}" > "$RUN/service_metrics.txt"
"$PYTHON" "$CODERL_ROOT/scripts/smoke_agent_remote_report.py" "$RUN" "$MODEL"
