#!/usr/bin/env bash
# Evaluate checkpoints on LiveCodeBench through the sandbox, the way the recipe reports them.
#
#   scripts/eval_livecodebench.sh [--dry-run] PATH [extra `coderl eval lcb` options]
#
# PATH: a Hugging Face model dir (recorded as step $STEP, default 0), one verl global_step_N dir
# (merged with scripts/merge_checkpoint.sh, then evaluated), or a run's checkpoint dir (every
# global_step_N in it, in step order). Each checkpoint's pass@1 goes into $RESULTS (one row per step:
# step,pass@1,easy,medium,hard) and $FIGURE is redrawn. Re-running resumes and replaces rows.
# Knobs: PROBLEMS (data/lcb, from `coderl data lcb`), SANDBOX_URL (http://127.0.0.1:8080; empty:
# an in-process engine), BACKEND (vllm), N (4), TEMPERATURE (0.6), TOP_P (0.95), MAX_TOKENS (32768),
# OUT_DIR (outputs/eval), RESULTS ($OUT_DIR/results.csv), FIGURE ($OUT_DIR/evaluation_progress.png).
set -euo pipefail
source "$(dirname "$0")/common.sh"
parse_path_args pass "$@"
[ "${#ARGS[@]}" -ge 1 ] || { echo "error: PATH is required (see --help)" >&2; exit 2; }
TARGET="${ARGS[0]%/}"; EXTRA=("${ARGS[@]:1}")
[ -e "$TARGET" ] || { echo "error: not found: $TARGET" >&2; exit 2; }
PROBLEMS="${PROBLEMS:-$CODERL_ROOT/data/lcb}"
SANDBOX_URL="${SANDBOX_URL-http://127.0.0.1:8080}"
OUT_DIR="${OUT_DIR:-$CODERL_ROOT/outputs/eval}"
RESULTS="${RESULTS:-$OUT_DIR/results.csv}"
FIGURE="${FIGURE:-$OUT_DIR/evaluation_progress.png}"

steps=()
if [ -f "$TARGET/config.json" ]; then steps=("${STEP:-0}:$TARGET")
elif [[ "$(basename "$TARGET")" == global_step_* ]]; then steps=("${TARGET##*global_step_}:$TARGET")
else
  while IFS= read -r d; do steps+=("${d##*global_step_}:$d"); done \
    < <(find "$TARGET" -mindepth 1 -maxdepth 1 -type d -name 'global_step_*' | sort -V)
fi
[ "${#steps[@]}" -gt 0 ] || { echo "error: no model (config.json) or global_step_N checkpoints under $TARGET" >&2; exit 2; }
[ "$DRY_RUN" = 1 ] || [ -e "$PROBLEMS" ] || { echo "error: problems not found: $PROBLEMS (build them: coderl data lcb)" >&2; exit 2; }
sandbox=()
if [ -n "$SANDBOX_URL" ]; then
  sandbox=(--sandbox-url "$SANDBOX_URL")
  [ "$DRY_RUN" = 1 ] || check_sandbox "$SANDBOX_URL"
fi

failed=()
for entry in "${steps[@]}"; do
  step="${entry%%:*}"; path="${entry#*:}"; model="$path"
  if [ ! -f "$path/config.json" ]; then
    model="$path/huggingface_merged"
    if [ ! -f "$model/config.json" ]; then
      if [ "$DRY_RUN" = 1 ]; then echo "dry-run: step $step: merge: scripts/merge_checkpoint.sh $path $model"
      else bash "$CODERL_ROOT/scripts/merge_checkpoint.sh" "$path" "$model"; fi
    fi
  fi
  cmd=("$PYTHON" -m coderl.cli eval lcb --problems "$PROBLEMS" --out "$OUT_DIR/step_$step" --backend "${BACKEND:-vllm}"
       --model "$model" "${sandbox[@]}" --n "${N:-4}" --temperature "${TEMPERATURE:-0.6}" --top-p "${TOP_P:-0.95}"
       --max-tokens "${MAX_TOKENS:-32768}" "${EXTRA[@]}")
  if [ "$DRY_RUN" = 1 ]; then echo "dry-run: step $step: ${cmd[*]}"; continue; fi
  echo "== step $step: $model"
  # A checkpoint that fails (or keeps sandbox errors) does not stop the others: it is named at the
  # end and the script exits non-zero; its summary is recorded when there is one.
  if ! "${cmd[@]}"; then failed+=("$step"); fi
  if [ -f "$OUT_DIR/step_$step/summary.json" ]; then
    "$PYTHON" -m coderl.cli eval record --summary "$OUT_DIR/step_$step/summary.json" --step "$step" --results "$RESULTS"
  fi
done
[ "$DRY_RUN" = 1 ] && exit 0
[ -f "$RESULTS" ] && "$PYTHON" -m coderl.cli plot eval --results "$RESULTS" --out "$FIGURE" --with-recipe
echo "results: $RESULTS; figure: $FIGURE"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "error: evaluation failed for step(s): ${failed[*]} (see their output above)" >&2
  exit 1
fi
