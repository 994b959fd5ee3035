#!/usr/bin/env bash
# Evaluate checkpoints on LiveCodeBench through the sandbox, the way the recipe reports them.
#
#   scripts/eval_livecodebench.sh [--dry-run] PATH [extra `coderl eval lcb` options]
#
# PATH: a Hugging Face model dir (evaluated as step 0), one verl global_step_N dir (merged, then
# evaluated), or a run's checkpoint dir (every global_step_N in it, in order). Each result is
# appended to $RESULTS (step,pass@1,easy,medium,hard) and figures/evaluation_progress.png redrawn.
# Knobs: PROBLEMS (default data/lcb, from `coderl data lcb`), SANDBOX_URL, N (4), TEMPERATURE (0.6),
# TOP_P (0.95), MAX_TOKENS (32768), BACKEND (vllm), OUT_DIR, RESULTS.
set -euo pipefail
source "$(dirname "$0")/common.sh"
usage() { sed -n '2,11p' "$0"; }
DRY_RUN=0; ARGS=()
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) ARGS+=("$arg") ;;
  esac
done
[ "${#ARGS[@]}" -ge 1 ] || { echo "error: PATH is required (see --help)" >&2; exit 2; }
TARGET="${ARGS[0]%/}"; EXTRA=("${ARGS[@]:1}")
[ -e "$TARGET" ] || { echo "error: not found: $TARGET" >&2; exit 2; }
PROBLEMS="${PROBLEMS:-$CODERL_ROOT/data/lcb}"
SANDBOX_URL="${SANDBOX_URL:-http://127.0.0.1:8080}"
OUT_DIR="${OUT_DIR:-$CODERL_ROOT/outputs/eval}"
RESULTS="${RESULTS:-$OUT_DIR/results.csv}"

steps=()
if [ -f "$TARGET/config.json" ]; then steps=("0:$TARGET")
elif [[ "$(basename "$TARGET")" == global_step_* ]]; then steps=("${TARGET##*global_step_}:$TARGET")
else
  for d in $(ls -d "$TARGET"/global_step_* 2>/dev/null | sort -V); do steps+=("${d##*global_step_}:$d"); done
fi
[ "${#steps[@]}" -gt 0 ] || { echo "error: no model or global_step_N checkpoints under $TARGET" >&2; exit 2; }

mkdir -p "$OUT_DIR"
[ -f "$RESULTS" ] || echo "step,pass@1,easy,medium,hard" > "$RESULTS"
for entry in "${steps[@]}"; do
  step="${entry%%:*}"; path="${entry#*:}"
  model="$path"
  if [ ! -f "$path/config.json" ]; then
    model="$path/huggingface_merged"
    [ -f "$model/config.json" ] || { [ "$DRY_RUN" = 1 ] || bash "$CODERL_ROOT/scripts/merge_checkpoint.sh" "$path" "$model"; }
  fi
  cmd=("$PYTHON" -m coderl.cli eval lcb --problems "$PROBLEMS" --out "$OUT_DIR/step_$step" --backend "${BACKEND:-vllm}"
       --model "$model" --sandbox-url "$SANDBOX_URL" --n "${N:-4}" --temperature "${TEMPERATURE:-0.6}"
       --top-p "${TOP_P:-0.95}" --max-tokens "${MAX_TOKENS:-32768}" "${EXTRA[@]}")
  if [ "$DRY_RUN" = 1 ]; then echo "dry-run: step $step: ${cmd[*]}"; continue; fi
  check_sandbox "$SANDBOX_URL"
  "${cmd[@]}"
  "$PYTHON" - "$OUT_DIR/step_$step/summary.json" "$step" "$RESULTS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = s["by_difficulty"]
cell = lambda k: "" if k not in d or d[k]["pass@1"] is None else f'{d[k]["pass@1"]:.2f}'
with open(sys.argv[3], "a") as fh:
    fh.write(f'{sys.argv[2]},{s["overall"]["pass@1"]:.2f},{cell("easy")},{cell("medium")},{cell("hard")}\n')
PY
done
[ "$DRY_RUN" = 1 ] || "$PYTHON" -m coderl.cli plot eval --results "$RESULTS" --out "$CODERL_ROOT/figures/evaluation_progress.png" --with-recipe
