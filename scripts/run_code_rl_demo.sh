#!/usr/bin/env bash
# Multi-turn code RL (GRPO) with the code_interpreter tool, on verl 0.9.1 (main_ppo), unpatched.
# Defaults are the recipe's hyper-parameters (Qwen3-1.7B after tool-call SFT, one 8-card node).
#
#   scripts/run_code_rl_demo.sh [--dry-run [--strict]] [hydra.key=value ...]
#
# Environment knobs (all optional): MODEL_PATH, TRAIN_FILES, VAL_FILES, SANDBOX_URL, DEVICE, N_GPUS,
# NNODES, PROJECT, EXPERIMENT, OUTPUT_DIR, TRAIN_BATCH, MINI_BATCH, ROLLOUT_N, LR, MAX_PROMPT,
# MAX_RESPONSE, MAX_TURNS, TEMPERATURE, EPOCHS, SAVE_FREQ, TEST_FREQ, SCORE_MODE, GPU_MEM_UTIL.
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

OVERRIDES=(
  algorithm.adv_estimator=grpo
  algorithm.use_kl_in_reward=False
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  "data.train_batch_size=${TRAIN_BATCH:-128}"
  "data.max_prompt_length=$MAX_PROMPT"
  "data.max_response_length=$MAX_RESPONSE"
  data.filter_overlong_prompts=True
  data.truncation=error
  "actor_rollout_ref.model.path=$MODEL_PATH"
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.model.use_remove_padding=True
  "actor_rollout_ref.actor.optim.lr=${LR:-1e-6}"
  "actor_rollout_ref.actor.ppo_mini_batch_size=${MINI_BATCH:-32}"
  actor_rollout_ref.actor.use_dynamic_bsz=True
  "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$(( (MAX_PROMPT + MAX_RESPONSE) * 2 ))"
  actor_rollout_ref.actor.use_kl_loss=True
  actor_rollout_ref.actor.kl_loss_coef=0.001
  actor_rollout_ref.actor.kl_loss_type=low_var_kl
  actor_rollout_ref.actor.entropy_coeff=0
  actor_rollout_ref.actor.clip_ratio_low=0.2
  actor_rollout_ref.actor.clip_ratio_high=0.28
  actor_rollout_ref.actor.fsdp_config.param_offload=True
  actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
  actor_rollout_ref.ref.fsdp_config.param_offload=True
  actor_rollout_ref.rollout.name=vllm
  "actor_rollout_ref.rollout.n=${ROLLOUT_N:-8}"
  "actor_rollout_ref.rollout.temperature=${TEMPERATURE:-0.9}"
  "actor_rollout_ref.rollout.gpu_memory_utilization=${GPU_MEM_UTIL:-0.7}"
  actor_rollout_ref.rollout.multi_turn.enable=True
  "actor_rollout_ref.rollout.multi_turn.max_user_turns=$MAX_TURNS"
  "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=$MAX_TURNS"
  actor_rollout_ref.rollout.multi_turn.format=hermes
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length=1024
  "actor_rollout_ref.rollout.multi_turn.tool_config_path=$CODERL_ROOT/tool_config/code_interpreter.yaml"
  actor_rollout_ref.rollout.agent.num_workers=8
  actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent
  "reward.custom_reward_function.path=$(reward_file)"
  reward.custom_reward_function.name=compute_score
  "+reward.custom_reward_function.reward_kwargs.sandbox_url='$SANDBOX_URL'"
  "+reward.custom_reward_function.reward_kwargs.score_mode=${SCORE_MODE:-binary}"
  "+reward.custom_reward_function.reward_kwargs.log_dir=$OUTPUT_DIR/reward_samples"
  "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SANDBOX_URL='$SANDBOX_URL'"
  "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH=$OUTPUT_DIR/metrics.jsonl"
)
grpo_trainer_overrides 20 20 15
export CODERL_SANDBOX_URL="$SANDBOX_URL" VERL_FILE_LOGGER_PATH="$OUTPUT_DIR/metrics.jsonl"

if [ "$DRY_RUN" = 1 ]; then
  exec "$PYTHON" "$CODERL_ROOT/scripts/verl_dryrun.py" rl "${STRICT[@]}" "${OVERRIDES[@]}"
fi
check_sandbox "$SANDBOX_URL"
mkdir -p "$OUTPUT_DIR"
exec "$PYTHON" -m verl.trainer.main_ppo "${OVERRIDES[@]}"
