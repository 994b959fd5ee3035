#!/usr/bin/env bash
# Multi-turn code RL (GRPO) with the code_interpreter tool, on verl 0.9.1 (main_ppo), unpatched.
# Defaults are the recipe's hyper-parameters (Qwen3-1.7B after tool-call SFT, one 8-card node).
#
#   scripts/run_code_rl_demo.sh [--dry-run [--strict]] [hydra.key=value ...]
#
# Environment knobs (all optional): MODEL_PATH, TRAIN_FILES, VAL_FILES, SANDBOX_URL, DEVICE, N_GPUS,
# NNODES, PROJECT, EXPERIMENT, OUTPUT_DIR, TRAIN_BATCH, MINI_BATCH, ROLLOUT_N, LR, MAX_PROMPT,
# MAX_RESPONSE, MAX_TURNS, TEMPERATURE, EPOCHS, SAVE_FREQ, TEST_FREQ, SCORE_MODE, GPU_MEM_UTIL,
# RECORD_DIR (per-sample records for `coderl view`, default OUTPUT_DIR/records, empty: off),
# RECORD_EVERY (k: record every k-th prompt group only; default 1).
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_common_args "$@"
detect_device

MODEL_PATH="${MODEL_PATH:-$CODERL_ROOT/checkpoints/sft/merged}"
TRAIN_FILES="${TRAIN_FILES:-$CODERL_ROOT/data/rl/train.parquet}"
VAL_FILES="${VAL_FILES:-$CODERL_ROOT/data/rl/validation.parquet}"
SANDBOX_URL="${SANDBOX_URL:-http://127.0.0.1:8080}"
PROJECT="${PROJECT:-coderl}"
EXPERIMENT="${EXPERIMENT:-qwen3-1.7b-code-rl}"
OUTPUT_DIR="${OUTPUT_DIR:-$CODERL_ROOT/outputs/$EXPERIMENT}"
MAX_PROMPT="${MAX_PROMPT:-2048}"
MAX_RESPONSE="${MAX_RESPONSE:-16384}"
MAX_TURNS="${MAX_TURNS:-16}"
TRAIN_BATCH="${TRAIN_BATCH:-128}" MINI_BATCH="${MINI_BATCH:-32}" TEMPERATURE="${TEMPERATURE:-0.9}"
SAVE_FREQ="${SAVE_FREQ:-20}" TEST_FREQ="${TEST_FREQ:-20}" EPOCHS="${EPOCHS:-15}"

grpo_overrides \
  "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$(( (MAX_PROMPT + MAX_RESPONSE) * 2 ))" \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.kl_loss_coef=0.001 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.ref.fsdp_config.param_offload=True \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  "actor_rollout_ref.rollout.multi_turn.max_user_turns=$MAX_TURNS" \
  "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=$MAX_TURNS" \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=1024 \
  "actor_rollout_ref.rollout.multi_turn.tool_config_path=$CODERL_ROOT/tool_config/code_interpreter.yaml" \
  actor_rollout_ref.rollout.agent.num_workers=8 \
  actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent \
  "reward.custom_reward_function.path=$(reward_file)" \
  reward.custom_reward_function.name=compute_score \
  "+reward.custom_reward_function.reward_kwargs.sandbox_url='$SANDBOX_URL'" \
  "+reward.custom_reward_function.reward_kwargs.score_mode=${SCORE_MODE:-binary}" \
  "+reward.custom_reward_function.reward_kwargs.log_dir=$OUTPUT_DIR/reward_samples" \
  "+reward.custom_reward_function.reward_kwargs.record_dir='${RECORD_DIR-$OUTPUT_DIR/records}'" \
  "+reward.custom_reward_function.reward_kwargs.record_every=${RECORD_EVERY:-1}"

if [ "$DRY_RUN" = 1 ]; then
  exec "$PYTHON" -m coderl.verl.dryrun rl "${STRICT[@]}" "${OVERRIDES[@]}"
fi
check_sandbox "$SANDBOX_URL"
mkdir -p "$OUTPUT_DIR"
exec "$PYTHON" -m verl.trainer.main_ppo "${OVERRIDES[@]}"
