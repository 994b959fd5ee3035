#!/usr/bin/env bash
# Merge a verl FSDP checkpoint into a Hugging Face model directory (verl.model_merger).
#
#   scripts/merge_checkpoint.sh [--dry-run] CHECKPOINT_DIR [TARGET_DIR]
#
# CHECKPOINT_DIR: an SFT global_step_N dir, or an RL global_step_N dir (its actor/ is used).
# TARGET_DIR defaults to CHECKPOINT_DIR/huggingface_merged.
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_path_args reject "$@"
[ "${#ARGS[@]}" -ge 1 ] || { echo "error: CHECKPOINT_DIR is required (see --help)" >&2; exit 2; }
CKPT="${ARGS[0]%/}"
[ -d "$CKPT/actor" ] && CKPT="$CKPT/actor"
TARGET="${ARGS[1]:-${ARGS[0]%/}/huggingface_merged}"
CMD=("$PYTHON" -m verl.model_merger merge --backend fsdp --local_dir "$CKPT" --target_dir "$TARGET")
if [ "$DRY_RUN" = 1 ]; then
  "$PYTHON" -c "import verl.model_merger" || { echo "error: verl.model_merger is not importable" >&2; exit 1; }
  if ! ls "$CKPT"/model_world_size_*_rank_*.pt >/dev/null 2>&1; then
    echo "dry-run: warning: no model_world_size_*_rank_*.pt shards in $CKPT yet" >&2
  fi
  echo "dry-run: OK: ${CMD[*]}"
  exit 0
fi
[ -d "$CKPT" ] || { echo "error: checkpoint dir not found: $CKPT" >&2; exit 2; }
exec "${CMD[@]}"
