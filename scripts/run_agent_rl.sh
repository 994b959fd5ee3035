#!/usr/bin/env bash
# Agentic coding RL (GRPO) on verl 0.9.1 (main_ppo), unpatched: an unmodified agent harness per sample
# (mini-swe-agent by default) runs in a session sandbox; its model calls go through coderl's
# interception gateway to verl's rollout servers, token-exactly (coderl_gateway_agent, docs/agent.md).
#
#   scripts/run_agent_rl.sh [--dry-run [--strict]] [hydra.key=value ...]
#
# Environment knobs (all optional): MODEL_PATH, TRAIN_FILES, VAL_FILES (default: coderl data swe output),
# AGENT_LOOPS (agent-loop YAML), MINI_SWE_AGENT_VENV, CODERL_AGENT_SCORE (repo|code), SANDBOX_URL (code
# score), DEVICE, N_GPUS, NNODES, PROJECT, EXPERIMENT, OUTPUT_DIR, TRAIN_BATCH, MINI_BATCH, ROLLOUT_N,
# LR, MAX_PROMPT, MAX_RESPONSE, TEMPERATURE, EPOCHS, SAVE_FREQ, TEST_FREQ, AGENT_WORKERS, GPU_MEM_UTIL,
# RECORD_DIR (per-episode records for `coderl view`, default OUTPUT_DIR/records, empty: off), RECORD_EVERY,
# CODERL_GRADING_WARM (grading runs started ahead per repository task, default 1: a group grades each task
# ROLLOUT_N times; 0 = off).
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_common_args "$@"
detect_device

MODEL_PATH="${MODEL_PATH:-$CODERL_ROOT/checkpoints/sft/merged}"
TRAIN_FILES="${TRAIN_FILES:-$CODERL_ROOT/data/swe/train.parquet}"
VAL_FILES="${VAL_FILES:-$CODERL_ROOT/data/swe/validation.parquet}"
AGENT_LOOPS="${AGENT_LOOPS:-$CODERL_ROOT/tool_config/agent_loop.yaml}"  # empty counts as unset
SANDBOX_URL="${SANDBOX_URL:-http://127.0.0.1:8080}"
PROJECT="${PROJECT:-coderl}"
EXPERIMENT="${EXPERIMENT:-qwen3-1.7b-agent-rl}"
OUTPUT_DIR="${OUTPUT_DIR:-$CODERL_ROOT/outputs/$EXPERIMENT}"
MAX_PROMPT="${MAX_PROMPT:-4096}"      # the harness's system prompt + task
MAX_RESPONSE="${MAX_RESPONSE:-28672}" # every turn after it (tool output included); the gateway clamps each turn to it
TRAIN_BATCH="${TRAIN_BATCH:-16}" MINI_BATCH="${MINI_BATCH:-8}" TEMPERATURE="${TEMPERATURE:-1.0}"
SAVE_FREQ="${SAVE_FREQ:-10}" TEST_FREQ="${TEST_FREQ:-10}" EPOCHS="${EPOCHS:-5}"

grpo_overrides \
  "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$(( MAX_PROMPT + MAX_RESPONSE ))" \
  actor_rollout_ref.actor.use_kl_loss=False \
  actor_rollout_ref.rollout.calculate_log_probs=True \
  "actor_rollout_ref.rollout.agent.num_workers=${AGENT_WORKERS:-8}" \
  "actor_rollout_ref.rollout.agent.agent_loop_config_path=$AGENT_LOOPS" \
  actor_rollout_ref.rollout.agent.default_agent_loop=coderl_gateway_agent \
  "+ray_kwargs.ray_init.runtime_env.env_vars.MINI_SWE_AGENT_VENV='${MINI_SWE_AGENT_VENV:-/opt/mini-swe-agent}'" \
  "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_AGENT_SCORE='${CODERL_AGENT_SCORE:-repo}'" \
  "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_RECORD_DIR='${RECORD_DIR-$OUTPUT_DIR/records}'" \
  "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_RECORD_EVERY='${RECORD_EVERY:-1}'" \
  "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_GRADING_WARM='${CODERL_GRADING_WARM:-1}'"
export MINI_SWE_AGENT_VENV="${MINI_SWE_AGENT_VENV:-/opt/mini-swe-agent}" CODERL_AGENT_SCORE="${CODERL_AGENT_SCORE:-repo}"

# the agent-loop YAML: options, command placeholders, harness install (errors stop here, warnings print)
"$PYTHON" - "$AGENT_LOOPS" "${STRICT[@]}" <<'PY' || exit 1
import sys
from coderl.verl.agent_loop import check_agent_loops
try:
    warnings = check_agent_loops(sys.argv[1])
except Exception as exc:  # one line, never a traceback
    sys.exit(f"dry-run: FAILED: agent loops {sys.argv[1]}: {exc}")
for w in warnings:
    print(f"dry-run: warning: {w}", file=sys.stderr)
if warnings and "--strict" in sys.argv[2:]:
    sys.exit("dry-run: FAILED: warnings are errors with --strict")
print(f"agent loops: {sys.argv[1]} OK")
PY

if [ "$DRY_RUN" = 1 ]; then
  exec "$PYTHON" -m coderl.verl.dryrun rl "${STRICT[@]}" "${OVERRIDES[@]}"
fi
mkdir -p "$OUTPUT_DIR"
exec "$PYTHON" -m verl.trainer.main_ppo "${OVERRIDES[@]}"
