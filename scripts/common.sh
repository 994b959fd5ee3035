#!/usr/bin/env bash
# Shared helpers for the scripts (sourced, not run). Every script finds the checkout and the Python
# here, one way: CODERL_ROOT, the checkout this file is in; PYTHON, the interpreter coderl runs with
# ($PYTHON when set, else the checkout's .venv, else python3 -- the one setup.sh makes the .venv with).

CODERL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$( [ -x "$CODERL_ROOT/.venv/bin/python" ] && echo "$CODERL_ROOT/.venv/bin/python" || echo python3 )}"

# stamp_for DIR NAME INPUT...: sets STAMP to DIR/.NAME-<hash of the inputs' contents>. A build from
# those inputs is complete when STAMP exists; stamp_done marks it so once the build succeeded (and
# drops the stamps of older inputs), so a changed input or an interrupted build means building again.
stamp_for() {
  local dir="$1" name="$2"; shift 2
  STAMP="$dir/.$name-$(cat "$@" | sha256sum | cut -c1-16)"
}
stamp_done() {
  rm -f "${STAMP%-*}"-*
  touch "$STAMP"
}

# --help: the calling script's header comment (the lines after the shebang, up to the first code line)
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# Parse --dry-run / --strict out of "$@"; the rest are Hydra overrides passed through to verl.
parse_common_args() {
  DRY_RUN=0; STRICT=(); EXTRA_OVERRIDES=()
  for arg in "$@"; do
    case "$arg" in
      --dry-run) DRY_RUN=1 ;;
      --strict) STRICT=(--strict) ;;
      -h|--help) usage; exit 0 ;;
      --*) echo "error: unknown option $arg (Hydra overrides look like key=value)" >&2; exit 2 ;;
      *) EXTRA_OVERRIDES+=("$arg") ;;
    esac
  done
}

# Parse --dry-run / --help out of "$@" for the scripts that take paths (merge_checkpoint.sh,
# eval_livecodebench.sh): DRY_RUN, and ARGS (the rest, in order). OPTIONS=pass (the first argument)
# keeps other --options in ARGS for the command the script runs; OPTIONS=reject makes them an error.
parse_path_args() {
  local options="$1"; shift
  DRY_RUN=0; ARGS=()
  for arg in "$@"; do
    case "$arg" in
      --dry-run) DRY_RUN=1 ;;
      -h|--help) usage; exit 0 ;;
      --*) [ "$options" = pass ] || { echo "error: unknown option $arg" >&2; exit 2; }; ARGS+=("$arg") ;;
      *) ARGS+=("$arg") ;;
    esac
  done
}

