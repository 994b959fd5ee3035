#!/usr/bin/env bash
# Shared helpers for the training scripts (sourced, not run).

CODERL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$( [ -x "$CODERL_ROOT/.venv/bin/python" ] && echo "$CODERL_ROOT/.venv/bin/python" || echo python3 )}"

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
  "$PYTHON" -c "import coderl.reward.code_reward as m; print(m.__file__)"
}

# The trainer keys and the Ascend settings both GRPO scripts share, then the user's overrides last
# (Hydra keeps the last value). Arguments: the default save_freq, test_freq and total_epochs.
grpo_trainer_overrides() {
  OVERRIDES+=(
    "trainer.device=$DEVICE"
    "trainer.n_gpus_per_node=$N_GPUS"
    "trainer.nnodes=${NNODES:-1}"
    "trainer.project_name=$PROJECT"
    "trainer.experiment_name=$EXPERIMENT"
    "trainer.default_local_dir=$OUTPUT_DIR/checkpoints"
    "trainer.rollout_data_dir=$OUTPUT_DIR/rollouts"
    "trainer.logger=[console,file]"
    "trainer.save_freq=${SAVE_FREQ:-$1}"
    "trainer.test_freq=${TEST_FREQ:-$2}"
    "trainer.total_epochs=${EPOCHS:-$3}"
  )
  if [ "$DEVICE" = npu ]; then
    export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 HCCL_CONNECT_TIMEOUT="${HCCL_CONNECT_TIMEOUT:-1500}"
    OVERRIDES+=(actor_rollout_ref.rollout.enable_chunked_prefill=False actor_rollout_ref.actor.use_torch_compile=False)
  fi
  OVERRIDES+=("${EXTRA_OVERRIDES[@]}")
}
