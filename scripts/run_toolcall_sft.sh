#!/usr/bin/env bash
# Multi-turn tool-call SFT on verl 0.9.1 (verl.trainer.sft_trainer under torchrun), unpatched.
#
#   scripts/run_toolcall_sft.sh [--dry-run [--strict]] [hydra.key=value ...]
#
# Environment knobs: MODEL_PATH (default Qwen/Qwen3-1.7B), TRAIN_FILES, VAL_FILES, DEVICE, N_GPUS,
# NNODES, PROJECT, EXPERIMENT, OUTPUT_DIR, BATCH, MICRO_BATCH, MAX_LENGTH, EPOCHS, LR, SP_SIZE.
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_common_args "$@"
detect_device

MODEL_PATH="${MODEL_PATH:-Qwen/Qwen3-1.7B}"
TRAIN_FILES="${TRAIN_FILES:-$CODERL_ROOT/data/sft/train.parquet}"
VAL_FILES="${VAL_FILES:-$CODERL_ROOT/data/sft/validation.parquet}"
EXPERIMENT="${EXPERIMENT:-qwen3-1.7b-toolcall-sft}"
OUTPUT_DIR="${OUTPUT_DIR:-$CODERL_ROOT/checkpoints/sft}"

OVERRIDES=(
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  data.messages_key=messages
  data.tools_key=tools
  "data.train_batch_size=${BATCH:-32}"
  "data.micro_batch_size_per_gpu=${MICRO_BATCH:-1}"
  "data.max_length=${MAX_LENGTH:-16384}"
  data.truncation=right
  "model.path=$MODEL_PATH"
  model.use_remove_padding=True
  model.enable_gradient_checkpointing=True
  engine.strategy=fsdp2
  "engine.ulysses_sequence_parallel_size=${SP_SIZE:-1}"
  "optim.lr=${LR:-1e-5}"
  "trainer.device=$DEVICE"
  "trainer.n_gpus_per_node=$N_GPUS"
  "trainer.nnodes=${NNODES:-1}"
  "trainer.project_name=${PROJECT:-coderl}"
  "trainer.experiment_name=$EXPERIMENT"
  "trainer.default_local_dir=$OUTPUT_DIR"
  "trainer.total_epochs=${EPOCHS:-20}"
  "trainer.logger=[console,file]"
)
OVERRIDES+=("${EXTRA_OVERRIDES[@]}")
export VERL_FILE_LOGGER_PATH="$OUTPUT_DIR/metrics.jsonl"

if [ "$DRY_RUN" = 1 ]; then
  exec "$PYTHON" -m coderl.verl.dryrun sft "${STRICT[@]}" "${OVERRIDES[@]}"
fi
mkdir -p "$OUTPUT_DIR"
exec "$PYTHON" -m torch.distributed.run --standalone --nnodes="${NNODES:-1}" --nproc_per_node="$N_GPUS" \
  -m verl.trainer.sft_trainer "${OVERRIDES[@]}"