# DEVICE (npu when torch_npu imports, else cuda) and N_GPUS (visible accelerators), unless set.
# Call after parse_common_args: only a dry-run may go on without accelerators.
detect_device() {
  if [ -z "${DEVICE:-}" ]; then
    if "$PYTHON" -c "import torch_npu" >/dev/null 2>&1; then DEVICE=npu; else DEVICE=cuda; fi
  fi
  if [ -z "${N_GPUS:-}" ]; then
    if [ "$DEVICE" = npu ]; then
      N_GPUS=$("$PYTHON" -c "import torch, torch_npu; print(torch.npu.device_count())" 2>/dev/null || echo 0)
    else
      N_GPUS=$("$PYTHON" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
    fi
    if ! [ "$N_GPUS" -gt 0 ] 2>/dev/null; then
      if [ "${DRY_RUN:-0}" = 1 ]; then
        N_GPUS=8   # a dry-run on a machine without accelerators plans for one 8-card node
      else
        echo "error: no $DEVICE devices visible (set DEVICE=cuda|npu and N_GPUS=<count> if detection is wrong)" >&2
        exit 1
      fi
    fi
  fi
  export DEVICE N_GPUS
}

# Fail fast when the sandbox service is down: training would score every sample as a sandbox error.
check_sandbox() {
  local url="$1" one
  for one in ${url//,/ }; do
    "$PYTHON" -m coderl.cli health --quiet "$one" && return 0
  done
  echo "error: sandbox at $url is not ready (start it: scripts/start_sandbox.sh, or coderl serve)" >&2; exit 1
}

reward_file() {
  "$PYTHON" -c "import coderl.verl.reward as m; print(m.__file__)"
}

# The GRPO run both RL scripts share: algorithm, data, model, actor, rollout and trainer keys, the
# sandbox URL and metrics file for the workers, the Ascend settings. The script's own keys come as
# arguments, after the shared ones; the user's overrides go last (Hydra keeps the last value). Reads
# the knobs the scripts document (MODEL_PATH, TRAIN_FILES, VAL_FILES, SANDBOX_URL, PROJECT, EXPERIMENT,
# OUTPUT_DIR, MAX_PROMPT, MAX_RESPONSE, LR, ROLLOUT_N, GPU_MEM_UTIL, NNODES) and the ones whose
# defaults differ per script, which the script sets first: TRAIN_BATCH, MINI_BATCH, TEMPERATURE,
# SAVE_FREQ, TEST_FREQ, EPOCHS.
grpo_overrides() {
  OVERRIDES=(
    # GRPO over the scored samples: a sandbox error trains nothing, stays out of its group's
    # statistics and is counted (coderl/verl/scored_grpo.py; its records in OUTPUT_DIR/grpo)
    algorithm.adv_estimator=grpo_scored
    trainer.v1.sampler.custom_sampler.path=pkg://coderl.verl.scored_grpo
    trainer.v1.sampler.custom_sampler.name=ScoredReplayBuffer
    "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_GRPO_LOG_DIR=$OUTPUT_DIR/grpo"
    algorithm.use_kl_in_reward=False
    "data.train_files=$TRAIN_FILES"
    "data.val_files=$VAL_FILES"
    "data.train_batch_size=$TRAIN_BATCH"
    "data.max_prompt_length=$MAX_PROMPT"
    "data.max_response_length=$MAX_RESPONSE"
    data.filter_overlong_prompts=True
    data.truncation=error
    "actor_rollout_ref.model.path=$MODEL_PATH"
    actor_rollout_ref.model.enable_gradient_checkpointing=True
    actor_rollout_ref.model.use_remove_padding=True
    "actor_rollout_ref.actor.optim.lr=${LR:-1e-6}"
    "actor_rollout_ref.actor.ppo_mini_batch_size=$MINI_BATCH"
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.clip_ratio_low=0.2
    actor_rollout_ref.actor.clip_ratio_high=0.28
    actor_rollout_ref.actor.fsdp_config.param_offload=True
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
    actor_rollout_ref.rollout.name=vllm
    "actor_rollout_ref.rollout.n=${ROLLOUT_N:-8}"
    "actor_rollout_ref.rollout.temperature=$TEMPERATURE"
    "actor_rollout_ref.rollout.gpu_memory_utilization=${GPU_MEM_UTIL:-0.7}"
    "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SANDBOX_URL='$SANDBOX_URL'"
    "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH=$OUTPUT_DIR/metrics.jsonl"
    "$@"
    "trainer.device=$DEVICE"
    "trainer.n_gpus_per_node=$N_GPUS"
    "trainer.nnodes=${NNODES:-1}"
    "trainer.project_name=$PROJECT"
    "trainer.experiment_name=$EXPERIMENT"
    "trainer.default_local_dir=$OUTPUT_DIR/checkpoints"
    "trainer.rollout_data_dir=$OUTPUT_DIR/rollouts"
    "trainer.logger=[console,file]"
    "trainer.save_freq=$SAVE_FREQ"
    "trainer.test_freq=$TEST_FREQ"
    "trainer.total_epochs=$EPOCHS"
  )
  if [ "$DEVICE" = npu ]; then
    export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 HCCL_CONNECT_TIMEOUT="${HCCL_CONNECT_TIMEOUT:-1500}"
    OVERRIDES+=(actor_rollout_ref.rollout.enable_chunked_prefill=False actor_rollout_ref.actor.use_torch_compile=False)
  fi
  OVERRIDES+=("${EXTRA_OVERRIDES[@]}")
  export CODERL_SANDBOX_URL="$SANDBOX_URL" VERL_FILE_LOGGER_PATH="$OUTPUT_DIR/metrics.jsonl"
}
